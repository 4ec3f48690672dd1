"""Notebook ``30_feedback``'s conditions and stages: which models and traces each table needs, how
they are named, produced (``python -m toolkit.feedback``) and read back without a model.

Stages, each resumable (models are cached, LLM answers are cached per call, traces are written whole):

- ``warmup``: ToolRetriever — the dual encoder on ToolLens train's original instructions;
- ``train_feedback``: offline feedback (§4.3) — the loop, T rounds without the iteration prefix, on
  ``train_feedback_requests`` training instructions with the warm-up retriever → the training trace;
- ``train``: iteration-aware training (Eqs. 5–6) on that trace, from the warm-up model (or from the
  base encoder: Table 4's "w/o warm-up");
- ``test``: the loop at inference (§4.4) on a test group's LLM sample → a test trace;
- ``toolretriever``: the warm-up model's retrieval of a whole test group (a round-0 trace, no LLM).

A *trace* holds, per instruction, the instruction of every round and its top-``DEPTH`` documents with
scores, and the LLM seconds of each round; it is committed (``data/feedback_traces/``), so every
table is re-derived from traces alone. Its file name hashes everything that decides its content.

*Conditions*: "Ours" is the profile's configuration; the rows of Tables 4, 6 and 7 are changes of it
(:data:`CONDITIONS`). They are trained on the main run's training trace — the offline feedback is
generated once, with the main warm-up retriever, instead of once per condition (a budget choice, said
in the notebook) — and tested on the ``ablation_requests`` sample of I2.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, replace
import os
from pathlib import Path
from typing import Mapping

import pandas as pd

from toolkit.feedback.loop import Trace, final_run, run_at, stop_when_unchanged

# the committed traces; TOOLKIT_FEEDBACK_TRACES moves them (the paper profile's dry run writes into its scratch directory)
TRACE_DIR = Path(os.environ.get("TOOLKIT_FEEDBACK_TRACES") or Path(__file__).resolve().parents[2] / "data" / "feedback_traces")
# documents kept per round in a trace: NDCG@10 needs 10, hard negatives and the LLM's list K = 10; 30 leaves room for
# Recall@30-style analyses. (Smoke traces written earlier keep 100; the ToolBench document ids are long, so a round
# of 100 took ~6 KB and the standard plan's traces would have been ~45 MB of committed text.)
DEPTH = 30
METRICS = ["ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10"]
GROUPS = ("I1", "I2", "I3")  # "All" is their union (StableToolBench's 765 queries)
ABLATION_GROUP = "I2"        # Tables 4-7 are on I2 (intra-category multi-tool), as the paper
UNCHANGED_STOPS = "Ours (T={T}, unchanged = N/A)"    # Table 5's row of loop.stop_when_unchanged

# Table label -> change of the main configuration (``training`` fields, or ``base``)
CONDITIONS: dict[str, dict[str, dict]] = {
    "4": {"w/o warm-up": {"warmup": False}, "w/o hard-negative": {"hard_negatives": False},
          "w/o joint & hard-neg": {"joint": False, "hard_negatives": False}},
    # mpnet in place of RoBERTa-base (the main run: MiniLM for BERT); its warm-up on a seeded sample of pairs: mpnet
    # trains ~5x slower than MiniLM here, all 44,865 pairs would take about half a day
    "6": {"Ours (RoBERTa-based)": {"base": "mpnet", "warmup_pairs": 5000}},
    "7": {f"Ours (dim={d})": {"embedding_size": d} for d in (300, 512, 768, 1024, 2048)},
}
# Tables whose rows change the warm-up too (the base encoder): each row's ToolRetriever beside it, as the paper's
# Table 6 ("Ours (BERT-based)" -> "ToolRetriever (BERT-based)"), on the same I2 queries
WARMUP_ROWS = {"6": lambda label: label.replace("Ours", "ToolRetriever", 1)}


def _hash(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:10]


def condition_change(cfg, table: str, label: str) -> dict:
    """The change one row of Table ``table`` makes to ``cfg`` (:data:`CONDITIONS`), with Table 6's RoBERTa-class
    base taken from ``cfg.roberta_class_base`` (mpnet; the smoke profile: MiniLM, to check the path quickly)."""
    change = dict(CONDITIONS[table][label])
    if table == "6" and "base" in change:
        change["base"] = cfg.roberta_class_base
    return change


def condition(cfg, table: str, label: str):
    """The configuration of one row of Table ``table``: the main one with that row's change
    (:func:`condition_change`: fields of the experiment, such as ``base``, or of its ``training``)."""
    from dataclasses import fields
    change = condition_change(cfg, table, label)
    top = {k: change.pop(k) for k in list(change) if k in {f.name for f in fields(cfg)}}
    return replace(cfg, **top, train_trace_retriever=cfg.train_trace_retriever or warmup_id(cfg),
                   training=replace(cfg.training, **change))


# --- names ----------------------------------------------------------------------------------------

def warmup_id(cfg) -> str:
    """The warm-up model: base encoder, ToolLens train, the warm-up's own training settings."""
    t = cfg.training
    return f"{cfg.profile}-{cfg.base}-warmup-" + _hash(
        {"pos": cfg.warmup_pos, "pairs": cfg.warmup_pairs, "epochs": t.epochs, "batch": t.batch_size, "lr": t.lr, "warmup": t.warmup_steps,
         "len": t.max_seq_length, "seed": t.seed, "max_steps": cfg.warmup_max_steps, "min_batch": t.min_batch_size})


