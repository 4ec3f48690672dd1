"""Controls of the feedback experiment: the loop and the training with the LLM's part removed, or given
for free, so that a gap between Ours and ToolRetriever can be attributed.

- **Same steps, no feedback** (the matched-budget control): Ours' iteration-aware fine-tune -- the same warm-up
  start, the same training-trace rows, examples, weights alpha^t, "Iteration t" prefixes, hard negatives (each
  round's recorded top-K), loss, batch size and schedule -- with every refinement q^t replaced by the original
  instruction q^0. Tested at round 0 ("Iteration 0: q"), as Ours (T = 0).
- **Oracle feedback** (the positive control): the qrels take the LLM's place in the loop. A round's refinement is
  the original instruction followed by each gold API's name and the first sentence of its description
  (:func:`oracle_refinement`); "N/A" when every gold API is already among the K tools shown. It runs through the
  same loop (T rounds, the same search) with Ours' retriever (under the "Iteration t" prefix) and with ToolRetriever
  (no prefix). It bounds what good feedback gives each retriever: if it does not help, the pipeline has a defect.
- **ToolRetriever + loop** (the LLM's loop on the warm-up retriever: no prefix, no feedback training;
  :func:`toolretriever_loop_test`, ``python -m toolkit.feedback toolretriever-loop --fair --group I2``) runs with the
  fair LLM step (:data:`toolkit.feedback.config.FAIR_FEEDBACK`: caps that do not cut the reasoning), so its answers
  are new ones; :func:`toolkit.feedback.collect.collect` reads its trace as it grows (rows with their n).

The decomposition of the gap on one set's LLM sample (:func:`decomposition`, each part a paired difference with its
randomization p, :func:`toolkit.significance.compared`):

    Ours - ToolRetriever  =  [Ours(T=0) - ToolRetriever]        training part
                               = [SameSteps - ToolRetriever]     ... of which more fine-tuning alone
                               + [Ours(T=0) - SameSteps]         ... and training on the feedback text
                          +  [Ours - Ours(T=0)]                 loop part
    ToolRetriever + loop - ToolRetriever                       the loop alone, on the warm-up retriever

Models go to ``cache_dir()/models/feedback/`` (never committed); the traces to ``data/feedback_traces/`` (committed).
``python -m toolkit.feedback controls`` writes every control trace; no LLM is loaded.
"""
from __future__ import annotations

import re
from dataclasses import asdict
from pathlib import Path
from typing import Mapping

from toolkit.feedback import experiment as X
from toolkit.feedback import stages
from toolkit.feedback.loop import Trace
from toolkit.feedback.round import RoundFeedback

SAME_STEPS = "Same steps, no feedback"
ORACLE = "Oracle feedback"
ORACLE_TOOLRETRIEVER = "Oracle feedback (ToolRetriever)"
OURS_T0 = "Ours (T=0)"
TOOLRETRIEVER_LOOP = "ToolRetriever + loop"
RETRIEVERS = ("ours", "toolretriever")          # whose retriever the oracle loop runs with
HINT_CHARS = 200                                # an oracle hint's description sentence is cut to this many characters


# --- the matched-budget control ---------------------------------------------------------------------

def same_steps_traces(traces: Mapping[str, Trace]) -> dict[str, Trace]:
    """The training trace with every round's instruction replaced by the original one: same rounds, same recorded
    top-K lists (so the same hard negatives), same weights -- only the feedback text is gone."""
    return {q: Trace(tr.qid, [tr.instructions[0]] * len(tr.instructions), tr.runs, [], tr.seconds, tr.answers)
            for q, tr in traces.items()}


def same_steps_id(cfg) -> str:
    return f"{cfg.profile}-{cfg.base}-samesteps-" + X._hash(
        {"control": "same steps, no feedback", "start": X.warmup_id(cfg), "trace": X.train_trace_path(cfg).name,
         "training": asdict(cfg.training), "max_steps": cfg.warmup_max_steps})


