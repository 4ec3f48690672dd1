"""Notebook 40's reading: prose whose numbers are looked up in the run (moved out of the notebook, so the
notebook shows one call and its prose, in Lab and in any renderer)."""
from __future__ import annotations

import pandas as pd

from toolkit.querygen import bounds as B
from toolkit.querygen import tables as T


def bounds_reading(*, bound_values, s, values, gaps, cfg) -> str:
    """The reading of notebook 40 (markdown): the bounds: oracle queries, Copy the utterance, the oracle descriptions and the share of the gap closed. Each parameter is the notebook variable of that name
    (``toolkit.report.reading_cell``)."""
    def _copy_diff(ds_name):
        """largest per-request difference between Copy the utterance and the utterance baseline on the sample"""
        a, b = (d[(d.dataset == ds_name) & (d.method == m) & d.utterance & (d["sample"] == "llm")].set_index("metric").per_query
                for d, m in ((bound_values, B.COPY), (values, "Utterance")))
        return max(abs(a[m][q] - b[m][q]) for m in a.index for q in a[m])


    oracle = bound_values[(bound_values.method == B.ORACLE) & bound_values.utterance]
    oracle_min = float(oracle.value.min())
    copy_diff = max(_copy_diff(n) for n in s.llm_tests)
    bound_lines = [
        (f"*Oracle queries* score {oracle_min:.3f} on every metric and test set (the lowest of its "
         f"{len(oracle)} cells): 1 by construction, as said above; the gaps below are therefore also given to "
         f"*{B.ORACLE_DESCRIPTIONS}*." if oracle_min == 1.0 else
         f"*Oracle queries* fall below 1 (lowest cell {oracle_min:.3f}): some gold index text does not retrieve its "
         "own API first (two APIs sharing an index text, say)."),
        (f"*Copy the utterance* differs from the utterance baseline on the sample by at most {copy_diff:.3g} per request "
         "and metric" + (": the same retrieval, as it must be." if copy_diff == 0 else ".")),
        "*{}* reach {}; {}.".format(
            B.ORACLE_DESCRIPTIONS,
            " and ".join(f"Recall@5 {T.sample_value(bound_values, B.ORACLE_DESCRIPTIONS, n):.3f} / MMRR "
                         f"{T.sample_value(bound_values, B.ORACLE_DESCRIPTIONS, n, 'mmrr@' + str(cfg.list_size)):.3f} "
                         f"{n.split('-', 1)[1]}" for n in s.llm_tests),
            " and ".join(f"{miss} of the {n_gold} gold APIs {n.split('-', 1)[1]}" for n, (n_gold, miss) in
                         ((n, B.not_first(s.index, ds, s.split.corpus)) for n, ds in s.llm_tests.items()))
            + " are not retrieved first by their own description (it retrieves another API first)"),
        "Share of the gap closed (method − copy) / (ceiling − copy), same requests:"]
    for ceiling in (B.ORACLE_DESCRIPTIONS, B.ORACLE):
        bound_lines.append(f"\n*to {ceiling}*:\n" + "\n".join(T.gap_reading(gaps, ceiling)))
    return "\n\n".join(bound_lines)