def model_id(cfg) -> str:
    """The iteration-aware model: its start (warm-up or base), its training trace, its training settings."""
    return f"{cfg.profile}-{cfg.base}-" + _hash(
        {"start": warmup_id(cfg) if cfg.training.warmup else cfg.base, "trace": train_trace_path(cfg).name,
         "training": asdict(cfg.training), "max_steps": cfg.warmup_max_steps})


# FeedbackConfig fields added after traces were committed, with the value those traces were made with: at that value
# a field stays out of the trace names, so the committed traces keep theirs
LATER_FEEDBACK_FIELDS = {"brevity": "none", "tool_format": "text", "unchanged": "retrieve",
                         "reasoning_repeat_penalty": 1.0, "reasoning_dry": 0.0}


def feedback_key(feedback) -> dict:
    """``asdict(feedback)`` without the :data:`LATER_FEEDBACK_FIELDS` that hold their old value."""
    return {k: v for k, v in asdict(feedback).items()
            if not (k in LATER_FEEDBACK_FIELDS and v == LATER_FEEDBACK_FIELDS[k])}


def _llm_part(cfg) -> dict:
    return {"llm": cfg.llm, "feedback": feedback_key(cfg.feedback), "rounds": cfg.training.rounds}


def train_trace_path(cfg) -> Path:
    """The offline feedback on training instructions, named by the warm-up retriever that produced it:
    every condition reads the main run's (``train_trace_retriever``, set by :func:`condition`)."""
    retriever = cfg.train_trace_retriever or warmup_id(cfg)
    return TRACE_DIR / f"{cfg.profile}-train-" \
        f"{_hash({'retriever': retriever, 'n': cfg.train_feedback_requests, 'seed': cfg.sample_seed, **_llm_part(cfg)})}.jsonl"


def test_trace_path(cfg, group: str, n: int | None) -> Path:
    """The loop on ``n`` queries (nested sample) of ``group`` with the condition's trained model."""
    return TRACE_DIR / f"{cfg.profile}-test-{group}-" \
        f"{_hash({'model': model_id(cfg), 'n': n, 'seed': cfg.sample_seed, 'corpus': cfg.toolbench_corpus, **_llm_part(cfg)})}.jsonl"


def toolretriever_trace_path(cfg, group: str) -> Path:
    """The warm-up model's retrieval of the whole group (no LLM)."""
    return TRACE_DIR / f"{cfg.profile}-toolretriever-{group}-" \
        f"{_hash({'model': warmup_id(cfg), 'corpus': cfg.toolbench_corpus, 'n': cfg.baseline_queries})}.jsonl"