def same_steps_model(cfg) -> tuple[Path, dict]:
    """Train (or load from the cache) the matched-budget model: :func:`toolkit.feedback.stages.train` with the
    training trace of :func:`same_steps_traces`. The offline feedback must exist: this control needs no LLM."""
    from toolkit.feedback.data import training_set
    from toolkit.feedback.training import feedback_examples, train_iteration_aware
    from toolkit.training import trained
    out_dir = stages.models_dir() / same_steps_id(cfg)
    if done := trained(out_dir):
        return done
    trace_path = X.train_trace_path(cfg)
    train_ds = training_set("train")
    needed = train_ds.nested_sample(cfg.train_feedback_requests, cfg.sample_seed).queries
    if not X.trace_complete(trace_path, needed):
        if cfg.run_missing:
            stages.train_feedback(cfg)
        else:
            raise FileNotFoundError(f"{trace_path}: the offline feedback trace is missing or incomplete; the "
                                    f"'{SAME_STEPS}' control trains on its rows (python -m toolkit.feedback "
                                    f"train-feedback --profile {cfg.profile})")
    traces = same_steps_traces(X.load_traces(trace_path))
    examples = feedback_examples(traces, train_ds.qrels, train_ds.corpus, cfg.training)
    start = stages.warmup(cfg)[0] if cfg.training.warmup else cfg.base
    return train_iteration_aware(examples, out_dir, str(start), cfg.training, log=stages._log,
                                 max_steps=cfg.warmup_max_steps)


def same_steps_trace_path(cfg, group: str, n: int | None) -> Path:
    return X.TRACE_DIR / f"{cfg.profile}-control-samesteps-{group}-" \
        f"{X._hash({'model': same_steps_id(cfg), 'n': n, 'seed': cfg.sample_seed, 'corpus': cfg.toolbench_corpus})}.jsonl"


def same_steps_test(cfg, group: str) -> Path:
    """The matched-budget model's round 0 ("Iteration 0: q") on ``group``'s LLM sample."""
    from toolkit.feedback.loop import iterate
    n = cfg.sample_size(group)
    out = same_steps_trace_path(cfg, group, n)
    ds = X.test_datasets(cfg)[group].nested_sample(n, cfg.sample_seed)
    if X.trace_complete(out, ds.queries):
        return out
    model, stats = same_steps_model(cfg)
    traces = iterate(ds.query_texts(), stages.dense_search(model, ds.corpus), ds.corpus, llm=None, rounds=0,
                     prefix=cfg.training.prefix, progress=False)
    X.save_traces(traces, out, {"stage": "control-samesteps", "group": group, "n": len(ds.queries),
                                "model": same_steps_id(cfg), "training_stats": stats})
    return out


# --- the positive control ---------------------------------------------------------------------------

def _first_sentence(text: str, limit: int = HINT_CHARS) -> str:
    text = " ".join((text or "").split())
    first = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0]
    return first if len(first) <= limit else first[:limit].rsplit(" ", 1)[0]


def api_hint(doc) -> str:
    """A gold API as the oracle names it: "<tool>, <api>: <first sentence of its description>" (names with spaces
    for underscores; one name when tool and API are the same, as UltraTool's)."""
    names = [doc.tool] if doc.tool == doc.api else [doc.tool, doc.api]
    name = ", ".join(n.replace("_", " ") for n in names if n)
    desc = _first_sentence(doc.meta.get("description") or "")
    return f"{name}: {desc}" if desc else name


def oracle_refinement(instruction: str, gold_docs) -> str:
    """The original instruction followed by one hint per gold API (:func:`api_hint`), each ended by a period."""
    hints = " ".join(h if h.endswith((".", "!", "?")) else h + "." for h in map(api_hint, gold_docs))
    return f"{instruction} {hints}".strip()


def oracle_round(qrels: Mapping[str, Mapping[str, int]], corpus):
    """:func:`toolkit.feedback.loop.iterate`'s ``round_fn`` for the oracle: "N/A" when the shown tools hold every
    gold API of the instruction, else :func:`oracle_refinement` of the original instruction (the same text every
    round it is asked, so later rounds differ only by the "Iteration t" prefix and the list it retrieves)."""
    def round_fn(tr: Trace, shown) -> RoundFeedback:
        gold = [d for d, r in qrels[tr.qid].items() if r > 0]
        if set(gold) <= {doc.doc_id for doc in shown}:
            return RoundFeedback("", "", "", None, 0.0)
        refined = oracle_refinement(tr.instructions[0], [corpus[d] for d in gold if d in corpus])
        return RoundFeedback("", "", refined, refined, 0.0)
    return round_fn