def reading(*, al, abl_cost, gaps, values, f4, abl_deltas, generators, t2, cfg, align_it, complete, s) -> str:
    """The reading of notebook 40 (markdown): the utterance against each method, the alignment rewards, Table 2, the ablations, the gaps, calibration and scale. Each parameter is the notebook variable of that name
    (``toolkit.report.reading_cell``)."""
    def _v(dataset, method, metric, sample="all"):
        m = values[(values.dataset == dataset) & (values.method == method) & values.utterance & (values.metric == metric)]
        if method.startswith("Utterance"):
            m = m[m["sample"] == sample]
        return float(m.value.iloc[0]) if len(m) else None


    lines = []
    r5 = "recall@5"
    for ds_name, label in [("querygen-in-domain", "in-domain"), ("querygen-out-of-domain", "out-of-domain")]:
        u_all, u_llm = _v(ds_name, "Utterance", r5), _v(ds_name, "Utterance", r5, "llm")
        line = f"- **{label}**: utterance Recall@5 {u_all:.3f} on all {len(s.tests[ds_name].queries)} requests"
        for method, source, n in [(g.method, g.method, len(g.queries.get(ds_name, {}))) for g in generators] + [
                ("Alignment", f"Alignment it{align_it}", len(al.iterations.get(align_it, {}).get(ds_name, {})))]:
            v, u = _v(ds_name, method, r5), u_llm
            if n < len(s.llm_tests[ds_name].queries):   # a partial method: the utterance on exactly its requests
                u = _v(ds_name, f"Utterance (same {n} requests as {source})", r5, "llm")
            if v is not None and u is not None:
                line += (f"; on the {n}-request sample, utterance {u:.3f} vs {method} {v:.3f} ({v - u:+.3f})")
        lines.append(line)
    if al.history:
        means = [h["mean"] for h in al.history]
        rising = all(b > a for a, b in zip(means, means[1:]))
        lines.append(f"- **alignment rewards** (mean MMRR of the drafts per iteration): "
                     + " → ".join(f"{m:.3f}" for m in means)
                     + (f" ({'rising at every iteration' if rising else 'not monotonic'}"
                        f"{'' if len(means) >= cfg.align.iterations else f' so far, {len(means)} of {cfg.align.iterations}'})"
                        if len(means) > 1 else " (one iteration so far: no trend yet)"))
    if len(f4) and "querygen-out-of-domain" in f4:
        ood = f4["querygen-out-of-domain"].reindex(sorted(al.iterations))
        lines.append(f"- **out-of-domain Recall@5 per iteration** (complete iterations: {complete or 'none'}): "
                     + " → ".join("pending" if it not in complete else f"{v:.3f}" for it, v in ood.items())
                     + (f"; best at iteration {align_it} of the {len(complete)} complete" if len(complete) > 1 else ""))
    from toolkit.compare import load_paper_numbers
    pn = load_paper_numbers("querygen").query("table == '1' and metric == 'recall@5'").set_index(["dataset", "method"]).value
    pn2 = load_paper_numbers("querygen").query("table == '2' and metric == 'delta_recall@5'").set_index(["dataset", "method"]).value
    for ds_name, label in [("querygen-in-domain", "in-domain"), ("querygen-out-of-domain", "out-of-domain")]:
        d = t2[(t2.dataset == ds_name) & (t2.metric == "delta_recall@5")].set_index("method").delta if len(t2) else []
        if len(d):
            lines.append(f"- **without the utterance, {label}** (Table 2), Recall@5 change: " + ", ".join(
                f"{m} {v:+.3f} (paper {pn2.get((ds_name, m + ' (-utt)'), float('nan')):+.3f})" for m, v in d.items()))
    lines += T.ablation_reading(pd.concat(abl_deltas), abl_cost)
    lines += T.gap_reading(gaps, B.ORACLE_DESCRIPTIONS, prefix=f"gap from Copy the utterance to {B.ORACLE_DESCRIPTIONS}, ")
    claim = (f"The paper finds zero-shot generation *below* the utterance in-domain (Recall@5 "
             f"{pn['querygen-in-domain', 'Zero-Shot']:.3f} vs {pn['querygen-in-domain', 'Utterance']:.3f}) and out-of-domain "
             f"({pn['querygen-out-of-domain', 'Zero-Shot']:.3f} vs {pn['querygen-out-of-domain', 'Utterance']:.3f}), "
             f"SFT best in-domain ({pn['querygen-in-domain', 'SFT']:.3f}) and alignment best out-of-domain "
             f"({pn['querygen-out-of-domain', 'Alignment']:.3f}).")
    cal_lines = [f"{g.method} calibration picked T = {g.temperature}" if g.calibrated
                 else f"{g.method} calibration is incomplete (see pending)"
                 + (f"; its rows use T = {g.temperature} meanwhile" if g.temperature is not None and g.queries else "")
                 for g in generators]
    paper_drafts = int(load_paper_numbers("querygen").query("table == '3' and method == 'Baseline' and metric == 'n_drafts'")
                       .value.iloc[0])
    scale = (f"Scale, which bounds what this run can confirm: the generators are {cfg.generator_base} fine-tuned on 2 CPU "
             f"cores (the paper: a 13B model on GPUs); SFT sees {cfg.sft_train_requests} training requests, alignment "
             f"{cfg.align.train_size} requests x {cfg.align.n_drafts} drafts per iteration (the paper's baseline filter "
             f"samples {paper_drafts} drafts per request) for {cfg.align.iterations} iterations; every LLM row is read on "
             f"{cfg.test_requests} requests per test set, so differences of a few hundredths of Recall@5 are often within "
             f"noise: the claims table below gives the randomization p-value of each comparison a verdict rests on.")
    return claim + "\n\nHere:\n" + "\n".join(lines) + "\n\n" + "; ".join(cal_lines) + ".\n\n" + scale
