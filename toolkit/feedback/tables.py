"""Notebook ``30_feedback``'s tables, one function each (Xu et al. 2024, Tables 1-3), and the cells
they record under the paper's keys (``data/paper_numbers/iterative_feedback.yaml``)."""
from __future__ import annotations

import re

import pandas as pd

from toolkit.feedback.data import IN_DOMAIN, OFFLINE_SET, OUT_OF_DOMAIN, UNAVAILABLE

PAPER = "iterative_feedback"
KEY = {**IN_DOMAIN, **OUT_OF_DOMAIN, "T-Eval": "teval",       # column label -> the YAML's dataset key
       OFFLINE_SET: "toollens-train"}                         # ours only: the offline feedback (§4.3)


def table1(train_queries: int, train_apis: int, tests: dict) -> pd.DataFrame:
    """Our statistics: # instructions and # tool set per set (T-Eval: tools only, its queries are not public)."""
    rows = [{"set": "Training: ToolLens train (in place of ToolBench train)", "dataset": "toolbench-all",
             "method": "train", "queries": train_queries, "tools": train_apis}]
    for label, ds in tests.items():
        rows.append({"set": f"{'In' if label in IN_DOMAIN else 'Out-of'}-domain: {label}", "dataset": KEY[label],
                     "method": "test", "queries": len(ds.queries), "tools": len(ds.corpus)})
    for label, why in UNAVAILABLE.items():
        rows.append({"set": f"Out-of-domain: {label}", "dataset": KEY[label], "method": "test", "queries": None,
                     "tools": 50, "note": why})
    return pd.DataFrame(rows)


def record_table1(rec, t1: pd.DataFrame) -> None:
    for r in t1.itertuples():
        for metric in ("queries", "tools"):
            v = getattr(r, metric)
            if v is not None and not pd.isna(v):
                rec.add(paper=PAPER, table="1", dataset=r.dataset, method=r.method, metric=metric, value=float(v),
                        note=getattr(r, "note", "") if isinstance(getattr(r, "note", ""), str) else "",
                        ours_only=(r.method, metric) == ("train", "tools"))     # the paper prints no training tool set


METRICS = ["ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10"]


def baseline_values(tests: dict, retrievers: dict, cfg, k: int = 100, llm_qids=None) -> pd.DataFrame:
    """Tables 2/3's baselines: each retriever (``{method: build_retriever(...)}``) on each test set
    (``cfg.baseline_queries`` of it, nested sample), NDCG@1/3/5/10 with ToolBench's tie handling; where
    the LLM methods run on a sample, the same retriever on that sample too (``<method> (LLM sample)``,
    our own rows; ``llm_qids(label)`` gives that sample, default the set's nested sample of
    ``cfg.sample_size``). Columns set, method, metric, n, value, ours_only, per_query (``{qid: value}``, for paired
    tests against the trained rows)."""
    from toolkit.metrics import evaluate
    from toolkit.retrieval import retrieve
    from toolkit.runs import keep
    rows = []
    for method, retriever in retrievers.items():
        for label, full in tests.items():
            ds = full.nested_sample(cfg.baseline_queries, cfg.sample_seed)
            run = retrieve(ds, retriever, k=k)
            keep(label, method, run, ds.qrels, ties="sklearn")
            per_q = evaluate(run, ds.qrels, METRICS, per_query=True, ties="sklearn")
            sample = llm_qids(label) if llm_qids else full.nested_sample(cfg.sample_size(label), cfg.sample_seed).queries
            sample = set(sample) & set(ds.queries)
            for metric, vals in per_q.items():
                rows.append({"set": label, "method": method, "metric": metric, "n": len(vals),
                             "value": sum(vals.values()) / len(vals), "ours_only": False, "per_query": vals})
                if 0 < len(sample) < len(ds.queries):
                    sub = {q: v for q, v in vals.items() if q in sample}  # vals' order: a set's varies per process
                    rows.append({"set": label, "method": f"{method} (LLM sample)", "metric": metric, "n": len(sub),
                                 "value": sum(sub.values()) / len(sub), "ours_only": True, "per_query": sub})
    return pd.DataFrame(rows)


