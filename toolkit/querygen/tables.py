"""Notebook ``40_querygen``'s tables, one function each, from the long table of
:func:`toolkit.querygen.experiment.evaluate_conditions` (columns dataset, method, utterance, sample,
metric, value, n). :func:`record` turns them into result cells under the paper's keys
(``data/paper_numbers/querygen.yaml``).
"""
from __future__ import annotations

import pandas as pd

PAPER = "querygen"
METHODS = ("Utterance", "Zero-Shot", "SFT", "Alignment")


def paper_metric(metric: str) -> str:
    """Our metric name -> the paper's key: MMRR and MAP are printed without their cut-off."""
    kind = metric.split("@")[0]
    return kind if kind in ("mmrr", "map") else metric


def main_rows(values: pd.DataFrame) -> pd.DataFrame:
    """Table 1's conditions: every method with the utterance appended; the utterance baseline on the
    whole test set (the LLM rows are on the ``test_requests`` sample, see ``sample_rows``)."""
    v = values[values.utterance]
    base = v[(v.method == "Utterance") & (v["sample"] == "all")]
    gen = v[v.method.isin(METHODS[1:])]
    return pd.concat([base, gen])


def table1(values: pd.DataFrame) -> pd.DataFrame:
    """Table 1: metric rows x (test set, method) columns, ours."""
    t = main_rows(values).assign(metric=lambda d: d.metric.map(paper_metric))
    wide = t.pivot_table(index="metric", columns=["dataset", "method"], values="value", sort=False)
    order = [m for m in ["mmrr", "map", "recall@3", "recall@5", "recall@11"] if m in wide.index]
    cols = [(d, m) for d in dict.fromkeys(t.dataset) for m in METHODS if (d, m) in wide.columns]
    return wide.loc[order, cols]


def sample_rows(values: pd.DataFrame) -> pd.DataFrame:
    """The utterance baseline on the LLM sample beside the LLM methods (same requests)."""
    v = values[values.utterance & (values["sample"] == "llm")]
    return v.pivot_table(index=["dataset", "method"], columns="metric", values="value", sort=False)


def table2(values: pd.DataFrame) -> pd.DataFrame:
    """Table 2 (App. B.1): each generating method without the utterance minus with it, same requests."""
    v = values[values.method.isin(METHODS[1:])]
    w = v.pivot_table(index=["dataset", "method", "metric"], columns="utterance", values="value", sort=False)
    if True not in w or False not in w:
        return pd.DataFrame(columns=["dataset", "method", "metric", "delta"])
    d = (w[False] - w[True]).rename("delta").reset_index()
    d["metric"] = "delta_" + d.metric.map(paper_metric)
    return d


def calibration_table(calibrations: dict[str, dict], needed: int | None = None) -> pd.DataFrame:
    """Recall@5 on the dev sample per temperature (rows) and method (columns). With ``needed`` (the
    dev sample size), a temperature not yet answered on every request is left blank, not scored on
    the few it has."""
    cols = {}
    for m, c in calibrations.items():
        cols[m] = pd.Series({t: (v if needed is None or c["n"].get(t, 0) >= needed else float("nan"))
                             for t, v in c["scores"].items()}, dtype=float)
    t = pd.DataFrame(cols)
    t.index.name = "temperature"
    return t


def data_table(split_stats: dict) -> pd.DataFrame:
    """Our split (§4.1 protocol on ToolLens); the paper's sizes were lost in the text."""
    rows = [("APIs kept (of %d)" % split_stats["apis_before_filter"], split_stats["apis"]),
            ("tools", split_stats["tools"]),
            ("in-domain APIs / tools", f"{split_stats['in_domain_apis']} / {split_stats['in_domain_tools']}"),
            ("out-of-domain APIs / tools", f"{split_stats['out_of_domain_apis']} / {split_stats['out_of_domain_tools']}"),
            ("training requests", split_stats["train_requests"]),
            ("dev requests (calibration pool)", split_stats["dev_requests"]),
            ("in-domain test requests", split_stats["in-domain_requests"]),
            ("out-of-domain test requests", split_stats["out-of-domain_requests"]),
            ("dropped: a gold API filtered out", split_stats["dropped_api_filtered"]),
            ("dropped: gold APIs on both sides", split_stats["dropped_straddling"]),
            ("dropped: too many gold APIs", split_stats["dropped_too_many_gold"])]
    return pd.DataFrame(rows, columns=["", "ours"]).set_index("")