# --- trace files ----------------------------------------------------------------------------------

def save_traces(traces: Mapping[str, Trace], path: Path, meta: dict | None = None) -> Path:
    """One JSON line per instruction (instructions, runs as [doc, score] lists, LLM seconds and step 3's
    yes/no answers per round),
    then ``<path>.meta.json`` (what produced it: models, stage timings)."""
    rows = [{"qid": t.qid, "instructions": t.instructions,
             "runs": [[[d, round(s, 6)] for d, s in list(r.items())[:DEPTH]] for r in t.runs],
             "seconds": [round(s, 3) for s in t.seconds], "answers": t.answers} for t in traces.values()]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    tmp.replace(path)
    meta_path(path).write_text(json.dumps(meta or {}, indent=1, default=str) + "\n")
    return path


def meta_path(path: Path) -> Path:
    return path.with_name(path.name.removesuffix(".jsonl") + ".meta.json")


def load_traces(path: Path, skip_damaged: bool = False) -> dict[str, Trace]:
    """The traces of a trace file by qid. A line that is not a trace is an error naming it, or, with
    ``skip_damaged`` (a resumed stage), left out with a warning so that the stage regenerates that instruction alone
    and rewrites the file without it. A second line for a qid already read (an edited or concatenated file: which of
    the two is the run's cannot be told) is always an error naming both lines."""
    import logging

    from toolkit import provenance
    out, line_of = {}, {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            try:
                r = json.loads(line)
                tr = Trace(r["qid"], r["instructions"], [dict(x) for x in r["runs"]], [], r["seconds"],
                           r.get("answers", []))
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
                if skip_damaged:
                    logging.getLogger("toolkit.feedback").warning(
                        "%s:%d: not a feedback trace line (%s); skipped, its instruction is traced again", path, lineno, e)
                    continue
                raise ValueError(f"{path}:{lineno}: not a feedback trace line ({e}); `python -m toolkit.feedback` "
                                 f"regenerates that instruction alone when its stage is rerun (or restore the "
                                 f"committed file: git checkout -- {path})") from e
            if tr.qid in out:
                raise ValueError(f"{path}:{lineno}: a second trace for instruction {tr.qid!r} (the first is on line "
                                 f"{line_of[tr.qid]}); a trace file holds one line per instruction. Restore the "
                                 f"committed file (git checkout -- {path}) or delete the wrong line")
            out[tr.qid], line_of[tr.qid] = tr, lineno
    provenance.record_input(path, records=len(out), kind="feedback trace")
    return out


def trace_complete(path: Path, qids) -> bool:
    """The trace file at ``path`` exists and holds every instruction in ``qids``."""
    return path.is_file() and set(qids) <= set(load_traces(path))


def load_meta(path: Path) -> dict:
    p = meta_path(path)
    if not p.is_file():
        return {}
    try:
        meta = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{p}: the trace's meta file is damaged ({e}); restore it (git checkout -- {p}) or delete "
                         f"it with its trace {path.name} and rerun the stage") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{p}: the trace's meta file must hold a JSON object, got {type(meta).__name__}")
    # its wall_s, sizes and models are replayed into the results (Table 5's machine time): an input like the trace
    from toolkit import provenance
    provenance.record_input(p, kind="feedback trace meta")
    return meta


# --- evaluation -----------------------------------------------------------------------------------

def trace_values(traces: Mapping[str, Trace], qrels: Mapping, t: int | None = None,
                 metrics=METRICS, per_query: bool = False) -> dict:
    """NDCG@m of the retrieval after round ``t`` (None: the last round each instruction reached),
    ToolBench's tie handling, over the traced instructions (``per_query``: ``{metric: {qid: value}}``)."""
    from toolkit.metrics import evaluate
    run = final_run(traces) if t is None else run_at(traces, t)
    return evaluate(run, {q: qrels[q] for q in traces}, list(metrics), ties="sklearn", per_query=per_query)