def oracle_trace_path(cfg, group: str, n: int | None, retriever: str) -> Path:
    model = X.model_id(cfg) if retriever == "ours" else X.warmup_id(cfg)
    return X.TRACE_DIR / f"{cfg.profile}-control-oracle-{retriever}-{group}-" \
        f"{X._hash({'model': model, 'n': n, 'seed': cfg.sample_seed, 'corpus': cfg.toolbench_corpus, 'rounds': cfg.training.rounds, 'k': cfg.feedback.k, 'hint': HINT_CHARS})}.jsonl"


def oracle_test(cfg, group: str, retriever: str = "ours") -> Path:
    """The oracle loop on ``group``'s LLM sample with Ours' retriever (``"ours"``, "Iteration t" prefix) or with
    ToolRetriever (``"toolretriever"``, no prefix), T rounds, K tools shown as the LLM's loop."""
    from toolkit.feedback.loop import iterate
    if retriever not in RETRIEVERS:
        raise ValueError(f"retriever must be one of {RETRIEVERS}, got {retriever!r}")
    n = cfg.sample_size(group)
    out = oracle_trace_path(cfg, group, n, retriever)
    ds = X.test_datasets(cfg)[group].nested_sample(n, cfg.sample_seed)
    if X.trace_complete(out, ds.queries):
        return out
    model, stats = stages.train(cfg) if retriever == "ours" else stages.warmup(cfg)
    prefix = cfg.training.prefix if retriever == "ours" else False
    traces = iterate(ds.query_texts(), stages.dense_search(model, ds.corpus), ds.corpus, llm=None,
                     rounds=cfg.training.rounds, cfg=cfg.feedback, prefix=prefix, progress=False,
                     round_fn=oracle_round(ds.qrels, ds.corpus))
    X.save_traces(traces, out, {"stage": f"control-oracle-{retriever}", "group": group, "n": len(ds.queries),
                                "model": X.model_id(cfg) if retriever == "ours" else X.warmup_id(cfg),
                                "training_stats": stats})
    return out


def toolretriever_loop_trace_path(cfg, group: str, n: int | None) -> Path:
    """Named by the warm-up retriever, the sample and the LLM's part (model, feedback settings, rounds), so answers
    under other caps or wording are another trace."""
    return X.TRACE_DIR / f"{cfg.profile}-control-toolretriever-loop-{group}-" \
        f"{X._hash({'model': X.warmup_id(cfg), 'n': n, 'seed': cfg.sample_seed, 'corpus': cfg.toolbench_corpus, **X._llm_part(cfg)})}.jsonl"


def toolretriever_loop_test(cfg, group: str, llm=None, n: int | None = None, chunk: int = 20) -> Path:
    """The LLM's inference loop (§4.4: T rounds, K tools shown, the same prompts as Ours') on ``group``'s LLM sample
    (or its nested sample of ``n``) with the warm-up retriever and no "Iteration t" prefix: the loop's part without
    the feedback training. Resumable (:func:`toolkit.feedback.stages.iterate_to_file`: the trace is rewritten after
    every ``chunk`` instructions; a smaller chunk loses less of a killed run, a larger one keeps the LLM slots fuller).

    The instructions are traced in the sample's shuffle order (``sample_order``), so the first k traced are the
    nested sample of k: a trace in progress already covers the smaller samples (the LLM-scale rows' I2 sample). Each
    instruction's loop is independent of the others, so the order changes no trace."""
    n = cfg.sample_size(group) if n is None else n
    full = X.test_datasets(cfg)[group]
    ds = full.nested_sample(n, cfg.sample_seed)
    out = toolretriever_loop_trace_path(cfg, group, n)
    if X.trace_complete(out, ds.queries):
        return out
    model, stats = stages.warmup(cfg)
    llm = llm or stages.llm_client(cfg)
    texts = ds.query_texts()
    queries = {q: texts[q] for q in full.sample_order(cfg.sample_seed) if q in texts}
    stages.iterate_to_file(queries, stages.dense_search(model, ds.corpus), ds.corpus, llm, out,
                           {"stage": "control-toolretriever-loop", "group": group, "n": len(ds.queries),
                            "model": X.warmup_id(cfg), "warmup_stats": stats, "llm": cfg.llm},
                           rounds=cfg.training.rounds, cfg=cfg.feedback, prefix=False, chunk=chunk)
    return out


# --- is the LLM the limit? ------------------------------------------------------------------------