def record(rec, values: pd.DataFrame, notes: dict[str, str] | None = None) -> None:
    """Table 1 and Table 2 cells under the paper's keys; the sample baselines as our own rows."""
    notes = notes or {}
    for r in main_rows(values).itertuples():
        rec.add(paper=PAPER, table="1", dataset=r.dataset, method=r.method, metric=paper_metric(r.metric),
                value=r.value, n_queries=r.n, note=notes.get(r.method, ""))
    for r in values[(values.method != "Utterance") & values.method.str.startswith("Utterance")
                    | ((values.method == "Utterance") & (values["sample"] == "llm"))].itertuples():
        method = r.method if r.method != "Utterance" else "Utterance (LLM sample)"
        rec.add(paper=PAPER, table="1", dataset=r.dataset, method=method, metric=paper_metric(r.metric),
                value=r.value, n_queries=r.n, note="our row: the baseline on the LLM methods' requests",
                ours_only=True)
    for r in table2(values).itertuples():
        n = values[(values.dataset == r.dataset) & (values.method == r.method)]["n"].max()
        rec.add(paper=PAPER, table="2", dataset=r.dataset, method=f"{r.method} (-utt)", metric=r.metric,
                value=r.delta, n_queries=int(n), note=notes.get(r.method, ""))


# --------------------------------------------------------------------------------------------
# Alignment: Figure 4, the reported iteration, the reward history
# --------------------------------------------------------------------------------------------

def iteration_of(method: str) -> int | None:
    """``"Alignment it2"`` -> 2 (the per-iteration method names of ``evaluate_conditions``)."""
    head, _, tail = method.rpartition(" it")
    return int(tail) if head == "Alignment" and tail.isdigit() else None


def fig4(values: pd.DataFrame, metric: str = "recall@5") -> pd.DataFrame:
    """Figure 4 (left): ``metric`` per alignment iteration (rows) and test set (columns), with the
    utterance appended, on the LLM sample."""
    v = values[values.utterance & (values.metric == metric)]
    v = v.assign(iteration=v.method.map(iteration_of)).dropna(subset=["iteration"])
    if v.empty:
        return pd.DataFrame()
    t = v.pivot_table(index="iteration", columns="dataset", values="value", sort=True)
    t.index = t.index.astype(int)
    return t


def reported_iteration(values: pd.DataFrame, iteration: int | None = None,
                       select_on: str = "querygen-out-of-domain", metric: str = "recall@5",
                       among=None) -> int | None:
    """Table 1's Alignment iteration: ``iteration`` when given, else the one with the best ``metric``
    on ``select_on`` (the paper reports the best out-of-domain iteration, §4.4; ties: the earlier),
    among the iterations ``among`` (those whose test answers are complete; None: all)."""
    f = fig4(values, metric)
    if among is not None and not f.empty:
        f = f[f.index.isin(list(among))]
    if f.empty:
        return None
    if iteration is not None:
        return iteration if iteration in f.index else None
    if select_on not in f:
        return None
    col = f[select_on].dropna()
    return int(col.idxmax()) if len(col) else None


def with_reported_alignment(values: pd.DataFrame, iteration: int | None) -> pd.DataFrame:
    """``values`` plus the rows of ``Alignment it<iteration>`` renamed ``Alignment`` (Tables 1-2)."""
    if iteration is None:
        return values
    rows = values[values.method == f"Alignment it{iteration}"].assign(method="Alignment")
    return pd.concat([values, rows], ignore_index=True)


def reward_history(history: list[dict]) -> pd.DataFrame:
    """Figure 4 (right) and the cost of each iteration: reward distribution of the drafts, drafts
    kept, drafts/s, fine-tuning tokens/s and wall times."""
    cols = {"mean": "mean reward", "best_mean": "best-draft mean", "p25": "p25", "p50": "median", "p75": "p75",
            "drafts": "drafts", "kept": "kept", "drafts_per_s": "drafts/s", "draft_seconds": "drafting s",
            "draft_tokens": "draft tokens",
            "train_tokens_per_s": "training tokens/s", "train_seconds": "training s"}
    if not history:
        return pd.DataFrame(columns=list(cols.values()))
    t = pd.DataFrame(history).set_index("iteration")
    t = t[[c for c in cols if c in t]].rename(columns=cols)
    if any(h.get("earlier_training") for h in history):
        # the iteration was trained again (its model files were lost); its cached answers are the earlier model's
        t["final loss"] = [h.get("train_final_loss") for h in history]
        t["earlier trainings' final loss"] = [", ".join(str(e.get("train_final_loss")) for e in h.get("earlier_training", []))
                                              for h in history]
    return t


def retrain_note(history: list[dict]) -> str:
    """A sentence per iteration trained more than once (``earlier_training`` in its history record):
    which model made the cached answers, and how close the retrained one is (final training loss)."""
    out = []
    for h in history:
        for e in h.get("earlier_training", []):
            out.append(f"iteration {h['iteration']} was trained again after its model files were lost (final loss "
                       f"{e.get('train_final_loss')} then, {h.get('train_final_loss')} now; same data, seed and "
                       f"configuration, CPU bf16 arithmetic is not bit-reproducible): its cached test answers, and the "
                       f"drafts of iteration {h['iteration'] + 1} cached before the loss, come from the earlier model")
    return "; ".join(out)