def seconds_per_instruction(traces: Mapping[str, Trace], t: int) -> float:
    """Table 5's efficiency: the LLM seconds an instruction spends in rounds 1..t (fewer when it left the
    loop with "N/A" earlier), averaged over instructions."""
    return sum(sum(tr.seconds[:t]) for tr in traces.values()) / max(len(traces), 1)


def rows(label: str, method: str, values: Mapping[str, float], n: int, ours_only: bool = False,
         per_query: Mapping[str, Mapping[str, float]] | None = None) -> list[dict]:
    """Rows in :func:`toolkit.feedback.tables.baseline_values`'s long format, with ``per_query``
    (``{qid: value}`` of the row's metric, for paired significance tests) where given."""
    return [{"set": label, "method": method, "metric": m, "n": n, "value": v, "ours_only": ours_only,
             "per_query": (per_query or {}).get(m)} for m, v in values.items()]


def with_all(traces_by_group: Mapping[str, Mapping[str, Trace]]) -> dict[str, Mapping[str, Trace]]:
    """Add "All" = the union of I1, I2 and I3 when all three are there (the 765 queries are exactly theirs)."""
    out = dict(traces_by_group)
    if all(g in out for g in GROUPS):
        out["All"] = {q: tr for g in GROUPS for q, tr in out[g].items()}
    return out


def case_study(traces: Mapping[str, Trace], ds, k: int = 5, loss: bool = False) -> dict | None:
    """Figure 4: of the instructions whose NDCG@``k`` rose from round 0 to their last round, the one whose text the
    LLM changed in the most rounds (a "refinement" into the same text is not counted), then whose gold tools rose
    most, then the one with most rounds (ties: the first in the dataset's order); None when no changed instruction
    rose. ``loss``: the same among the instructions whose NDCG@``k`` fell (the paper shows only a gain)."""
    from toolkit.metrics import evaluate
    best = None
    sign = -1 if loss else 1
    for q in ds.queries:
        tr = traces.get(q)
        changed = 0 if tr is None else text_changes(tr)
        if not changed:
            continue
        first, last = (evaluate({q: tr.runs[i]}, {q: ds.qrels[q]}, [f"ndcg@{k}"], ties="sklearn")[f"ndcg@{k}"]
                       for i in (0, -1))
        key = (changed, sign * (last - first), len(tr.instructions))
        if key[1] > 0 and (best is None or key > best[0]):
            best = (key, q, first, last)
    if best is None:
        return None
    (changed, _, _), q, first, last = best
    tr = traces[q]
    gold = set(d for d, r in ds.qrels[q].items() if r > 0)
    lines = []
    for t, instruction in enumerate(tr.instructions):
        lines.append(f"Iteration {t}: {instruction}")
        for rank, d in enumerate(tr.top(t, k), 1):
            doc = ds.corpus[d]
            lines.append(f"   {rank}. {'*' if d in gold else ' '} {doc.tool} / {doc.api}")
    return {"qid": q, "rounds": len(tr.instructions) - 1, "changed": changed, f"ndcg@{k} first": first,
            f"ndcg@{k} last": last, "text": "\n".join(lines)}


def round_values(traces: Mapping[str, Trace], qrels: Mapping, rounds: int, metrics=METRICS) -> dict[str, dict]:
    """The loop's traces as retrieval round by round: per round t = 0..``rounds``, NDCG@m of the retriever that
    produced them on q^t (round 0: the original instructions; an instruction that left the loop keeps its last
    list), ``{f"round {t}": {"values": {metric: mean}, "per_query": {metric: {qid: value}}, "rewritten": share}}``
    -- ``rewritten`` (rounds >= 1): the share of instructions whose round-t refinement differs from q^(t-1) (the
    LLM may "refine" an instruction into itself, which retrieves the same text again). On the offline feedback
    (§4.3): what the feedback alone does to a fixed retriever, before any training on it; on a test trace:
    Table 5's rounds."""
    out = {}
    n = max(len(traces), 1)
    for t in range(rounds + 1):
        pq = trace_values(traces, qrels, t, metrics, per_query=True)
        out[f"round {t}"] = {"values": {m: sum(v.values()) / len(v) if v else float("nan") for m, v in pq.items()},
                             "per_query": pq}
        if t:
            out[f"round {t}"]["rewritten"] = sum(tr.changed(t) for tr in traces.values()) / n
    return out