def improve(values: pd.DataFrame, ours: str = "Ours", best_previous: str = "ToolRetriever") -> pd.DataFrame:
    """'% improve': the relative improvement of ours over the best previous method, per cell."""
    w = values.pivot_table(index=["set", "metric"], columns="method", values="value", sort=False)
    if ours not in w or best_previous not in w:
        return pd.DataFrame(columns=["set", "metric", "% improve"])
    return ((w[ours] / w[best_previous] - 1) * 100).rename("% improve").reset_index()


FIRST_RUN = " (first run)"
HEADLINE_ROWS = ("Ours", "% improve")


def headline_values(fair: pd.DataFrame, first: pd.DataFrame, tables=("2", "3")) -> pd.DataFrame:
    """Tables 2-3 leading with the fair LLM step (one number per method across the suite, the one notebook
    50 reads): the fair run's ``Ours`` and ``% improve`` rows under their own names, the first (capped-LLM) run's
    under ``"<row> (first run)"``, every other row of ``first`` as it is. ``fair`` / ``first``:
    :func:`toolkit.feedback.collect.collect`'s long tables."""
    in_first = first.table.isin(tables) & first.method.isin(HEADLINE_ROWS)
    in_fair = fair[fair.table.isin(tables) & fair.method.isin(HEADLINE_ROWS)]
    missing = sorted({(t, m) for t in tables for m in HEADLINE_ROWS} - set(zip(in_fair.table, in_fair.method))
                     & set(zip(first[in_first].table, first[in_first].method)))
    if missing:
        raise ValueError(f"headline_values: the fair LLM step has no {missing} rows; trace them first "
                         "(python -m toolkit.feedback all --fair)")
    renamed = first[in_first].assign(method=lambda d: d.method + FIRST_RUN)
    return pd.concat([in_fair, renamed, first[~in_first]], ignore_index=True)


def record_retrieval(rec, values: pd.DataFrame, table: str, notes: dict[str, str] | None = None) -> None:
    """Cells of Tables 2/3 (our values as fractions); rows on an LLM sample carry its size in the note.
    Table 5's ``seconds_per_instruction`` is the LLM seconds stored in the trace's lines: replayed from a committed
    trace it is a result (checked exactly: an edited trace is a changed number); only the smoke profile, whose traces
    are scratch files made by the run (``data/feedback_traces/smoke-*``, not committed), measures it anew."""
    notes = notes or {}
    for r in values.itertuples():
        note = notes.get(r.method) or (r.note if isinstance(getattr(r, "note", None), str) else "")
        rec.add(paper=PAPER, table=table, dataset=KEY[r.set], method=r.method, metric=r.metric, value=r.value,
                n_queries=int(r.n), note=note, ours_only=bool(getattr(r, "ours_only", False)),
                timing=(rec.profile == "smoke") if r.metric == "seconds_per_instruction" else None)