def record_alignment(rec, values: pd.DataFrame, history: list[dict], note: str = "") -> None:
    """Figure 4's points as our own cells (the paper prints no values): per-iteration Recall@5 on each
    test set and the mean draft reward on the training requests."""
    for r in values[values.utterance & values.method.map(lambda m: iteration_of(m) is not None)
                    & (values.metric == "recall@5")].itertuples():
        rec.add(paper=PAPER, table="fig4", dataset=r.dataset, method=r.method, metric="recall@5", value=r.value,
                n_queries=r.n, note=note, ours_only=True)
    for h in history:
        rec.add(paper=PAPER, table="fig4", dataset="querygen-train", method=f"Alignment it{h['iteration']} drafts",
                metric="mean_reward", value=h["mean"], n_queries=h.get("requests"),
                note=f"{h['drafts']} drafts sampled from {h['sampled_from']}", ours_only=True)


def sample_value(values: pd.DataFrame, method: str, dataset: str, metric: str = "recall@5") -> float | None:
    """``method``'s ``metric`` on ``dataset``'s LLM sample, utterance appended (None if not evaluated)."""
    v = values[(values.dataset == dataset) & (values.method == method) & values.utterance
               & (values.metric == metric) & (values["sample"] == "llm")].value
    return float(v.iloc[0]) if len(v) else None


def authored_table(rows: list[dict]) -> pd.DataFrame:
    """Table 6: per authored request and generator, the generated queries and the top retrieved APIs."""
    t = pd.DataFrame(rows)
    return t.set_index(["request", "method"])[["temperature", "generated queries", "top APIs"]]


# --------------------------------------------------------------------------------------------
# Tables 3-5: one-iteration ablations, deltas to their baseline row
# --------------------------------------------------------------------------------------------

ABLATION_METRICS = {"3": ["recall@5"], "4": ["recall@5"], "5": ["mmrr", "recall@5", "recall@11"]}


def ablation_method(table: str, row: str) -> str:
    """The method name an ablation row is evaluated under (kept apart from Figure 4's iterations)."""
    return f"T{table} {row}"


def ablation_table(values: pd.DataFrame, table: str, rows: list[str]) -> pd.DataFrame:
    """Each row minus the first (the baseline), per test set and metric (the utterance appended, LLM
    sample); rows not evaluated are left out. Columns dataset, method, metric, delta, n."""
    v = values[values.utterance & (values["sample"] == "llm")].assign(metric=lambda d: d.metric.map(paper_metric))
    base = v[v.method == ablation_method(table, rows[0])].set_index(["dataset", "metric"])
    out = []
    for row in rows:
        r = v[v.method == ablation_method(table, row)].set_index(["dataset", "metric"])
        for (ds, met), x in r.iterrows():
            if met in ABLATION_METRICS[table] and (ds, met) in base.index:
                out.append({"dataset": ds, "method": row, "metric": f"delta_{met}",
                            "delta": x.value - base.loc[(ds, met)].value, "n": int(x.n)})
    return pd.DataFrame(out, columns=["dataset", "method", "metric", "delta", "n"])


def ablation_cost(histories: dict[str, dict[str, dict]]) -> pd.DataFrame:
    """Per ablation row (:func:`toolkit.querygen.experiment.ablation_histories`): the drafts its filter
    kept, their mean reward, the fine-tuning's wall time and tokens/s, and its test answers with their
    generation seconds (summed per answer, model load excluded). The drafts are the main run's
    first-iteration drafts (so is their drafting time) except for the intent row, which samples its own."""
    cols = {"drafts": "drafts", "draft_seconds": "drafting s", "kept": "kept", "mean": "mean draft reward",
            "train_seconds": "training s",
            "train_tokens_per_s": "training tokens/s", "train_final_loss": "final loss",
            "test_answers": "test answers", "test_answer_seconds": "answering s"}
    rows = [{"table": tab, "row": row, **{v: h.get(k) for k, v in cols.items()}}
            for tab, rs in histories.items() for row, h in rs.items()]
    return pd.DataFrame(rows, columns=["table", "row", *cols.values()]).set_index(["table", "row"])


def same_training_as_baseline(cost: pd.DataFrame) -> list[tuple[str, str]]:
    """The ablation rows (``(table, row)`` of :func:`ablation_cost`) whose fine-tuning is the baseline's
    own: the same number of kept drafts, the same mean draft reward and the same final loss (fine-tuning
    is deterministic on one machine). Such a row's delta is not an effect of its setting: it is what
    retraining the baseline changes (the baseline's cached answers may come from an earlier model)."""
    out = []
    for (table, row), r in cost.iterrows():
        base = cost.loc[table].iloc[0]
        if row != cost.loc[table].index[0] and all(pd.notna(r[c]) and r[c] == base[c]
                                                   for c in ("kept", "mean draft reward", "final loss")):
            out.append((table, row))
    return out