def all_gold_in(judgements: Mapping[str, float], ranked) -> bool:
    """Every relevant document of one query (``judgements``: its qrels) is among ``ranked`` (the list the LLM saw)."""
    return {d for d, r in judgements.items() if r > 0} <= set(ranked)


def decision_audit(traces_by_group: Mapping[str, Mapping[str, Trace]], qrels_by_group: Mapping[str, Mapping],
                   k: int = 10) -> pd.DataFrame:
    """Round 1's refinement decision against the retrieval it judged: per group, how often the LLM asked for no
    refinement ("N/A": both answers "yes", or decision="model"'s "N/A"), how often the round-0 top ``k`` already
    held every gold API (the decision's "all goals solved" made strict), and how often the two agree; with
    decision="answers", how often each of the two questions (Q1 all goals solved? Q2 appropriate tools ranked
    highest?) was answered "yes" and, for Q1, how often that "yes" was right by the same strict reading."""
    rows = []
    for group, traces in traces_by_group.items():
        asked = list(_asked(traces).values())
        if not asked:
            continue
        qrels = qrels_by_group[group]
        na = [len(tr.instructions) == 1 for tr in asked]
        covered = [all_gold_in(qrels[tr.qid], tr.top(0, k)) for tr in asked]
        rows.append({"set": group, "n": len(asked), "N/A at round 1": sum(na) / len(asked),
                     f"all gold in top {k}": sum(covered) / len(asked),
                     "agreement": sum(a == c for a, c in zip(na, covered)) / len(asked),
                     "N/A with gold missing": sum(a and not c for a, c in zip(na, covered)) / len(asked)})
        answered = [(tr.answers[0], c) for tr, c in zip(asked, covered) if tr.answers and tr.answers[0]]
        if answered:
            q1_yes = [c for a, c in answered if a[0] == "yes"]
            rows[-1].update({"answered": len(answered), "Q1 yes": len(q1_yes) / len(answered),
                             "Q2 yes": sum(a[1] == "yes" for a, _ in answered) / len(answered),
                             # the rule's own "N/A"; the rest of "N/A at round 1" is a refinement that returned the
                             # instruction unchanged (unchanged="na") or parsed to nothing
                             "both yes": sum(tuple(a) == ("yes", "yes") for a, _ in answered) / len(answered),
                             "Q1 yes with all gold": sum(q1_yes) / len(q1_yes) if q1_yes else float("nan")})
    return pd.DataFrame(rows)


REFINEMENT_KINDS = ("N/A at round 1", "text never changed", "text changed")


def text_changes(tr: Trace) -> int:
    """The rounds whose refinement changed the instruction's text (a "refinement" into the same text is not one)."""
    return sum(tr.changed(t) for t in range(1, len(tr.instructions)))


def refinement_kind(tr: Trace) -> str:
    """What the LLM did to one instruction over the loop: asked for no refinement at round 1, "refined" it into
    the same text every round (only the "Iteration t" prefix can move its list), or changed its text at least once."""
    if len(tr.instructions) == 1:
        return REFINEMENT_KINDS[0]
    return REFINEMENT_KINDS[2 if text_changes(tr) else 1]


def _asked(traces: Mapping[str, Trace]) -> dict[str, Trace]:
    """The instructions that reached round 1 (a trace cut before the LLM was asked has no seconds)."""
    return {q: tr for q, tr in traces.items() if tr.seconds}