def sample_notes(values: pd.DataFrame, tests: dict, cfg, train_queries: int | None = None) -> list[str]:
    """Per row of :func:`toolkit.feedback.experiment.collect`: what produced it and on how many of the
    set's queries (the LLM rows run on seeded samples, said in every cell's note); ``train_queries``: the
    size of ToolLens train, for the offline-feedback rows (§4.3)."""
    from toolkit.feedback import experiment as X
    out = []
    for r in values.itertuples():
        # a row of Tables 4, 6, 7 (or, Table 6, its ToolRetriever) names its condition's retriever and change
        conds = X.CONDITIONS.get(getattr(r, "table", None), {})
        label = r.method if r.method in conds else r.method.replace("ToolRetriever", "Ours", 1)
        base, change = cfg.base, ""
        if label in conds:
            base = X.condition(cfg, r.table, label).base
            change = "; condition " + ", ".join(f"{k}={v}" for k, v in X.condition_change(cfg, r.table, label).items())
        full = train_queries if r.set == OFFLINE_SET else len(tests[r.set].queries)
        size = f"{r.n} of {full} queries" + (" (seeded sample)" if r.n < full else "")
        planned = r.planned
        if planned == planned and r.n < planned:          # (NaN-safe) an LLM trace still being generated
            size += f"; partial: {r.n} of the {int(planned)} planned instructions traced so far"
        if r.set == OFFLINE_SET:
            what = (f"{cfg.llm} offline feedback (no iteration prefix), K={cfg.feedback.k}, retrieved by {cfg.base} "
                    f"fine-tuned on ToolLens train (warm-up) -- these are its own training instructions")
        elif r.method.startswith("ToolRetriever + loop"):     # the control, or one LLM of the LLM-scale rows
            llm = r.method[len("ToolRetriever + loop ("):-1] if r.method.endswith(")") else cfg.llm
            what = (f"{llm} loop with the fair LLM step, K={cfg.feedback.k}, T={cfg.training.rounds}, on {base} "
                    f"fine-tuned on ToolLens train (warm-up), no feedback training, no prefix")
        elif r.method.startswith("ToolRetriever"):
            what = f"{base} fine-tuned on ToolLens train (warm-up)"
        elif r.method.startswith("Oracle feedback"):
            on = "the warm-up retriever, no prefix" if "ToolRetriever" in r.method else f"Ours' retriever ({base})"
            what = (f"oracle refinements (each gold API's name and first description sentence), K={cfg.feedback.k}, "
                    f"T={cfg.training.rounds}, on {on}")
        elif r.method == "Same steps, no feedback":
            what = (f"retriever {base}: Ours' steps, hard negatives and schedule from the warm-up, every round's "
                    f"instruction the original one (no feedback text), 'Iteration 0' instructions, no loop")
        elif r.method == "Ours (T=0)":
            what = f"retriever {base} after iteration-aware training, 'Iteration 0' instructions, no feedback yet"
        else:
            what = f"{cfg.llm} feedback, K={cfg.feedback.k}, T={cfg.training.rounds}, retriever {base}"
        out.append(f"{what}{change}; {size}")
    return out


def condition_table(values: pd.DataFrame, table: str, metrics: list[str]):
    """One of Tables 4-7 (or a table of ours): method rows x metric columns with n, through the suite's formatter
    (:func:`toolkit.report.format_table`: metrics x100 with one decimal, seconds as they are)."""
    from toolkit.report import format_table
    v = values[values.table == table]
    w = v.pivot_table(index="method", columns="metric", values="value", sort=False)
    cols = [m for m in metrics if m in w]
    return format_table(w[cols].join(v.groupby("method", sort=False)["n"].first()),
                        metrics=[c for c in cols if c != "seconds_per_instruction"])


# --------------------------------------------------------------------------------------------
# The paper's claims (§5.2-5.3), read off a run's values or the paper's own tables
# --------------------------------------------------------------------------------------------

def _cell(values: pd.DataFrame, table: str, label: str, method: str, metric: str):
    v = values[(values.table == table) & (values.set == label) & (values.method == method) & (values.metric == metric)]
    return v.iloc[0] if len(v) else None


def _complete(c) -> bool:
    """the row holds its whole LLM sample (a trace still being generated gives rows with n < planned)"""
    return not ("planned" in c.index and "n" in c.index and c.n < c.planned)


def paired_test(values: pd.DataFrame, table: str, label: str, a: str, b: str, metric: str = "ndcg@5"):
    """The paired randomization test (:func:`toolkit.significance.compared`) of rows ``a`` vs ``b`` of ``table`` on
    ``label``; None unless both are complete and carry per-query values on the same queries."""
    from toolkit.significance import compared
    ca, cb = _cell(values, table, label, a, metric), _cell(values, table, label, b, metric)
    if ca is None or cb is None or "per_query" not in values or not (_complete(ca) and _complete(cb)):
        return None
    pa, pb = ca.get("per_query"), cb.get("per_query")
    if not isinstance(pa, dict) or not isinstance(pb, dict) or set(pa) != set(pb) or not pa:
        return None
    return compared(f"{a} vs {b}{' ' + label if label != 'I2' or table in '23' else ''}", pa, pb)