def ablation_reading(deltas: pd.DataFrame, cost: pd.DataFrame, metric: str = "recall@5") -> list[str]:
    """The reading's lines on Tables 3-5: each evaluated row's ``metric`` delta on both test sets, and the
    rows that trained exactly as the baseline did (:func:`same_training_as_baseline`), whose delta is the
    yardstick of retraining noise for the others."""
    from toolkit.querygen.alignment import ABLATION_TABLES
    d = deltas[deltas.metric == f"delta_{metric}"]
    name = metric.replace("recall", "Recall")
    lines = []
    for table, g in d.groupby("table", sort=True):
        rows = [r for r in list(ABLATION_TABLES[table])[1:] if (g.method == r).any()]
        parts = [f"{r} " + " / ".join(f"{x:+.3f}" for x in g[g.method == r].sort_values("dataset").delta)
                 for r in rows]
        if parts:
            n = "/".join(str(int(x)) for x in g.groupby("dataset").n.min()) if "n" in g else "?"
            lines.append(f"- **Table {table}**, {name} change vs the baseline (in-domain / out-of-domain, n = {n} "
                         f"requests): " + "; ".join(parts))
    for table, row in same_training_as_baseline(cost):
        x = d[(d.table == table) & (d.method == row)].sort_values("dataset").delta
        if len(x):
            lines.append(f"- *{row}* (Table {table}) kept the very drafts of its baseline and its fine-tuning ended at "
                         f"the same loss: its change ({' / '.join(f'{v:+.3f}' for v in x)}) is what retraining the "
                         f"baseline alone moves: a change of another row no larger than that cannot be told from retraining noise")
    return lines


def record_ablation(rec, deltas: pd.DataFrame, table: str, note: str = "") -> None:
    for r in deltas.itertuples():
        rec.add(paper=PAPER, table=table, dataset=r.dataset, method=r.method, metric=r.metric, value=r.delta,
                n_queries=r.n, note=note)


def record_table3_settings(rec, align_cfg, rows) -> None:
    """Table 3's configuration columns for the rows evaluated: drafts per request, reward threshold,
    drafts kept per request (the paper's baseline: 100, 0.05, 1)."""
    from dataclasses import replace

    from toolkit.querygen.alignment import TABLE3_SETTINGS
    for row in rows:
        a = replace(align_cfg, **TABLE3_SETTINGS[row])
        for metric, v in (("n_drafts", a.n_drafts), ("filter_threshold", a.filter.min_reward),
                          ("top_k_kept", a.filter.keep_per_sample)):
            rec.add(paper=PAPER, table="3", dataset="querygen-train", method=row, metric=metric, value=v,
                    note="our configuration (CPU budget: 5 drafts per request, not 100)")


# --------------------------------------------------------------------------------------------
# The paper's claims, checked on this run
# --------------------------------------------------------------------------------------------

CLAIM_KEYS = ("sft best in-domain", "alignment best out-of-domain", "zero-shot below utterance",
              "utterance helps zero-shot", "utterance helps fine-tuned less in-domain", "reward rises",
              "in-domain rises", "out-of-domain peaks", "ablation 3", "ablation 4", "ablation 5")