def refinement_effect(traces_by_group: Mapping[str, Mapping[str, Trace]], qrels_by_group: Mapping[str, Mapping],
                      rounds: int, metric: str = "ndcg@5") -> pd.DataFrame:
    """Where the loop's change over rounds comes from: per set, its instructions split by :func:`refinement_kind`,
    with their n, share and mean ``metric`` after each round 0..``rounds`` (:func:`round_values`). The n-weighted
    mean of a set's rows is that round's value (Table 5 on I2), so the split says which instructions move it:
    ``contribution`` = share x (round T - round 0) sums over a set's rows to the set's change from round 0 to T."""
    rows = []
    for group, traces in traces_by_group.items():
        asked = _asked(traces)
        if not asked:
            continue
        r = round_values(asked, qrels_by_group[group], rounds, [metric])
        per_round = [r[f"round {t}"]["per_query"][metric] for t in range(rounds + 1)]
        for kind in REFINEMENT_KINDS:
            qs = [q for q, tr in asked.items() if refinement_kind(tr) == kind]
            rows.append({"set": group, "instructions": kind, "n": len(qs), "share": len(qs) / len(asked),
                         **{f"round {t}": sum(v[q] for q in qs) / len(qs) if qs else float("nan")
                            for t, v in enumerate(per_round)},
                         "contribution": sum(per_round[-1][q] - per_round[0][q] for q in qs) / len(asked)})
    return pd.DataFrame(rows)


def condition_rounds(traces_by_row: Mapping[tuple[str, str], Mapping[str, Trace]], qrels: Mapping, rounds: int,
                     reference: str = "Ours", metric: str = "ndcg@5") -> pd.DataFrame:
    """Tables 4, 6, 7 split into what training did and what the loop did: per row (``(table, method)`` -> its
    traces on the same I2 queries), ``metric`` at round 0 (the condition's retriever on "Iteration 0" instructions,
    before any feedback) and after its last round, the loop's change between them, the share of instructions that
    answered "N/A" at round 1, and the paired randomization test of round 0 against ``reference``'s round 0 (the
    main run, Table 4's "Ours"): whether a condition's row differs because of its retriever or because of its loop."""
    from toolkit.significance import compared
    ref = next((tr for (_, m), tr in traces_by_row.items() if m == reference), None)
    ref0 = trace_values(ref, qrels, 0, [metric], per_query=True)[metric] if ref else None
    out = []
    for (table, method), traces in traces_by_row.items():
        first, last = (trace_values(traces, qrels, t, [metric], per_query=True)[metric] for t in (0, None))
        asked = _asked(traces)
        test = (compared(f"{method} vs {reference} at round 0", first, {q: ref0[q] for q in first})
                if ref0 is not None and method != reference and set(first) <= set(ref0) else None)
        out.append({"table": table, "method": method, "n": len(traces),
                    "round 0": sum(first.values()) / len(first), f"round {rounds}": sum(last.values()) / len(last),
                    "loop": (sum(last.values()) - sum(first.values())) / len(first),
                    "N/A at round 1": sum(len(tr.instructions) == 1 for tr in asked.values()) / max(len(asked), 1),
                    f"round 0 vs {reference}": None if test is None else test["diff"],
                    "p": None if test is None else test["p"]})
    return pd.DataFrame(out)


def rewrite_moves(traces_by_group: Mapping[str, Mapping[str, Trace]], qrels_by_group: Mapping[str, Mapping],
                  metric: str = "ndcg@5") -> pd.DataFrame:
    """Per set, the instructions whose round-1 refinement changed the text: how many moved up / stayed / moved
    down in ``metric`` at round 1 against round 0 (:func:`toolkit.significance.win_tie_loss`), and the median
    words the rewrite added (negative: removed) among those that moved up and among those that moved down -- a
    rewrite that drops a sub-request drops the words that found that request's tool."""
    from statistics import median

    from toolkit.significance import win_tie_loss
    rows = []
    for group, traces in traces_by_group.items():
        asked = _asked(traces)
        rewritten = {q: tr for q, tr in asked.items() if tr.changed(1)}
        if not rewritten:
            continue
        before, after = (trace_values(rewritten, qrels_by_group[group], t, [metric], per_query=True)[metric] for t in (0, 1))
        row = {"set": group, "share": len(rewritten) / len(asked), **win_tie_loss(after, before)}
        for way, sign in (("better", 1), ("worse", -1)):
            words = [len(tr.instructions[1].split()) - len(tr.instructions[0].split()) for q, tr in rewritten.items()
                     if sign * (after[q] - before[q]) > 1e-9]
            row[f"words added ({way})"] = median(words) if words else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def pending_row(table: str, condition_label: str, group: str, command: str, why: str = "no trace") -> dict:
    return {"table": table, "condition": condition_label, "set": group, "needs": command, "why": why}