def gain_difference_test(values: pd.DataFrame, table: str, set1: str, set2: str, a: str, b1: str, b2: str,
                         metric: str = "ndcg@5"):
    """Is row ``a``'s relative gain over the baseline larger on ``set2`` than on ``set1``
    (:func:`toolkit.significance.relative_gain_difference`; ``b1`` / ``b2``: the baseline row on each set)?
    The claims table's record (comparison, n, mean_a = set 2's gain, mean_b = set 1's, diff, p), or None unless
    all four rows are complete and carry per-query values on their set's common queries and the baseline scores
    above 0 on each set."""
    from toolkit.significance import as_record, relative_gain_difference, relative_gain_undefined
    pq = []
    for label, row in ((set1, a), (set1, b1), (set2, a), (set2, b2)):
        c = _cell(values, table, label, row, metric)
        if c is None or "per_query" not in values or not _complete(c) or not isinstance(c.get("per_query"), dict):
            return None
        pq.append(c.get("per_query"))
    if set(pq[0]) != set(pq[1]) or set(pq[2]) != set(pq[3]) or not pq[0] or not pq[2]:
        return None
    if relative_gain_undefined(pq[1], pq[3]):
        return None                      # a baseline at 0 on a set: no relative gain (Table 2's % improve is NaN)
    return as_record(f"% improve of {a} {set2} vs {set1}", relative_gain_difference(*pq))


CLAIM_KEYS = ("every group", "gain I2 > I1", "out-of-domain", "rounds", "round cost", "ablations", "same base",
              "roberta > bert", "dim 768")