def claims(values: pd.DataFrame, history: list[dict], complete, iterations: int,
           sample_sizes: dict[str, int], metric: str = "recall@5", controls: dict | None = None,
           condition: str = "", alpha: float = 0.05) -> pd.DataFrame:
    """The paper's claims (§4.4, App. B.1, Fig. 4) on this run, one row each, judged by
    :func:`toolkit.claims.record` (held / not held / within noise; pending while an input is incomplete: a method
    not answered on every request of the LLM sample ``sample_sizes[dataset]``, fewer than ``iterations`` complete
    alignment iterations). ``values`` must already hold the reported ``Alignment`` rows
    (:func:`with_reported_alignment`).

    1. SFT is the best method in-domain; 2. alignment is the best out-of-domain (Table 1, on the
    same requests, the utterance appended; the named method against the best other one); 3. zero-shot is below the
    utterance on both test sets; 4. appending the utterance helps zero-shot on both sets and 5. helps SFT and
    alignment less in-domain than out-of-domain (Table 2, App. B.1; by direction: a difference of differences);
    6. the mean draft reward rises at every iteration (by direction); 7. in-domain ``metric`` rises at every
    iteration; 8. out-of-domain ``metric`` peaks before the last iteration (Fig. 4, §4.4: the peak against the last).

    Every comparison is oriented as claimed (a > b; :func:`toolkit.claims.oriented`), its paired randomization
    test when ``values`` has a ``per_query`` column, else (the paper's numbers) judged by direction.
    ``controls``: claim key (:data:`CLAIM_KEYS`) -> ``(control rows, conclusion)`` (:func:`claim_controls`).

    :func:`paper_values` turns the paper's Tables 1-2 into the same long table, so claims 1-5 can be
    checked on the paper's own numbers (the paper prints no values for Figure 4)."""
    from toolkit.claims import oriented, record
    from toolkit.significance import compared_on_common
    IN, OUT = "querygen-in-domain", "querygen-out-of-domain"
    rows = []
    controls = controls or {}

    def row(key, claim, evidence, pairs, tests=(), pending=False):
        ctl, conclusion = controls.get(key, ((), ""))
        rows.append(record(claim, tests, pairs, evidence, condition=condition, controls=ctl, conclusion=conclusion,
                           pending=pending or any(None in p for p in pairs), alpha=alpha, key=key))

    def cell(method, ds, utterance=True):
        v = values[(values.dataset == ds) & (values.method == method) & (values.utterance == utterance)
                   & (values.metric == metric) & (values["sample"] == "llm")]
        if not len(v) or int(v.n.iloc[0]) < sample_sizes.get(ds, 0):
            return None
        return v.iloc[0]

    def val(method, ds, utterance=True):
        c = cell(method, ds, utterance)
        return None if c is None else float(c.value)

    def p_of(label, a, b):
        """the paired test of cells a, b (method, ds, utterance), a > b claimed; None without per-query values"""
        ca, cb = cell(*a), cell(*b)
        if ca is None or cb is None or "per_query" not in values:
            return None
        return compared_on_common(label, ca.per_query, cb.per_query)

    def fmt(d):
        return ", ".join(f"{m} {x:.3f}" if x is not None else f"{m} pending" for m, x in d.items())

    def short(ds):
        return ds.split("-", 1)[1]

    for key, ds, label, winner in (("sft best in-domain", IN, "in-domain", "SFT"),
                                   ("alignment best out-of-domain", OUT, "out-of-domain", "Alignment")):
        d = {m: val(m, ds) for m in METHODS}
        pend = None in d.values()
        other = None if pend else max((m for m in METHODS if m != winner), key=d.get)
        row(key, f"{winner} is the best method {label} ({metric})", fmt(d),
            [(d[winner], None if pend else d[other])],
            [] if pend else [p_of(f"{winner} vs {other}", (winner, ds), (other, ds))])
    d = {(ds, m): val(m, ds) for ds in (IN, OUT) for m in ("Utterance", "Zero-Shot")}
    row("zero-shot below utterance", "zero-shot is below the utterance on both test sets",
        "; ".join(f"{short(ds)}: " + fmt({m: d[ds, m] for m in ("Utterance", "Zero-Shot")}) for ds in (IN, OUT)),
        [(d[ds, "Utterance"], d[ds, "Zero-Shot"]) for ds in (IN, OUT)],
        [p_of(f"{short(ds)}: Utterance vs Zero-Shot", ("Utterance", ds), ("Zero-Shot", ds)) for ds in (IN, OUT)])
    drops = {ds: {m: (None if val(m, ds, False) is None or val(m, ds) is None else val(m, ds, False) - val(m, ds))
                  for m in METHODS[1:]} for ds in (IN, OUT)}

    def drop_text(methods):
        return "; ".join(f"{short(ds)}: " + ", ".join(
            f"{m} {dd[m]:+.3f}" if dd[m] is not None else f"{m} pending" for m in methods) for ds, dd in drops.items())
    row("utterance helps zero-shot",
        "appending the utterance helps zero-shot on both test sets (Table 2: dropping it lowers it)",
        drop_text(["Zero-Shot"]), [(val("Zero-Shot", ds), val("Zero-Shot", ds, False)) for ds in (IN, OUT)],
        [p_of(f"{short(ds)}: Zero-Shot with vs without the utterance", ("Zero-Shot", ds), ("Zero-Shot", ds, False))
         for ds in (IN, OUT)])
    row("utterance helps fine-tuned less in-domain",
        "the utterance helps SFT and alignment less in-domain than out-of-domain (Table 2)",
        drop_text(["SFT", "Alignment"]), [(drops[IN][m], drops[OUT][m]) for m in ("SFT", "Alignment")])
    means = [h["mean"] for h in sorted(history, key=lambda h: h["iteration"])]
    row("reward rises", "the mean draft reward rises at every iteration (Fig. 4, right)",
        " → ".join(f"{m:.3f}" for m in means) or "no iteration yet",
        list(zip(means[1:], means)) if len(means) > 1 else [(None, None)], pending=len(means) < iterations)
    f = fig4(values, metric)
    f = f[f.index.isin(list(complete))] if not f.empty else f
    done = len(f) >= iterations and len(f) > 1
    its = list(f.index)
    for key, ds, claim in (("in-domain rises", IN, f"in-domain {metric} rises at every iteration (Fig. 4)"),
                           ("out-of-domain peaks", OUT, f"out-of-domain {metric} peaks before the last iteration "
                                                        "(Fig. 4)")):
        s_ = list(f[ds]) if ds in f else []
        ev = " → ".join(f"it{it} {x:.3f}" for it, x in zip(f.index, s_)) or "no complete iteration yet"
        if not done or not s_:
            row(key, claim, ev, [(None, None)], pending=True)
            continue
        if key == "in-domain rises":      # every later iteration above the one before
            steps = list(zip(its[1:], its))
        else:                              # the best earlier iteration above the last
            steps = [(its[max(range(len(s_) - 1), key=lambda i: (s_[i], -i))], its[-1])]
        at = dict(zip(its, s_))
        row(key, claim, ev, [(at[a], at[b]) for a, b in steps],
            [p_of(f"it{a} vs it{b}", (f"Alignment it{a}", ds), (f"Alignment it{b}", ds)) for a, b in steps])
    return pd.DataFrame(rows)


