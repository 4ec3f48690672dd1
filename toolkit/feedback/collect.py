"""Every table of notebook ``30_feedback`` from the traces (:func:`collect`): Tables 2-7, the offline feedback's
rounds (§4.3), the controls of :mod:`toolkit.feedback.controls` and their decomposition, the audits of what the LLM
did. It reads trace files only; with ``run_missing`` (smoke) it first runs the stages that would write a missing
one (:mod:`toolkit.feedback.stages`, :mod:`toolkit.feedback.controls`). Kept apart from
:mod:`toolkit.feedback.experiment`, which names the traces, so that the stages import the names and this module
imports the stages, without a circle."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

import pandas as pd

from toolkit.feedback import controls as C
from toolkit.feedback import stages
from toolkit.feedback.data import IN_DOMAIN, OFFLINE_SET, OUT_OF_DOMAIN
from toolkit.feedback.experiment import (ABLATION_GROUP, CONDITIONS, GROUPS, METRICS, UNCHANGED_STOPS, WARMUP_ROWS,
                                         LLMStage, case_study, command, condition_rounds, decision_audit,
                                         llm_stages, load_meta, load_or_pending, pending_row, refinement_effect,
                                         rewrite_moves, round_values, rows, seconds_per_instruction, toolretriever_trace_path,
                                         trace_complete, trace_values, with_all)
from toolkit.feedback.loop import stop_when_unchanged


def collect(cfg, tests: Mapping, run_missing: bool = False, llm=None) -> tuple[pd.DataFrame, list[dict], dict]:
    """Every table's rows from the traces: (values, pending, extra). ``values`` has columns table, set,
    method, metric, n, value, ours_only (fractions; seconds for Table 5's efficiency), per_query
    (``{qid: value}``, for the claims' significance tests), planned (the row's sample when complete: an LLM
    trace still being generated gives rows on its first n < planned instructions). With
    ``run_missing`` (smoke), missing stages run here first; otherwise they are listed in ``pending``."""
    pending: list[dict] = []
    out: list[dict] = []
    extra: dict = {"traces": {}}

    def get(path: Path, needed, row: dict, produce, partial: bool = False):
        if run_missing and not trace_complete(path, needed):
            produce()
        got = load_or_pending(path, needed, pending, row, partial)
        if got is not None:
            meta = load_meta(path)
            # a trace read twice (a sample and its subsample) records the most it was read for
            most = max(len(got), extra["traces"].get(path.name, {}).get("queries", 0))
            extra["traces"][path.name] = {"queries": most, **{k: v for k, v in meta.items()
                                                                  if k in ("stage", "wall_s", "model", "llm", "llm_slots")}}
            # a model kept in float16 (toolkit.weights; restored by stages._kept): its trace says so
            if weights := (meta.get("warmup_stats") or meta.get("training_stats") or {}).get("weights"):
                extra["traces"][path.name]["weights"] = weights
        return got

    def add(table, label, method, values, n, ours_only=False, per_query=None, planned=None):
        """``planned``: the instructions the row's LLM sample holds when complete (n < planned: in progress)"""
        out.extend({**r, "table": table, "planned": planned or n}
                   for r in rows(label, method, values, n, ours_only, per_query))

    def measured(traces, qrels, t=None, metrics=METRICS):
        """(means, per-query values) of ``trace_values``"""
        pq = trace_values(traces, qrels, t, metrics, per_query=True)
        return {m: sum(v.values()) / len(v) if v else float("nan") for m, v in pq.items()}, pq

    def traced(stage: LLMStage, table: str, label: str):
        return get(stage.path, stage.qids, pending_row(table, label, stage.group or OFFLINE_SET, stage.command),
                   lambda: stages.run_stage(stage, llm), partial=True)

    plan = {s.name: s for s in llm_stages(cfg, tests)}
    # Tables 2/3: ToolRetriever (whole set, and its LLM sample) and Ours (LLM sample), % improve
    ours, tool, whole = {}, {}, {}      # whole: each group's ToolRetriever queries (its baseline_queries sample)
    control_pq: dict[str, dict[str, dict]] = {}      # per group: the rows the decomposition compares (per query)
    for label in (*GROUPS, *OUT_OF_DOMAIN):
        whole[label] = list(tests[label].nested_sample(cfg.baseline_queries, cfg.sample_seed).queries)
        tool[label] = get(toolretriever_trace_path(cfg, label), whole[label],
                          pending_row("2, 3", "ToolRetriever", label, command("toolretriever", cfg, label)),
                          lambda label=label: stages.toolretriever(cfg, label))
        ours[label] = traced(plan[f"test {label}"], "2, 3, 5", "Ours")
    planned = {label: len(plan[f"test {label}"].qids) for label in (*GROUPS, *OUT_OF_DOMAIN)}
    planned["All"] = sum(planned[g] for g in GROUPS)
    tool, ours = with_all({k: v for k, v in tool.items() if v}), with_all({k: v for k, v in ours.items() if v})
    for label in (*IN_DOMAIN, *OUT_OF_DOMAIN):
        table = "2" if label in IN_DOMAIN else "3"
        metrics = METRICS if table == "3" else METRICS[:3]
        qrels = tests[label].qrels
        if label in tool:
            v, pq = measured(tool[label], qrels, metrics=metrics)
            add(table, label, "ToolRetriever", v, len(tool[label]), per_query=pq)
        if label in ours:
            sample = ours[label]
            o, pq = measured(sample, qrels, metrics=metrics)
            add(table, label, "Ours", o, len(sample), per_query=pq, planned=planned[label])
            if label != "All":                                # the decomposition below reads these rows
                control_pq[label] = {"Ours": pq}
            if label in tool and set(sample) <= set(tool[label]):
                t, pq = measured({q: tool[label][q] for q in sample}, qrels, metrics=metrics)
                if label != "All":
                    control_pq[label]["ToolRetriever"] = pq
                if len(sample) < len(tool[label]):
                    add(table, label, "ToolRetriever (LLM sample)", t, len(sample), ours_only=True, per_query=pq,
                        planned=planned[label])
                add(table, label, "% improve", {m: o[m] / t[m] - 1 if t[m] else float("nan") for m in metrics},
                    len(sample), planned=planned[label])
    # the controls (toolkit.feedback.controls) beside Ours on each LLM sample, and the gap's decomposition
    from toolkit.feedback.config import with_fair_feedback
    fair = with_fair_feedback(cfg)                     # the fair LLM step (toolkit.feedback.config.fair_config)
    fair_loops: dict[str, tuple[dict, str]] = {}       # the loop on ToolRetriever per group: (traces, group)
    for label in (*GROUPS, *OUT_OF_DOMAIN):
        if label not in ours:
            continue
        table = "2" if label in IN_DOMAIN else "3"
        metrics = METRICS if table == "3" else METRICS[:3]
        qrels, sample = tests[label].qrels, list(ours[label])
        o0, pq0 = measured(ours[label], qrels, t=0, metrics=metrics)
        add(table, label, C.OURS_T0, o0, len(sample), ours_only=True, per_query=pq0, planned=planned[label])
        control_pq[label][C.OURS_T0] = pq0
        n = cfg.sample_size(label)
        controls = [(C.SAME_STEPS, C.same_steps_trace_path(cfg, label, n), lambda label=label: C.same_steps_test(cfg, label),
                     C.command(cfg, label), False),
                    *((C.ORACLE if r == "ours" else C.ORACLE_TOOLRETRIEVER, C.oracle_trace_path(cfg, label, n, r),
                       lambda label=label, r=r: C.oracle_test(cfg, label, r), C.command(cfg, label), False)
                      for r in C.RETRIEVERS),
                    # the LLM's loop on the warm-up retriever, with the fair LLM step (its own answers; in progress:
                    # the instructions traced so far, with their n)
                    (C.TOOLRETRIEVER_LOOP, C.toolretriever_loop_trace_path(fair, label, n),
                     lambda label=label: C.toolretriever_loop_test(fair, label), command("toolretriever-loop", fair, label),
                     True)]
        needed = plan[f"test {label}"].qids
        for method, path, produce, how, partial in controls:
            got = get(path, needed, pending_row(table, method, label, how), produce, partial=partial)
            if got and method == C.TOOLRETRIEVER_LOOP:
                fair_loops[f"{label}: {C.TOOLRETRIEVER_LOOP} (fair LLM)"] = (got, label)   # audited below
            if got:
                # the rows of Ours' traced instructions (Ours or the control in progress: fewer)
                got = {q: got[q] for q in sample if q in got}
                v, pq = measured(got, qrels, metrics=metrics)
                add(table, label, method, v, len(got), ours_only=True, per_query=pq, planned=planned[label])
                control_pq[label][method] = pq
    extra["decomposition"] = C.decomposition(control_pq).to_dict("records")
    # is the LLM the limit: the loop on ToolRetriever with each LLM of scale_llms on one I2 sample,
    # beside ToolRetriever and the oracle (with ToolRetriever) on the same queries -- table "llm-scale"
    scale_pq: dict[str, dict] = {}
    label = ABLATION_GROUP

    def scale_add(row, run, planned=None):
        v, pq = measured(run, tests[label].qrels, metrics=METRICS[:3])
        add("llm-scale", label, row, v, len(run), ours_only=True, per_query=pq, planned=planned)
        scale_pq[row] = pq
    if cfg.scale_llms and label in tool:
        scale = list(tests[label].nested_sample(cfg.scale_queries, cfg.sample_seed).queries)
        if set(scale) <= set(tool[label]):
            scale_add("ToolRetriever", {q: tool[label][q] for q in scale})
        n = cfg.sample_size(label)
        oracle = get(C.oracle_trace_path(cfg, label, n, "toolretriever"), scale,
                     pending_row("llm-scale", C.ORACLE_TOOLRETRIEVER, label, C.command(cfg, label)),
                     lambda: C.oracle_test(cfg, label, "toolretriever"))
        if oracle:
            scale_add(C.ORACLE_TOOLRETRIEVER, oracle)
        for name, c, n_trace in C.scale_runs(cfg, label):
            row = C.scale_row(name)
            got = get(C.toolretriever_loop_trace_path(c, label, n_trace), scale,
                      pending_row("llm-scale", row, label, command("toolretriever-loop", c, label, n=n_trace)),
                      lambda c=c, n_trace=n_trace: C.toolretriever_loop_test(c, label, n=n_trace), partial=True)
            if got:
                scale_add(row, got, planned=len(scale))
                extra.setdefault("non_refinements", []).append(
                    {"row": row, **C.non_refinements(got, tests[label].qrels, c)})
    extra["llm_scale"] = C.decomposition({label: scale_pq}, parts=C.scale_parts(cfg.scale_llms)).to_dict("records") \
        if scale_pq else []
    # Table 5: rounds 1-3 of the main run on I2, with the LLM seconds per instruction
    # (our rows beside the paper's: T=0, the iteration-aware retriever before any feedback, and the loop ended by an
    # unchanged refinement as by "N/A", re-derived exactly from the same traces)
    i2 = ours.get(ABLATION_GROUP)
    if i2:
        by_round = round_values(i2, tests[ABLATION_GROUP].qrels, cfg.training.rounds)
        for t, r in enumerate(by_round.values()):
            add("5", ABLATION_GROUP, f"Ours (T={t})", {**r["values"], "seconds_per_instruction": seconds_per_instruction(i2, t)},
                len(i2), ours_only=t == 0, per_query=r["per_query"], planned=planned[ABLATION_GROUP])
        extra["rewritten_by_round"] = {t: r["rewritten"] for t, r in enumerate(by_round.values()) if t}
        cut = stop_when_unchanged(i2)
        v, pq = measured(cut, tests[ABLATION_GROUP].qrels)
        add("5", ABLATION_GROUP, UNCHANGED_STOPS.format(T=cfg.training.rounds),
            {**v, "seconds_per_instruction": seconds_per_instruction(cut, cfg.training.rounds)}, len(i2),
            ours_only=True, per_query=pq, planned=planned[ABLATION_GROUP])
        extra["stopped_after_round"] = {t: sum(len(tr.instructions) - 1 == t for tr in i2.values())
                                        for t in range(cfg.training.rounds + 1)}
    # Tables 4, 6, 7: conditions on the I2 ablation sample; the main run's row from its I2 trace
    sample = next(s.qids for s in plan.values() if s.condition)     # the conditions' shared I2 sample
    qrels2 = tests[ABLATION_GROUP].qrels
    main_rows = {"4": "Ours", "6": "Ours (BERT-based)"}
    by_row: dict[tuple[str, str], dict] = {}             # every row's traces, for condition_rounds
    for table, conds in CONDITIONS.items():
        metrics = METRICS if table != "6" else METRICS[:3]
        main = [q for q in sample if q in (i2 or {})]      # the main run's I2 trace may be in progress
        if main and table in main_rows:
            v, pq = measured({q: i2[q] for q in main}, qrels2, metrics=metrics)
            add(table, ABLATION_GROUP, main_rows[table], v, len(main), per_query=pq, planned=len(sample))
            if table == "4":
                by_row["4", "Ours"] = {q: i2[q] for q in main}
        if table in WARMUP_ROWS and set(sample) <= set(tool.get(ABLATION_GROUP) or {}):
            v, pq = measured({q: tool[ABLATION_GROUP][q] for q in sample}, qrels2, metrics=metrics)
            add(table, ABLATION_GROUP, WARMUP_ROWS[table](main_rows[table]), v, len(sample), per_query=pq)
        for label in conds:
            got = traced(plan[f"{table}: {label}"], table, label)
            if got:
                v, pq = measured(got, qrels2, metrics=metrics)
                add(table, ABLATION_GROUP, label, v, len(got), per_query=pq, planned=len(sample))
                by_row[table, label] = got
            if table in WARMUP_ROWS:       # the condition's own warm-up (its base encoder), no LLM
                c = plan[f"{table}: {label}"].cfg
                warm = get(toolretriever_trace_path(c, ABLATION_GROUP), whole[ABLATION_GROUP],
                           pending_row(table, WARMUP_ROWS[table](label), ABLATION_GROUP,
                                       command("toolretriever", c, ABLATION_GROUP, table, label)),
                           lambda c=c: stages.toolretriever(c, ABLATION_GROUP))
                if warm and set(sample) <= set(warm):
                    v, pq = measured({q: warm[q] for q in sample}, qrels2, metrics=metrics)
                    add(table, ABLATION_GROUP, WARMUP_ROWS[table](label), v, len(sample), per_query=pq)
    extra["condition_rounds"] = condition_rounds(by_row, qrels2, cfg.training.rounds).to_dict("records")
    # §4.3's offline feedback on training instructions, as retrieval with the warm-up model that produced it
    from toolkit.feedback.data import training_set
    train = training_set("train")
    offline = traced(plan["training feedback"], "s4.3", "offline feedback")
    if offline:
        for step, r in round_values(offline, train.qrels, cfg.training.rounds).items():
            add("s4.3", OFFLINE_SET, f"ToolRetriever + feedback ({step})",
                {**r["values"], **({"rewritten": r["rewritten"]} if "rewritten" in r else {})},
                len(offline), ours_only=True, per_query=r["per_query"], planned=len(plan["training feedback"].qids))
    # what the LLM did with each instruction, and what that did to its retrieval: test traces and offline feedback
    # (and the fair LLM step's loop on ToolRetriever, beside them: how its decisions and rewrites differ)
    judged = {**ours, **({OFFLINE_SET: offline} if offline else {}), **{k: tr for k, (tr, _) in fair_loops.items()}}
    judged_qrels = {**{g: tests[g].qrels for g in ours}, OFFLINE_SET: train.qrels,
                    **{k: tests[g].qrels for k, (_, g) in fair_loops.items()}}
    extra["decision_audit"] = decision_audit(judged, judged_qrels, cfg.feedback.k).to_dict("records")
    extra["refinement_effect"] = refinement_effect(judged, judged_qrels, cfg.training.rounds).to_dict("records")
    extra["rewrite_moves"] = rewrite_moves(judged, judged_qrels).to_dict("records")
    # Figure 4: a case study from the main run's test traces (I2 first, as the paper's multi-tool example); until
    # a test trace holds a refined instruction, from the offline feedback (the warm-up retriever, no training on it).
    # Beside the paper's case with a gain, the case with the largest loss.
    sources = [(label, ours[label], tests[label]) for label in (ABLATION_GROUP, *GROUPS) if label in ours]
    for name, loss in (("case_study", False), ("case_study_loss", True)):
        for label, traces, ds in sources + ([(OFFLINE_SET, offline, train)] if offline else []):
            case = case_study(traces, ds, loss=loss)
            if case:
                extra[name] = {"set": label, **case}
                break
    return pd.DataFrame(out, columns=["table", "set", "method", "metric", "n", "value", "ours_only", "per_query",
                                      "planned"]), pending, extra