def claims(values: pd.DataFrame, metric: str = "ndcg@5", controls: dict | None = None, condition: str = "",
           alpha: float = 0.05) -> pd.DataFrame:
    """The paper's claims, one row each, judged by :func:`toolkit.claims.record` (held / not held / within noise,
    pending while a row it rests on is missing or its trace is still being generated: n < planned; the reading gives
    such rows' values with their n), from :func:`toolkit.feedback.experiment.collect`'s long table (columns table,
    set, method, metric, value, and ``per_query`` for the paired tests; without it, e.g. the paper's printed
    tables, by direction):

    1. feedback beats the fine-tuned retriever on every in-domain group (Table 2; on the LLM sample);
    2. its gain is larger on multi-tool I2 than on single-tool I1 (Table 2's % improve, §5.2);
    3. it beats the fine-tuned retriever out-of-domain, UltraTool (Table 3);
    4. ``metric`` rises with every round (Table 5, finding 1);
    5. each further round costs fewer extra LLM seconds per instruction (Table 5, finding 2; by direction);
    6. removing warm-up, hard negatives, or the joint loss with hard negatives lowers ``metric`` (Table 4);
    7. feedback beats the fine-tuned retriever of the same base with both base models (Table 6, §5.3: "still
       achieves significant improvement over the baseline with the same RoBERTa model");
    8. the RoBERTa-class base beats the BERT-class one (Table 6; mpnet vs MiniLM here; decided on Ours, the two
       ToolRetrievers' comparison shown in the evidence);
    9. embedding size 768 is the best of Table 7's sizes (768 against the best other size).

    Column ``p``: the two-sided randomization p-value (:mod:`toolkit.significance`) of each paired comparison a
    verdict rests on; ``tests``: the same comparisons as data. ``controls``: claim key (:data:`CLAIM_KEYS`) ->
    ``(control rows, conclusion)`` (:func:`claim_controls`); ``condition``: what differs from the paper
    (:func:`condition_of`)."""
    from toolkit.claims import record
    out = []
    controls = controls or {}
    has_pq = "per_query" in values

    def cell(table, label, method, what=metric):
        return _cell(values, table, label, method, what)

    def val(table, label, method, what=metric):
        c = cell(table, label, method, what)
        return None if c is None or pd.isna(c.value) or not _complete(c) else float(c.value)

    def p_of(table, label, a, b):
        return paired_test(values, table, label, a, b, metric) if has_pq else None

    def row(key, claim, evidence, pairs, tests=(), pending=False, unit=""):
        tests = [t for t in tests if t]
        if has_pq and len(tests) < len(pairs) and not pending and tests:
            tests = []          # a comparison without its test: the claim falls back to direction as a whole
        ctl, conclusion = controls.get(key, ((), ""))
        out.append(record(claim, tests, pairs, evidence, condition=condition, controls=ctl, conclusion=conclusion,
                          pending=pending or any(None in p for p in pairs), alpha=alpha, key=key, unit=unit))

    def baseline(table, label):
        """the fine-tuned retriever on Ours' queries"""
        return "ToolRetriever (LLM sample)" if cell(table, label, "ToolRetriever (LLM sample)") is not None \
            else "ToolRetriever"

    def fmt(x):
        return "pending" if x is None else f"{x:.3f}"

    groups = ("I1", "I2", "I3")
    pairs = {g: (val("2", g, "Ours"), val("2", g, baseline("2", g))) for g in groups}
    row("every group", f"feedback beats the fine-tuned retriever on every in-domain group ({metric}, Table 2)",
        "; ".join(f"{g}: Ours {fmt(o)} vs ToolRetriever {fmt(t)}" for g, (o, t) in pairs.items()),
        list(pairs.values()), [p_of("2", g, "Ours", baseline("2", g)) for g in groups])
    gain = {g: val("2", g, "% improve") for g in ("I1", "I2")}
    row("gain I2 > I1", f"the gain is larger on multi-tool I2 than on single-tool I1 (% improve {metric}, Table 2)",
        "; ".join(f"{g} {'pending' if x is None else f'{x:+.1%}'}" for g, x in gain.items()),
        [(gain["I2"], gain["I1"])],
        [gain_difference_test(values, "2", "I1", "I2", "Ours", baseline("2", "I1"), baseline("2", "I2"), metric)
         if has_pq else None])
    o, t = val("3", "UltraTool", "Ours"), val("3", "UltraTool", baseline("3", "UltraTool"))
    row("out-of-domain", f"feedback beats the fine-tuned retriever out-of-domain (UltraTool {metric}, Table 3)",
        f"Ours {fmt(o)} vs ToolRetriever {fmt(t)}", [(o, t)], [p_of("3", "UltraTool", "Ours", baseline("3", "UltraTool"))])
    # the paper's rows T = 1..3 (not our T=0 and stopping-rule rows)
    rounds = sorted({m for m in values[values.table == "5"].method if re.fullmatch(r"Ours \(T=[1-9]\d*\)", m)},
                    key=lambda m: int(m.split("T=")[1].rstrip(")")))
    r = [val("5", "I2", m) for m in rounds]
    row("rounds", f"{metric} rises with every round (Table 5)",
        " → ".join(f"{m.split('(')[1].rstrip(')')} {fmt(x)}" for m, x in zip(rounds, r)) or "no round yet",
        list(zip(r[1:], r)) if len(r) >= 2 else [(None, None)],
        [p_of("5", "I2", b, a) for a, b in zip(rounds, rounds[1:])])
    sec = [val("5", "I2", m, "seconds_per_instruction") for m in rounds]
    extra = [b - a for a, b in zip([0.0] + sec, sec)] if sec and None not in sec else []
    row("round cost", "each further round costs fewer extra LLM seconds per instruction (Table 5)",
        " → ".join(f"+{x:.2f}s" for x in extra) or "no round yet",
        list(zip(extra, extra[1:])) if len(extra) >= 2 else [(None, None)], unit="seconds")
    abl = {m: val("4", "I2", m) for m in ("w/o warm-up", "w/o hard-negative", "w/o joint & hard-neg")}
    ours4 = val("4", "I2", "Ours")
    row("ablations", f"removing warm-up, hard negatives, or joint loss and hard negatives lowers {metric} (Table 4)",
        f"Ours {fmt(ours4)}; " + ", ".join(f"{m} {fmt(x)}" for m, x in abl.items()),
        [(ours4, x) for x in abl.values()], [p_of("4", "I2", "Ours", m) for m in abl])
    bases = ("BERT", "RoBERTa")
    per_base = {x: (val("6", "I2", f"Ours ({x}-based)"), val("6", "I2", f"ToolRetriever ({x}-based)")) for x in bases}
    row("same base", f"feedback beats the fine-tuned retriever of the same base, with both bases (Table 6, {metric})",
        "; ".join(f"{x}-class: Ours {fmt(o)} vs ToolRetriever {fmt(t)}" for x, (o, t) in per_base.items()),
        list(per_base.values()),
        [p_of("6", "I2", f"Ours ({x}-based)", f"ToolRetriever ({x}-based)") for x in bases])
    # decided on Ours (the paper's text); the two ToolRetrievers, fine-tuned without feedback, are evidence beside it
    b, rb = val("6", "I2", "Ours (BERT-based)"), val("6", "I2", "Ours (RoBERTa-based)")
    tr = p_of("6", "I2", "ToolRetriever (RoBERTa-based)", "ToolRetriever (BERT-based)")
    row("roberta > bert", f"the RoBERTa-class base beats the BERT-class one (Table 6; here mpnet vs MiniLM, {metric})",
        "; ".join(f"{who}: BERT-class {fmt(val('6', 'I2', f'{who} (BERT-based)'))}, RoBERTa-class "
                  f"{fmt(val('6', 'I2', f'{who} (RoBERTa-based)'))}" for who in ("Ours", "ToolRetriever"))
        + (f"; ToolRetriever RoBERTa- vs BERT-class {tr['diff']:+.3f} (p={tr['p']:.3f})" if tr else ""),
        [(rb, b)], [p_of("6", "I2", "Ours (RoBERTa-based)", "Ours (BERT-based)")])
    # 768 against the best other size (a tie is within noise, never "best"); pending until every size is traced
    from toolkit.feedback.experiment import CONDITIONS
    d768 = "Ours (dim=768)"
    sizes = {m: val("7", "I2", m) for m in CONDITIONS["7"]}
    known = {m: x for m, x in sizes.items() if x is not None}
    rival = max((m for m in known if m != d768), key=known.get) if d768 in known and len(known) > 1 else None
    row("dim 768", f"embedding size 768 is the best of Table 7's sizes ({metric})",
        ", ".join(f"{m.split('=')[1].rstrip(')')} {fmt(x)}" for m, x in sizes.items()),
        [(known.get(d768), known[rival] if rival else None)], [p_of("7", "I2", d768, rival)] if rival else [],
        pending=len(known) < len(sizes))
    cols = ["claim", "here", "basis", "evidence", "p", "tests", "main", "ours", "ci", "condition", "explained_by",
            "key", "unit"]
    return pd.DataFrame(out, columns=cols)