def command(stage: str, cfg, group: str | None = None, table: str | None = None, label: str | None = None,
            n: int | None = None) -> str:
    """The command that writes a stage's trace for ``cfg``: ``--llm`` when cfg's LLM is not its profile's, ``--n``
    for a sample other than the group's."""
    cond = f" --condition '{table}:{label}'" if table else ""
    grp = f" --group {group}" if group else ""
    from toolkit.feedback.config import PROFILES, with_fair_feedback
    fair = " --fair" if cfg.feedback == with_fair_feedback(cfg).feedback else ""
    llm = f" --llm {cfg.llm}" if cfg.llm != PROFILES[cfg.profile].llm else ""
    size = f" --n {n}" if n is not None and group and n != cfg.sample_size(group) else ""
    return f"python -m toolkit.feedback {stage} --profile {cfg.profile}{fair}{llm}{grp}{size}{cond}"


def load_or_pending(path: Path, needed, pending: list, row: dict, partial: bool = False) -> dict[str, Trace] | None:
    """The traces at ``path`` if they cover every qid in ``needed``; else ``None`` and a pending row -- or, with
    ``partial``, while the trace's generation is in progress, the instructions traced so far (and a pending row
    saying how many), so a long generation's committed part is evaluated, with its n, before it is complete."""
    if not path.is_file():
        pending.append(row)
        return None
    tr = load_traces(path)
    missing = [q for q in needed if q not in tr]
    if missing:
        in_progress = load_meta(path).get("complete") is False
        done = len(needed) - len(missing)
        why = (f"in progress: {done} of {len(needed)} instructions traced"
               + (f"; its rows use those {done}" if partial and done else "") if in_progress else
               f"trace lacks {len(missing)} of {len(needed)} queries (sample changed?)")
        pending.append({**row, "why": why})
        return {q: tr[q] for q in needed if q in tr} if partial and in_progress and done else None
    return {q: tr[q] for q in needed}