def scale_row(llm: str) -> str:
    """The row of the loop on ToolRetriever with LLM ``llm``."""
    return f"{TOOLRETRIEVER_LOOP} ({llm})"


def scale_runs(cfg, group: str = X.ABLATION_GROUP) -> list[tuple[str, object, int | None]]:
    """(LLM, its configuration, the sample size its trace is named by) for each of ``cfg.scale_llms``: the fair LLM
    step with that LLM. The profile's own LLM reads its whole-group trace (the main ToolRetriever + loop row; traced
    in sample order, so its first ``scale_queries`` instructions are this sample); the others trace the sample alone."""
    from dataclasses import replace

    from toolkit.feedback.config import with_fair_feedback
    return [(name, with_fair_feedback(replace(cfg, llm=name)),
             cfg.sample_size(group) if name == cfg.llm else cfg.scale_queries) for name in cfg.scale_llms]


def non_refinements(traces: Mapping[str, Trace], qrels: Mapping, cfg, metric: str = "ndcg@5") -> dict:
    """The refinements of ``traces`` that are not refined instructions (:func:`toolkit.llm.parsers.non_instruction`:
    they repeat the refinement request itself, are a bare yes/no, or refuse), counted by reason, and the row's
    ``metric`` beside what it would be had each such instruction left the loop at the round before (keeping that
    round's list), with the paired p of the two: how much of a row's score a small LLM's non-answers explain. The
    loop keeps such a text as it keeps any refinement (the traces stay what was generated); this only measures it."""
    from toolkit.llm import parsers, prompts
    from toolkit.significance import compared
    request = (prompts.FEEDBACK_REFINE_WORDINGS[cfg.feedback.refine_wording] if cfg.feedback.decision == "answers"
               else prompts.FEEDBACK_STEP_REFINEMENT)
    reasons = ("repeats the request", "a bare yes/no", "a refusal")
    refinements, counts, stop_at = 0, dict.fromkeys(reasons, 0), {}
    for q, tr in traces.items():
        for t, text in enumerate(tr.instructions[1:], 1):
            refinements += 1
            why = parsers.non_instruction(text, request)
            if why:
                counts[why] += 1
                stop_at.setdefault(q, t - 1)
    values = X.trace_values(traces, qrels, None, [metric], per_query=True)[metric]
    stopped = dict(values)
    for q, t in stop_at.items():
        stopped[q] = X.trace_values({q: traces[q]}, qrels, t, [metric], per_query=True)[metric][q]
    n = max(len(values), 1)
    test = compared("had they stopped - as generated", stopped, values) if values else {"p": None}
    return {"instructions": len(traces), "refinements": refinements, "not a refinement": sum(counts.values()),
            **counts, metric: sum(values.values()) / n, f"{metric} had they stopped": sum(stopped.values()) / n,
            "p": test["p"]}


def scale_parts(llms) -> tuple[tuple[str, str, str], ...]:
    """The LLM-scale comparisons (column, a, b): the oracle (the ceiling) and each LLM's loop against ToolRetriever,
    each LLM against the next smaller one (``llms`` smallest first), and the oracle against each LLM's loop."""
    return (("oracle - ToolRetriever", ORACLE_TOOLRETRIEVER, "ToolRetriever"),
            *((f"loop ({m}) - ToolRetriever", scale_row(m), "ToolRetriever") for m in llms),
            *((f"{m} - {prev}", scale_row(m), scale_row(prev)) for prev, m in zip(llms, llms[1:])),
            *((f"oracle - loop ({m})", ORACLE_TOOLRETRIEVER, scale_row(m)) for m in llms))