def condition_of(llm: str, setup: str) -> str:
    """What differs from the paper in the component the claims rest on: the feedback LLM (``llm``, a
    :mod:`toolkit.llm.models` name) and its step (``setup``), against the paper's gpt-3.5-turbo-0125."""
    from toolkit.llm import models
    try:
        m = models.lookup(llm)
        name = f"{m.hf_id.split('/')[-1]} {m.model_id.rsplit('-', 1)[-1].upper()}"
    except Exception:          # not a registered model (an echo stand-in, a server's model name): its own name
        name = llm
    return f"LLM {name}, {setup} (paper: gpt-3.5-turbo-0125); retriever MiniLM (paper: BERT-base)"


def claim_controls(decomposition: list[dict], llm_scale: list[dict] | None = None, metric: str = "ndcg@5",
                   alpha: float = 0.05) -> dict[str, tuple[list[dict], str]]:
    """The control rows that can account for each claim of :func:`claims` (key of :data:`CLAIM_KEYS`) ->
    ``(rows, conclusion)``, read from the notebook's paired decompositions (``decomposition``:
    :func:`toolkit.feedback.controls.decomposition` records of the setup's traces, per set) and the LLM-scale
    comparisons on the I2 sample (``llm_scale``, fair LLM step):

    - the **oracle** in the same loop (the ceiling of good feedback with this retriever) and the **larger LLM
      minus the next smaller** one: both positive and resolved (p < ``alpha``) -> "LLM-limited";
    - the **loop part** (Ours - Ours (T=0)) and **training part** (Ours (T=0) - ToolRetriever) of the gap, per set.

    A claim with no control of its own (the round cost, the bases, the sizes) gets none: "not explained"."""
    from toolkit.claims import control
    rows = [r for r in (decomposition or []) if r.get("metric") == metric]
    scale = [r for r in (llm_scale or []) if r.get("metric") == metric]

    def part(name, s):
        r = next((r for r in rows if r["part"] == name and r["set"] == s), None)
        return None if r is None else control(f"{name} ({s})", r["diff"], r["p"], r["n"])

    oracle = next((r for r in scale if r["part"].startswith("oracle - ToolRetriever")), None)
    steps = [r for r in scale if " - loop" not in r["part"] and not r["part"].startswith(("oracle", "loop"))]
    llm = ([control(f"oracle feedback - ToolRetriever, same loop ({oracle['set']})", oracle["diff"], oracle["p"],
                    oracle["n"])] if oracle else []) + \
          [control(f"LLM {r['part']} ({r['set']})", r["diff"], r["p"], r["n"]) for r in steps]
    limited = bool(oracle and steps and oracle["diff"] > 0 and oracle["p"] < alpha
                   and any(r["diff"] > 0 and r["p"] < alpha for r in steps))
    why = "LLM-limited (good feedback helps, a larger LLM helps)" if limited else ""
    loop_train = {s: [part("loop part", s), part("training part", s)] for s in ("I1", "I2", "I3", "UltraTool")}
    return {
        "every group": ([*llm, *loop_train["I1"], *loop_train["I2"], *loop_train["I3"]], why),
        "gain I2 > I1": ([*llm, *loop_train["I1"], *loop_train["I2"]], why),
        "out-of-domain": ([*llm, *loop_train["UltraTool"]], why),
        "rounds": ([*llm, part("loop part", "I2")], why),
        "ablations": ([part("training part", "I2")], ""),
        "same base": (llm, why),
    }