def condition_of(cfg) -> str:
    """What differs from the paper in the component the claims rest on: the generators and zero-shot model of the
    40_querygen configuration ``cfg`` (paper: LLaMA-13B zero-shot, 13B fine-tuned generators on GPUs)."""
    return (f"generators {cfg.generator_base} (SFT, alignment) and zero-shot {cfg.zero_shot_model}, fine-tuned on CPU "
            f"with {cfg.align.n_drafts} drafts per request, {cfg.test_requests} test requests per set "
            "(paper: 13B LLaMA models on GPUs)")


def claim_controls(values: pd.DataFrame, bound_values: pd.DataFrame, gaps: pd.DataFrame, metric: str = "recall@5",
                   alpha: float = 0.05) -> dict[str, tuple[list[dict], str]]:
    """The control rows that can account for the Table 1-2 and Figure 4 claims of :func:`claims` (key of
    :data:`CLAIM_KEYS`) -> ``(rows, conclusion)``: per test set, the ceiling of generated text (the
    :data:`toolkit.querygen.bounds.ORACLE_DESCRIPTIONS` row: the gold tools' descriptions as the query) minus the
    utterance, paired over the LLM sample, and the share of that gap SFT and alignment close
    (:func:`toolkit.querygen.bounds.gap_table`). A resolved ceiling (p < ``alpha``) that the generators close
    less than half of -> "generator-limited: good descriptions would help, ours do not reach them"."""
    from toolkit.claims import control
    from toolkit.querygen.bounds import ORACLE_DESCRIPTIONS
    from toolkit.significance import compared_on_common

    def cell(v, method, ds):
        c = v[(v.dataset == ds) & (v.method == method) & v.utterance & (v.metric == metric) & (v["sample"] == "llm")]
        return c.iloc[0] if len(c) else None

    out, limited = {}, {}
    for ds in ("querygen-in-domain", "querygen-out-of-domain"):
        short = ds.split("-", 1)[1]
        ceil, utt = cell(bound_values, ORACLE_DESCRIPTIONS, ds), cell(values, "Utterance", ds)
        t = None if ceil is None or utt is None or "per_query" not in values else \
            compared_on_common("ceiling", ceil.per_query, utt.per_query)
        rows = [control(f"{short}: oracle descriptions - utterance ({metric})", t["diff"] if t else None,
                        t["p"] if t else None, t["n"] if t else None)]
        g = gaps[(gaps.dataset == ds) & (gaps.ceiling == ORACLE_DESCRIPTIONS) & (gaps.metric == metric)] \
            if len(gaps) else gaps
        shares = {}
        for m in ("SFT", "Alignment"):
            r = g[g.method == m] if len(g) else g
            if len(r) and pd.notna(r.share.iloc[0]):
                shares[m] = float(r.share.iloc[0])
                rows.append(control(f"{short}: share of that gap {m} closes", shares[m], None, int(r.n.iloc[0])))
        out[ds] = rows
        limited[ds] = bool(t and t["diff"] > 0 and t["p"] < alpha and shares and max(shares.values()) < 0.5)
    why = {ds: "generator-limited: good descriptions would help, ours do not reach them" if limited[ds] else ""
           for ds in out}
    ins, outs = "querygen-in-domain", "querygen-out-of-domain"
    both = [*out[ins], *out[outs]]
    return {"sft best in-domain": (out[ins], why[ins]), "alignment best out-of-domain": (out[outs], why[outs]),
            "zero-shot below utterance": (both, ""), "utterance helps zero-shot": (both, ""),
            "utterance helps fine-tuned less in-domain": (both, ""),
            "in-domain rises": (out[ins], why[ins]), "out-of-domain peaks": (out[outs], why[outs])}


def paper_values(paper_numbers: pd.DataFrame) -> pd.DataFrame:
    """The paper's Tables 1-2 (``toolkit.compare.load_paper_numbers("querygen")``) as a long table
    like :func:`toolkit.querygen.experiment.evaluate_conditions`' (sample "llm", n = 1): Table 1's
    values with the utterance, Table 1 plus Table 2's delta without it."""
    t1 = paper_numbers[paper_numbers.table == "1"]
    rows = [{"dataset": r.dataset, "method": r.method, "utterance": True, "sample": "llm", "metric": r.metric,
             "value": float(r.value), "n": 1} for r in t1.itertuples()]
    with_utt = {(r["dataset"], r["method"], r["metric"]): r["value"] for r in rows}
    for r in paper_numbers[paper_numbers.table == "2"].itertuples():
        key = (r.dataset, r.method.removesuffix(" (-utt)"), r.metric.removeprefix("delta_"))
        if key in with_utt:
            rows.append({"dataset": key[0], "method": key[1], "utterance": False, "sample": "llm", "metric": key[2],
                         "value": with_utt[key] + float(r.value), "n": 1})
    return pd.DataFrame(rows)