def llm_size_figure(records, llms, path=None, metric: str = "ndcg@5"):
    """The LLM-size trend: each LLM's loop minus ToolRetriever (``records``: :func:`scale_parts` through
    :func:`decomposition`, the parts ``loop (<llm>) - ToolRetriever``) against the LLM's parameters
    (:data:`toolkit.llm.models.PARAMETERS`, log scale), each point with n and its paired p, and the oracle minus
    ToolRetriever on the same queries as a horizontal line above: where the curve heads with a larger LLM. An LLM
    without a parameter count (a server model) or without a row yet is left out and named in the title. Saved to
    ``path`` when given; returns the figure, or None when no LLM has a row."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from toolkit.llm import models
    from toolkit.significance import p_label
    rows = {r["part"]: r for r in records if r["metric"] == metric}
    pts, left = [], []
    for m in llms:
        r = rows.get(f"loop ({m}) - ToolRetriever")
        try:
            size = models.PARAMETERS.get(models.canonical_id(m))
        except (KeyError, ValueError):
            size = None
        (pts if r is not None and size is not None else left).append((m, size, r))
    if not pts:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    xs, ys = [s for _, s, _ in pts], [r["diff"] for _, _, r in pts]
    ax.plot(xs, ys, "o-", color="tab:blue", label=f"LLM loop - ToolRetriever ({metric})")
    for (m, s, r) in pts:
        ax.annotate(f"{m}\n{r['diff']:+.3f}, n={r['n']}, {p_label(r['p'])}", (s, r["diff"]), fontsize=7,
                    textcoords="offset points", xytext=(6, 6))
    if (o := rows.get("oracle - ToolRetriever")) is not None:
        ax.axhline(o["diff"], color="tab:green", ls="--",
                   label=f"oracle feedback - ToolRetriever {o['diff']:+.3f} (n={o['n']})")
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xscale("log")
    from matplotlib.ticker import NullFormatter
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(min(xs) / 1.6, max(xs) * 2.5)
    ax.set_xlabel("LLM parameters (log scale)")
    ax.set_ylabel(f"{metric} minus ToolRetriever")
    ax.set_title("Feedback loop on ToolRetriever, I2 sample: LLM size" +
                 (f" (no row yet: {', '.join(m for m, _, _ in left)})" if left else ""), fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    if path is not None:
        from pathlib import Path
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=120)
    return fig


def scale_text(records, metric: str = "ndcg@5") -> str:
    """The reading of the LLM-scale parts (:func:`scale_parts` through :func:`decomposition`), formatted from its
    records: each part's paired difference with n and p, in :func:`scale_parts`' order, then which LLM's loop comes
    closest to the oracle (the smallest oracle - loop difference)."""
    from toolkit.significance import p_label
    rows = [r for r in records if r["metric"] == metric]
    text = "; ".join(f"{r['part']} {_diff_p(r, with_n=True)}" for r in rows)
    gaps = [r for r in rows if r["part"].startswith("oracle - loop")]
    if gaps:
        best = min(gaps, key=lambda r: r["diff"])
        text += (f". Closest to the oracle: {best['b']}, {best['diff']:.3f} below it "
                 f"(n = {best['n']}, {p_label(best['p'])})")
    return text


def command(cfg, group: str | None = None) -> str:
    return X.command("controls", cfg, group)


def run_all(cfg, groups=None) -> list[Path]:
    """Every control trace (matched budget, oracle with both retrievers) for ``groups`` (default: all test groups)."""
    out = []
    for group in groups or (*X.GROUPS, *X.OUT_OF_DOMAIN):
        out.append(same_steps_test(cfg, group))
        for retriever in RETRIEVERS:
            out.append(oracle_test(cfg, group, retriever))
        stages._log(f"controls {group}: {', '.join(p.name for p in out[-3:])}")
    return out


# --- the decomposition ------------------------------------------------------------------------------

PARTS = (  # (column, a, b): the paired difference a - b
    ("Ours - ToolRetriever", "Ours", "ToolRetriever"),
    ("training part", OURS_T0, "ToolRetriever"),
    ("= more fine-tuning", SAME_STEPS, "ToolRetriever"),
    ("+ training on feedback", OURS_T0, SAME_STEPS),
    ("loop part", "Ours", OURS_T0),
    ("loop on ToolRetriever", TOOLRETRIEVER_LOOP, "ToolRetriever"),
    ("oracle's gain, Ours' retriever", ORACLE, OURS_T0),
    ("oracle's gain, ToolRetriever", ORACLE_TOOLRETRIEVER, "ToolRetriever"),
    ("oracle over ToolRetriever", ORACLE, "ToolRetriever"),
)


DECOMPOSED = ("ndcg@1", "ndcg@3", "ndcg@5")


def decomposition(per_query: Mapping[str, Mapping[str, Mapping[str, Mapping[str, float]]]],
                  metrics=DECOMPOSED, parts=PARTS):
    """Per set and metric, each of ``parts`` (default :data:`PARTS`): its difference on the queries both rows score,
    with n and paired p.
    ``per_query``: ``{set: {method: {metric: {qid: value}}}}`` (a missing method or metric: the part is left out).
    Returns a long frame: set, part, a, b, metric, n, diff, p, differ (the queries whose two values differ: a part
    of exactly 0 may be no change at all, or gains and losses that cancel)."""
    import pandas as pd

    from toolkit.significance import compared
    rows = []
    for label, methods in per_query.items():
        for metric in metrics:
            for part, a, b in parts:
                va, vb = (methods.get(m, {}).get(metric) for m in (a, b))
                if not va or not vb:
                    continue
                qs = [q for q in va if q in vb]
                if not qs:
                    continue
                t = compared(part, {q: va[q] for q in qs}, {q: vb[q] for q in qs})
                rows.append({"set": label, "part": part, "a": a, "b": b, "metric": metric, "n": t["n"],
                             "diff": t["diff"], "p": t["p"], "differ": sum(va[q] != vb[q] for q in qs)})
    return pd.DataFrame(rows, columns=["set", "part", "a", "b", "metric", "n", "diff", "p", "differ"])


def _diff_p(r, with_n: bool = False) -> str:
    """"+0.012 (p=0.034)" of one decomposition or scale record; with ``with_n``, "+0.012 (n = 60, p=0.034)"."""
    from toolkit.significance import p_label
    n = f"n = {r['n']}, " if with_n else ""
    return f"{r['diff']:+.3f} ({n}{p_label(r['p'])})"


def decomposition_table(records, metric: str = "ndcg@5"):
    """Sets x parts: "+0.012 (p=0.034)" cells of one metric, with each set's n (the notebook's table)."""
    import pandas as pd
    d = pd.DataFrame(records)
    if d.empty:
        return d
    d = d[d.metric == metric]
    cell = d.apply(_diff_p, axis=1)
    out = d.assign(cell=cell).pivot_table(index="set", columns="part", values="cell", aggfunc="first", sort=False)
    out = out[[p for p, _, _ in PARTS if p in out.columns]]
    out.insert(0, "n", d.groupby("set", sort=False)["n"].max())
    return out


def decomposition_text(records, metric: str = "ndcg@5") -> str:
    """The reading of :func:`decomposition`, one clause per set, formatted from its records: the gap, its training
    part (more fine-tuning + training on the feedback text) and loop part, the oracle's gains, and which of the three
    components is largest in size -- what explains the gap, with its number and p."""
    import pandas as pd
    d = pd.DataFrame(records)
    if d.empty:
        return ""
    d = d[d.metric == metric]
    cell = _diff_p
    out = []
    for label, g in d.groupby("set", sort=False):
        p = {r["part"]: r for _, r in g.iterrows()}
        if "Ours - ToolRetriever" not in p:
            continue
        s = f"{label} (n = {int(p['Ours - ToolRetriever']['n'])}): Ours − ToolRetriever {cell(p['Ours - ToolRetriever'])}"
        if "training part" in p:
            s += f" = training part {cell(p['training part'])}"
            if "= more fine-tuning" in p:
                s += (f" (more fine-tuning alone {cell(p['= more fine-tuning'])}, training on the feedback text "
                      f"{cell(p['+ training on feedback'])})")
        if "loop part" in p:
            s += f" + loop part {cell(p['loop part'])}"
            if p["loop part"].get("differ") == 0:
                s += (f" (no query's {metric} changed: the refinements moved no gold API within, into or out of "
                      f"the top {metric.split('@')[-1]})")
        if "loop on ToolRetriever" in p:
            s += (f"; the loop alone on ToolRetriever {cell(p['loop on ToolRetriever'])} "
                  f"(n = {int(p['loop on ToolRetriever']['n'])})")
        components = {k: p[k] for k in ("= more fine-tuning", "+ training on feedback", "loop part") if k in p}
        if components:
            name, big = max(components.items(), key=lambda kv: abs(kv[1]["diff"]))
            s += f"; largest: {name.lstrip('=+ ')} ({big['diff']:+.3f})"
        oracle = [f"{k.split(', ')[1]} {cell(p[k])}" for k in ("oracle's gain, Ours' retriever",
                                                              "oracle's gain, ToolRetriever") if k in p]
        if oracle:
            s += "; the oracle's gain with " + ", with ".join(oracle)
        out.append(s)
    return "; ".join(out)