def claims_by_setup(setups: dict[str, pd.DataFrame], paper: pd.DataFrame | None = None,
                    metric: str = "ndcg@5", controls: dict[str, dict] | None = None,
                    conditions: dict[str, str] | None = None) -> pd.DataFrame:
    """:func:`claims` judged on each setup's values (``{"fair LLM": values, "capped LLM": values}``, each
    :func:`toolkit.feedback.collect.collect`'s long table): one row per claim and setup, a claim's rows together in
    the setups' order, so a reader sees what changed. ``paper``: the paper's own values (:func:`paper_values`), judged
    by direction, whose verdict and main difference fill ``paper`` and ``paper_number``. ``controls`` /
    ``conditions``: per setup, :func:`claim_controls` and :func:`condition_of`. The first setup is the headline
    (``headline`` True: the suite's counts read it)."""
    from toolkit.claims import with_paper
    if not setups:
        raise ValueError("claims_by_setup needs at least one setup's values")
    on_paper = claims(paper, metric).to_dict("records") if paper is not None else None
    frames = []
    for i, (name, values) in enumerate(setups.items()):
        rows = claims(values, metric, (controls or {}).get(name), (conditions or {}).get(name, "")).to_dict("records")
        rows = with_paper(rows, on_paper) if on_paper is not None else [{**r, "paper": "", "paper_number": None}
                                                                         for r in rows]
        frames.append(pd.DataFrame(rows).assign(setup=name, headline=i == 0, order=lambda d: range(len(d))))
    out = pd.concat(frames, ignore_index=True).sort_values("order", kind="stable")
    return out.drop(columns="order").reset_index(drop=True)