ABLATION_CLAIMS = {
    "3": "every change of the rejection-sampling filter lowers {m} on both test sets (Table 3, App. B.2)",
    "4": "the MMRR reward beats MAP and mean recall on both test sets (Table 4, App. B.3)",
    "5": "generating tool descriptions beats generating intents on both test sets (Table 5, App. C)",
}


def ablation_claims(deltas: pd.DataFrame, values: pd.DataFrame | None = None, metric: str = "recall@5",
                    datasets=("querygen-in-domain", "querygen-out-of-domain"), condition: str = "",
                    alpha: float = 0.05) -> pd.DataFrame:
    """The paper's reading of its ablations (Tables 3-5), one row per table, judged by
    :func:`toolkit.claims.record`: each table's first row (the baseline) is above every other row on both test sets.
    ``deltas``: columns table, dataset, method, metric (``delta_<metric>``), delta (each row minus the baseline:
    :func:`ablation_table` with a ``table`` column, or the paper's printed deltas). A table with a row or set
    missing is pending.

    With ``values`` (:func:`toolkit.querygen.experiment.evaluate_conditions` of the ablation methods,
    ``per_query`` column) each comparison of the baseline with a row gets its randomization test; without them
    (the paper's deltas) a table is judged by direction."""
    from toolkit.claims import record
    from toolkit.querygen.alignment import ABLATION_TABLES as settings
    from toolkit.significance import compared_on_common
    d = deltas[deltas.metric == f"delta_{metric}"].set_index(["table", "dataset", "method"]).delta

    def test(table, row, ds):
        if values is None or "per_query" not in values:
            return None
        base, other = (values[(values.method == ablation_method(table, r)) & (values.dataset == ds) & values.utterance
                              & (values.metric == metric) & (values["sample"] == "llm")].per_query
                       for r in (list(settings[table])[0], row))
        if not len(base) or not len(other):
            return None
        return compared_on_common(f"baseline vs {row} {ds.split('-', 1)[1]}", base.iloc[0], other.iloc[0])

    rows = []
    for table, rows_ in settings.items():
        others = list(rows_)[1:]
        got = {(ds, r): d.get((table, ds, r)) for ds in datasets for r in others}
        done = None not in got.values()
        tests = [test(table, r, ds) for ds in datasets for r in others] if done else []
        rows.append(record(ABLATION_CLAIMS[table].format(m=metric.replace("recall", "Recall")),
                           [t for t in tests if t] if all(tests) else [],
                           [(0.0, got[k]) for k in got] if done else [(None, None)],
                           "; ".join(f"{ds.split('-', 1)[1]}: " + ", ".join(
                               f"{r} {'pending' if got[ds, r] is None else f'{got[ds, r]:+.3f}'}" for r in others)
                               for ds in datasets),
                           condition=condition, pending=not done, alpha=alpha, key=f"ablation {table}"))
    return pd.DataFrame(rows)


def judged_claims(values: pd.DataFrame, history: list[dict], complete, cfg, sample_sizes: dict[str, int],
                  abl_deltas: pd.DataFrame, abl_values: pd.DataFrame | None, paper_numbers: pd.DataFrame,
                  bound_values: pd.DataFrame, gaps: pd.DataFrame, metric: str = "recall@5") -> list[dict]:
    """Notebook 40's claims cell: :func:`claims` and :func:`ablation_claims` on this run, with the condition
    (:func:`condition_of`) and controls (:func:`claim_controls`), beside the same claims judged on the paper's
    Tables 1-5 by direction (:func:`toolkit.claims.with_paper`; Figure 4 has no printed values: "stated (§4.4), no
    values printed")."""
    from toolkit.claims import with_paper
    cond = condition_of(cfg)
    ours = pd.concat([claims(values, history, complete, cfg.align.iterations, sample_sizes, metric,
                             claim_controls(values, bound_values, gaps, metric), cond),
                      ablation_claims(abl_deltas, abl_values, metric, condition=cond)], ignore_index=True)
    paper_deltas = paper_numbers[paper_numbers.table.isin(["3", "4", "5"])].rename(columns={"value": "delta"})
    on_paper = pd.concat([claims(paper_values(paper_numbers), [], [], cfg.align.iterations,
                                 {n: 1 for n in sample_sizes}, metric),
                          ablation_claims(paper_deltas, metric=metric)], ignore_index=True)
    rows = with_paper(ours.to_dict("records"), on_paper.to_dict("records"))
    for r, p in zip(rows, on_paper.to_dict("records")):
        if p["here"] == "pending":
            r["paper"] = "stated (§4.4), no values printed"
    return rows


# --------------------------------------------------------------------------------------------
# Ceiling and floor on Table 1's requests (toolkit.querygen.bounds)
# --------------------------------------------------------------------------------------------