def tables_frame(values: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """Method rows x metric columns (x100), one set."""
    v = values[values.metric.isin(metrics)]
    return (v.pivot_table(index="method", columns="metric", values="value", sort=False)[metrics] * 100).round(2)


# --- what the notebook evaluates ------------------------------------------------------------------

from toolkit.feedback.data import IN_DOMAIN, OFFLINE_SET, OUT_OF_DOMAIN  # noqa: E402


def test_datasets(cfg) -> dict:
    """The test sets as the profile evaluates them (labels I1, I2, I3, All, UltraTool). With ``cfg.max_docs``
    (smoke: fast), each group keeps its first ``baseline_queries`` queries (nested sample) and a corpus of
    their gold tools plus a seeded sample of the others, up to ``max_docs`` documents; All stays the union."""
    import random

    from toolkit.data.contract import RetrievalDataset
    from toolkit.feedback.data import test_sets
    tests = test_sets(corpus=cfg.toolbench_corpus)
    if not cfg.max_docs:
        return tests
    out = {}
    for label, full in tests.items():
        if label == "All":
            continue
        ds = full.nested_sample(cfg.baseline_queries, cfg.sample_seed)
        gold = list(dict.fromkeys(d for q in ds.qrels for d in ds.qrels[q]))
        others = sorted(d for d in ds.corpus if d not in set(gold))
        keep = gold + random.Random(cfg.sample_seed).sample(others, max(0, min(len(others), cfg.max_docs - len(gold))))
        out[label] = RetrievalDataset(f"{ds.name} (smoke corpus)", {d: ds.corpus[d] for d in keep}, ds.queries, ds.qrels,
                                      f"{ds.description}; corpus cut to {len(keep)} documents")
    groups = [out[g] for g in GROUPS]
    out["All"] = RetrievalDataset("toolbench-all (smoke: I1-I3 samples)", {d: doc for g in groups for d, doc in g.corpus.items()},
                                  {q: x for g in groups for q, x in g.queries.items()},
                                  {q: r for g in groups for q, r in g.qrels.items()})
    return {label: out[label] for label in tests}


def llm_sample(cfg, tests: Mapping, label: str) -> list[str]:
    """The qids of ``label``'s LLM sample (All: the union of I1, I2 and I3's samples)."""
    if label == "All":
        return [q for g in GROUPS for q in llm_sample(cfg, tests, g)]
    return list(tests[label].nested_sample(cfg.sample_size(label), cfg.sample_seed).queries)


def ablation_sample(cfg, tests: Mapping) -> list[str]:
    """Tables 4, 6, 7's I2 queries: ``ablation_requests`` of one seeded shuffle, so within the I2 LLM sample."""
    n = cfg.ablation_requests
    size = cfg.sample_size(ABLATION_GROUP)
    if size is not None and n is not None:
        n = min(n, size)
    return list(tests[ABLATION_GROUP].nested_sample(n, cfg.sample_seed).queries)


@dataclass(frozen=True)
class LLMStage:
    """One trace the LLM loop writes: the offline feedback on training instructions, a test group's sample with
    the main configuration, or a Table 4/6/7 condition's I2 sample. ``row``: the budget row it counts under."""
    name: str                  # "training feedback", "test I2", "4: w/o warm-up"
    row: str
    cfg: object                # the configuration it runs (a condition's, for Tables 4, 6, 7)
    path: Path
    qids: tuple[str, ...]      # the instructions it traces (the sample, in the dataset's order)
    group: str | None = None   # test group; None: the training instructions
    n: int | None = None       # the sample size the trace is keyed by (None: the whole group)
    condition: tuple[str, str] | None = None    # (table, row label) of a condition

    @property
    def command(self) -> str:
        if self.group is None:
            return command("train-feedback", self.cfg)
        return command("test", self.cfg, self.group, *(self.condition or (None, None)))



def llm_stages(cfg, tests: Mapping) -> list[LLMStage]:
    """Every LLM trace the notebook reads, in the order ``python -m toolkit.feedback all`` writes them: the
    offline feedback (every test needs the model trained on it), the main run's test groups (I2 first: Tables 4-7
    and Table 5 read it), then the Tables 4, 6, 7 conditions on the I2 ablation sample. The one list that
    ``all``, :func:`toolkit.feedback.collect.collect` and :func:`toolkit.feedback.budget.progress` share."""
    from toolkit.feedback.data import training_set
    train = training_set("train").nested_sample(cfg.train_feedback_requests, cfg.sample_seed)
    out = [LLMStage("training feedback", "training feedback", cfg, train_trace_path(cfg), tuple(train.queries))]
    for g in (ABLATION_GROUP, "I3", "I1", *OUT_OF_DOMAIN):          # I3 before I1: all of it is planned, 61 queries
        n = cfg.sample_size(g)
        out.append(LLMStage(f"test {g}", f"test {g}", cfg, test_trace_path(cfg, g, n), tuple(llm_sample(cfg, tests, g)),
                            g, n))
    conditions = [(t, label) for t, rows in CONDITIONS.items() for label in rows]
    row = f"Tables {', '.join(CONDITIONS)} ({len(conditions)} conditions)"
    sample = tuple(ablation_sample(cfg, tests))
    for t, label in conditions:
        c = condition(cfg, t, label)
        out.append(LLMStage(f"{t}: {label}", row, c, test_trace_path(c, ABLATION_GROUP, cfg.ablation_requests), sample,
                            ABLATION_GROUP, cfg.ablation_requests, (t, label)))
    return out