def judged_claims(fair_values: pd.DataFrame, capped_values: pd.DataFrame, paper_numbers: pd.DataFrame, llm: str,
                  fair_decomposition: list[dict], capped_decomposition: list[dict], llm_scale: list[dict],
                  metric: str = "ndcg@5") -> pd.DataFrame:
    """Notebook 30's claims cell: :func:`claims_by_setup` on the fair LLM step (the headline) and the capped first
    run, each with its condition (:func:`condition_of`) and controls (:func:`claim_controls`), beside the paper's
    printed Tables 2-7 (:func:`paper_values`)."""
    setups = {"fair LLM": fair_values, "capped LLM": capped_values}
    return claims_by_setup(setups, paper_values(paper_numbers), metric,
                           controls={"fair LLM": claim_controls(fair_decomposition, llm_scale, metric),
                                     "capped LLM": claim_controls(capped_decomposition, llm_scale, metric)},
                           conditions={"fair LLM": condition_of(llm, "fair LLM step (answers held by their caps)"),
                                       "capped LLM": condition_of(llm, "first run, answers cut at tight caps")})


def paper_values(paper_numbers: pd.DataFrame) -> pd.DataFrame:
    """The paper's Tables 2-7 (``load_paper_numbers("iterative_feedback")``) in :func:`claims`' long format."""
    label = {v: k for k, v in KEY.items()}
    p = paper_numbers[paper_numbers.table.isin(["2", "3", "4", "5", "6", "7"])]
    rows = [{"table": r.table, "set": label.get(r.dataset, r.dataset), "method": r.method, "metric": r.metric,
             "value": float(r.value)} for r in p.itertuples()]
    return pd.DataFrame(rows)


def signed(x: float, digits: int = 3) -> str:
    """``x`` with its sign, rounded first: a difference that rounds to zero prints "+0.000", not "-0.000"."""
    return f"{round(x, digits) + 0.0:+.{digits}f}"


def condition_rounds_text(rows: pd.DataFrame, rounds: int, table: str = "4") -> str:
    """:func:`toolkit.feedback.experiment.condition_rounds` in words. Each row: NDCG@5 at round 0 -> after round
    ``rounds`` (the loop's change; its n where smaller than the others'; round 0 against Ours' with its p). Then,
    for ``table``'s ablations, what separates its rows: the trainings, if a round-0 difference is significant
    (p < 0.05); else the loop, if the loop's changes spread wider than the round-0 differences; else neither."""
    from toolkit.significance import p_text
    if rows.empty:
        return ""
    text = "; ".join(
        f"{c.method} {c['round 0']:.3f} → {c[f'round {rounds}']:.3f} ({signed(c.loop)}"
        + (f", n = {c.n}" if c.n < rows.n.max() else "")
        + ("" if pd.isna(c.p) else f"; round 0 vs Ours {signed(c['round 0 vs Ours'])}, "
                                   f"{p_text([{'comparison': '', 'p': c.p}]).strip()}") + ")"
        for _, c in rows.iterrows()) + "."
    own = rows[rows.table == table]
    abl = own[own.p.notna()]
    if abl.empty:
        return text
    sig, r0, loop = abl[abl.p < 0.05], abl["round 0 vs Ours"], own.loop
    end = ("the ablated trainings change the retriever for " + ", ".join(sig.method) if len(sig) else
           f"what separates Table {table}'s rows is what the loop did, not the retriever each training gave"
           if loop.max() - loop.min() > r0.max() - r0.min() else "")
    return (text + f" Before any feedback, the ablations' retrievers differ from Ours' by {signed(r0.min())} to "
            f"{signed(r0.max())} (p = {abl.p.min():.2f} to {abl.p.max():.2f}); the loop moved Table {table}'s rows by "
            f"{signed(loop.min())} to {signed(loop.max())}" + (f": {end}." if end else "."))