def bounds_rows(values: pd.DataFrame, methods=METHODS[1:]) -> pd.DataFrame:
    """The floor (Copy the utterance), ``methods`` and the two ceilings on the LLM sample, the utterance
    appended: one row per (test set, method), the paper's metric names as columns, then ``n``."""
    from toolkit.querygen.bounds import COPY, ORACLE, ORACLE_DESCRIPTIONS
    order = [COPY, *methods, ORACLE_DESCRIPTIONS, ORACLE]
    v = values[values.utterance & (values["sample"] == "llm") & values.method.isin(order)]
    v = v.assign(metric=v.metric.map(paper_metric))
    w = v.pivot_table(index=["dataset", "method"], columns="metric", values="value", sort=False)
    w = w[[m for m in ["mmrr", "map", "recall@3", "recall@5", "recall@11"] if m in w.columns]]
    w["n"] = v.groupby(["dataset", "method"], sort=False).n.max().astype(int)
    idx = [(d, m) for d in dict.fromkeys(v.dataset) for m in order if (d, m) in w.index]
    return w.reindex(pd.MultiIndex.from_tuples(idx, names=["dataset", "method"]))


def gap_rows(gaps: pd.DataFrame) -> pd.DataFrame:
    """:func:`toolkit.querygen.bounds.gap_table` wide: per (test set, method), the share of the gap
    closed per ceiling and metric."""
    if gaps.empty:
        return pd.DataFrame()
    g = gaps.assign(metric=gaps.metric.map(paper_metric))
    w = g.pivot_table(index=["dataset", "method"], columns=["ceiling", "metric"], values="share", sort=False)
    w["n"] = g.groupby(["dataset", "method"], sort=False).n.max()
    return w


def record_bounds(rec, bound_values: pd.DataFrame, gaps: pd.DataFrame, notes: dict[str, str] | None = None) -> None:
    """The three no-LLM rows as our own Table 1 cells (LLM sample, the utterance appended), and each
    method's share of the gap as our own cells of table ``1-gap`` (``gap_closed_<metric>``, method
    ``<method> to <ceiling>``)."""
    from toolkit.querygen.bounds import BOUNDS
    notes = notes or {}
    v = bound_values[bound_values.utterance & (bound_values["sample"] == "llm") & bound_values.method.isin(BOUNDS)]
    for r in v.itertuples():
        rec.add(paper=PAPER, table="1", dataset=r.dataset, method=r.method, metric=paper_metric(r.metric),
                value=r.value, n_queries=r.n, note=notes.get(r.method, ""), ours_only=True)
    for r in gaps.dropna(subset=["share"]).itertuples():
        rec.add(paper=PAPER, table="1-gap", dataset=r.dataset, method=f"{r.method} to {r.ceiling}",
                metric=f"gap_closed_{paper_metric(r.metric)}", value=r.share, n_queries=r.n,
                note="(method - Copy the utterance) / (ceiling - Copy the utterance), same requests", ours_only=True)


def gap_reading(gaps: pd.DataFrame, ceiling: str, labels=(("querygen-in-domain", "in-domain"),
                                                         ("querygen-out-of-domain", "out-of-domain")),
                prefix: str = "") -> list[str]:
    """One reading line per test set: each method's share of the gap from Copy the utterance to
    ``ceiling``, Recall@5 / MMRR, after the floor and ceiling values it is measured between."""
    lines = []
    g = gaps[gaps.ceiling == ceiling]
    for ds, label in labels:
        d = g[g.dataset == ds]
        if d.empty:
            continue
        r5, mm = (d[d.metric.map(paper_metric) == m].set_index("method") for m in ("recall@5", "mmrr"))

        def pct(x, method):
            return f"{x.loc[method, 'share']:+.1%}" if method in x.index and pd.notna(x.loc[method, "share"]) else "n/a"
        span = ", ".join(f"{name} {x.floor_value.iloc[0]:.3f} → {x.ceiling_value.iloc[0]:.3f}"
                         for x, name in ((r5, "Recall@5"), (mm, "MMRR")) if len(x))
        parts = [f"{method} {pct(r5, method)} / {pct(mm, method)}" for method in dict.fromkeys(d.method)]
        lines.append(f"- **{prefix}{label}** (n = {int(d.n.max())}; copy → ceiling: {span}), share closed "
                     f"(Recall@5 / MMRR): " + ", ".join(parts))
    return lines


def show_claims(claims: list[dict]) -> None:
    """The claims table (:func:`toolkit.claims.table`) and, under it, the differences each "within noise" verdict
    rests on that the sample cannot resolve (p >= 0.05)."""
    from IPython.display import Markdown, display

    from toolkit.claims import table
    from toolkit.significance import within_noise
    display(table(claims))
    notes = [f"- *{r['claim']}*: **{r['here']}**: "
             + ", ".join(f"{t['comparison']} (p={t['p']:.3f})" for t in within_noise(r.get("tests") or []))
             for r in claims if r.get("here") == "within noise" and within_noise(r.get("tests") or [])]
    display(Markdown("Verdicts within noise, the differences the sample cannot resolve (p ≥ 0.05):\n" + "\n".join(notes)
                     if notes else "No verdict is within noise."))
