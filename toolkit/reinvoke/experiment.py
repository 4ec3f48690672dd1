"""The Re-Invoke experiment of notebook ``20_reinvoke``: evaluation sets, the cached generations, the
conditions of Tables 1/3/4/6, and which of them the cache can serve.

A condition is computed only when every input it needs is in the response cache (every query has
intents / a HyDE document, every tool has at least ``m`` synthetic queries); otherwise it is listed as
*pending* with its coverage, never evaluated on the part that happens to be cached. So the notebook
runs while a generation is still filling the cache, and a rerun after the cache grows adds rows.

    sets = eval_sets(config_for("standard"))  # toolkit.reinvoke.config; {dataset: EvalSet(all=..., llm=...)}
    gen = load_generations(sets, "qwen-1.5b", "standard")
    rows, pending = run_conditions(sets, {"qwen-1.5b": gen}, embed)

``m`` synthetic queries per tool (the paper's 10) can be lowered for the ToolBench sets alone with
``m_toolbench``: their pools hold 2,490 distinct APIs against ToolE's 199 tools, so the standard profile
uses one synthetic query per API there (what fits on 2 CPU cores) and records that m with every cell
it feeds.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

import pandas as pd

from toolkit.data.contract import RetrievalDataset, Run
from toolkit.llm.parsers import hyde_name_description
from toolkit.metrics import evaluate
from toolkit.reinvoke import generation as G
from toolkit.reinvoke.config import ReinvokeConfig
from toolkit.reinvoke.pipeline import build_index, hyde_run, reinvoke_run
from toolkit.reinvoke.roundtrip import roundtrip_run
from toolkit.runs import keep

DATASETS = ("toolbench-i1", "toolbench-i2", "toolbench-i3", "toole-single", "toole-multi")
METRICS = ("ndcg@1", "ndcg@5", "recall@1", "recall@5")
BACKBONES = ("qwen-1.5b", "qwen-0.5b")
MAIN_BACKBONE = ReinvokeConfig().main_backbone   # default main backbone (text-bison@001 in the paper); a run's
                                                 # own is its config's, passed to conditions() and record()
KINDS = {"bm25": "BM25", "dense": "dense"}


@dataclass
class EvalSet:
    """``all``: the queries the non-LLM baselines run on; ``llm``: the queries the LLM methods run on
    (a seeded sample for ToolE single-tool, else the same set)."""
    all: RetrievalDataset
    llm: RetrievalDataset


def eval_sets(cfg: ReinvokeConfig, datasets=DATASETS) -> dict[str, EvalSet]:
    """The five evaluation sets. ToolBench I1/I2/I3 are the StableToolBench groups with corpus
    ``cfg.toolbench_corpus``: ``pool`` (the APIs of the queries' candidate pools) or ``library`` (all
    16,427 APIs); the smoke profile keeps a seeded ``smoke_queries`` of the LLM queries (ToolE, and
    ToolBench I3 only: its corpus has 44 APIs)."""
    from toolkit.data import load_dataset
    smoke = cfg.profile == "smoke"
    if smoke:
        datasets = [d for d in datasets if d.startswith("toole") or d == "toolbench-i3"]
    out = {}
    for name in datasets:
        kw = {"corpus": cfg.toolbench_corpus} if name.startswith("toolbench") else {}
        ds = load_dataset(name, **kw)
        llm = ds.sample(cfg.toole_single_sample, seed=cfg.seed) if name == "toole-single" else ds
        if smoke:
            llm = llm.sample(cfg.smoke_queries, seed=cfg.seed)
            ds = llm
        out[name] = EvalSet(ds, llm)
    return out


@dataclass
class Generations:
    """What the response cache holds for one backbone: intents and HyDE documents per dataset (only
    the cached queries), and per dataset's corpus the parsed synthetic query of every sample index
    (``""``: parsed to nothing, ``None``: not cached)."""
    backbone: str
    intents: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    hyde: dict[str, dict[str, str]] = field(default_factory=dict)
    samples: dict[str, dict[str, list[str | None]]] = field(default_factory=dict)

    def has_intents(self, name: str, ds: RetrievalDataset) -> bool:
        return all(q in self.intents.get(name, {}) for q in ds.queries)

    def has_hyde(self, name: str, ds: RetrievalDataset) -> bool:
        return all(q in self.hyde.get(name, {}) for q in ds.queries)

    def complete_m(self, name: str) -> int:
        """The largest m such that samples 0..m-1 of every tool are in the cache (0: none)."""
        def leading(v):
            n = 0
            while n < len(v) and v[n] is not None:
                n += 1
            return n
        return min((leading(v) for v in (self.samples.get(name) or {}).values()), default=0)

    def expansions(self, name: str, m: int) -> dict[str, list[str]]:
        """``{doc_id: parsed synthetic queries of samples 0..m-1}`` (empty parses dropped)."""
        return {d: [q for q in v[:m] if q] for d, v in (self.samples.get(name) or {}).items()}

    def coverage(self, sets: Mapping[str, EvalSet], m: int = 10) -> pd.DataFrame:
        rows = []
        for name, s in sets.items():
            smp = self.samples.get(name, {})
            rows.append({"dataset": name, "backbone": self.backbone, "queries (LLM set)": len(s.llm.queries),
                         "with intents": sum(q in self.intents.get(name, {}) for q in s.llm.queries),
                         "with HyDE doc": sum(q in self.hyde.get(name, {}) for q in s.llm.queries),
                         "tools": len(s.llm.corpus),
                         f"tools with {m} samples": sum(all(x is not None for x in v[:m]) for v in smp.values()),
                         "samples cached": sum(x is not None for v in smp.values() for x in v),
                         "samples parsed empty": sum(x == "" for v in smp.values() for x in v),
                         "complete m": self.complete_m(name)})
        return pd.DataFrame(rows).set_index(["dataset", "backbone"])


def load_generations(sets: Mapping[str, EvalSet], backbone: str, profile: str, m: int = 10,
                     queries_task: Callable[[str], str] = lambda name: "synthetic-queries") -> Generations:
    """Replay (``partial``) the three Re-Invoke tasks for ``backbone`` over the evaluation sets; a set's synthetic
    queries are read under ``queries_task(dataset)`` (``ReinvokeConfig.queries_task``: with or without stop
    strings)."""
    from toolkit.llm.tasks import get_task
    gen = Generations(backbone)
    llm_i, llm_h = (G.client(t, profile, model=backbone) for t in ("intents", "hyde"))
    for name, s in sets.items():
        q = s.llm.query_texts()
        gen.intents[name] = G.intents(q, llm_i, partial=True)
        gen.hyde[name] = G.hyde_documents(q, llm_h, partial=True)
        task = get_task(queries_task(name))
        gen.samples[name] = G.synthetic_query_samples(s.llm.corpus, G.client(task, profile, model=backbone), m=m,
                                                      partial=True, task=task)
    return gen


def generation_time(backbone: str, tasks=("intents", "synthetic-queries", "synthetic-queries-nostop", "hyde")
                    ) -> pd.DataFrame:
    """Answers, completion tokens, summed call time (s) and answers cut at the token cap (count and share) of each
    task's sampling in its cache file for ``backbone`` (the two synthetic-query tasks share one file and differ
    in their stop strings). Calls ran ``--parallel`` at a time, so the sum of call times exceeds the wall time.
    Column "parsed query changed by the stop strings": of the answers generated without stop strings, the share whose
    parsed synthetic query (:func:`~toolkit.llm.parsers.parse_synthetic_query`) differs once the answer is cut at
    :data:`~toolkit.llm.tasks.SYNTHETIC_QUERY_STOP` -- what replaying them under the stop would change (NaN for the
    other tasks)."""
    from toolkit.llm.base import truncate_at_stop
    from toolkit.llm.parsers import parse_synthetic_query
    from toolkit.llm.tasks import SYNTHETIC_QUERY_STOP, get_task
    rows = []
    for t in tasks:
        task = get_task(t)
        cache = G.client(t, "standard", model=backbone).cache()
        cache.refresh()
        key = task.sampling.key()
        ans = [a for a in cache.answers() if a.get("sampling") == key]
        capped = sum(a.get("fin") == "length" for a in ans)
        rows.append({"task": t, "backbone": backbone, "answers": len(ans),
                     "completion tokens": sum(a.get("ntok") or 0 for a in ans),
                     "call time (s)": round(sum(a.get("ms") or 0 for a in ans) / 1000, 1),
                     "capped at max_tokens": capped, "capped share": capped / len(ans) if ans else float("nan"),
                     "parsed query changed by the stop strings": float("nan")})
        if t == "synthetic-queries-nostop" and ans:
            changed = sum(parse_synthetic_query(a["text"]) !=
                          parse_synthetic_query(truncate_at_stop(a["text"], SYNTHETIC_QUERY_STOP)[0]) for a in ans)
            rows[-1]["parsed query changed by the stop strings"] = changed / len(ans)
    return pd.DataFrame(rows).set_index(["task", "backbone"])


def few_shot_copies(backbone: str) -> dict:
    """How often the intent extractor copied Fig. 5's own example intents: answers in the cache with at
    least one intent that is (after normalization) one of the five example lines, and how often the
    most repeated such answer occurs."""
    from collections import Counter

    from toolkit.llm.parsers import copied_examples, parse_intents
    cache = G.client("intents", "standard", model=backbone).cache()
    cache.refresh()
    answers = [a["text"] for a in cache.answers()]
    copies = [a for a in answers if copied_examples(parse_intents(a))]
    return {"backbone": backbone, "answers": len(answers), "with a copied example intent": len(copies),
            "most repeated copied answer": Counter(copies).most_common(1)[0][1] if copies else 0}


# ---------------------------------------------------------------------------------------------
# conditions
# ---------------------------------------------------------------------------------------------

@dataclass
class Condition:
    """One run: ``method`` name (the paper's, for compare), tables it feeds, how to compute it."""
    dataset: str
    method: str
    tables: tuple[str, ...]
    query_set: str                      # "all" | "llm"
    backbone: str | None
    compute: Callable[[], Run] | None   # None: pending (inputs not in the cache)
    pending: str = ""
    m: int | None = None                # synthetic queries per tool the run uses (None: no query generator)


def m_steps(top: int) -> list[int]:
    """The numbers of synthetic queries per tool shown beside the main m: 1, 5 and ``top`` (those <= top)."""
    return sorted({j for j in (1, 5) if j < top} | {top})


def dataset_m(name: str, m: int, m_toolbench: int | None = None) -> int:
    """Synthetic queries per tool used on dataset ``name``: ``m_toolbench`` on the ToolBench sets when it is
    set, else ``m``."""
    return m_toolbench if m_toolbench and name.startswith("toolbench") else m


def _suffix(backbone: str | None, main: str) -> str:
    return "" if backbone in (None, main) else f" [{backbone}]"


def conditions(sets: Mapping[str, EvalSet], gens: Mapping[str, Generations], embed, m: int = 10,
               k: int = 100, m_toolbench: int | None = None, main_backbone: str = MAIN_BACKBONE) -> list[Condition]:
    """Every condition of Tables 1/6 (both retrievers, all backbones), 3A-D (dense, ``main_backbone``)
    and the extras; ``compute`` is None (pending, with the reason) where the cache lacks an input. The
    runs with synthetic queries use ``dataset_m(name, m, m_toolbench)`` of them per tool."""
    out: list[Condition] = []
    indexes: dict = {}

    def index(name, kind, ds, g=None, mm=None, mode="append", agg="mean"):
        """Built once per (corpus, retriever, expansions) and shared by the runs that use it."""
        key = (name, kind, g.backbone if g else None, mm, mode, agg)
        if key not in indexes:
            exp = g.expansions(name, mm) if g else None
            indexes[key] = build_index(ds, kind, exp, mode=mode, copy_agg=agg, embed=embed)
        return indexes[key]

    def run(name, kind, ds, g=None, mm=None, intents=None, mode="append", agg="mean"):
        return lambda: reinvoke_run(ds, kind, None, intents, k=k, index=index(name, kind, ds, g, mm, mode, agg))

    def add(name, method, tables, query_set, bb, fn, missing, mm=None):
        out.append(Condition(name, method, tables, query_set, bb, None if missing else fn, "; ".join(missing), mm))

    for name, s in sets.items():
        ds = s.llm
        mn = dataset_m(name, m, m_toolbench)
        for kind, label in KINDS.items():
            base = "BM25" if kind == "bm25" else "Dense"
            add(name, base, ("1", "6"), "all", None, run(name, kind, s.all), [])
            if s.llm is not s.all:
                add(name, f"{base} (LLM query sample)", ("extra",), "llm", None, run(name, kind, ds), [])
            for bb, g in gens.items():
                sfx = _suffix(bb, main_backbone)
                cm, its = g.complete_m(name), g.intents.get(name, {})
                miss_i = [] if g.has_intents(name, ds) else [f"intents for {len(its)}/{len(ds.queries)} queries"]
                miss_m = [] if cm >= mn else [f"synthetic queries complete for m={cm} < {mn}"]
                miss_h = [] if g.has_hyde(name, ds) else \
                    [f"HyDE documents for {len(g.hyde.get(name, {}))}/{len(ds.queries)} queries"]
                add(name, f"HyDE ({label}){sfx}", ("1", "6") if not sfx else ("extra",), "llm", bb,
                    lambda ds=ds, kind=kind, g=g, name=name: hyde_run(ds, kind, g.hyde[name], k=k,
                                                                      index=index(name, kind, ds)), miss_h)
                if not sfx:   # diagnostic: HyDE without the parameter schema (the shape of a ToolE document)
                    add(name, f"HyDE ({label}), name + description only", ("extra",), "llm", bb,
                        lambda ds=ds, kind=kind, g=g, name=name: hyde_run(
                            ds, kind, {q: hyde_name_description(d) for q, d in g.hyde[name].items()}, k=k,
                            index=index(name, kind, ds)), miss_h)
                add(name, f"Re-Invoke ({label}){sfx}", ("1", "6"), "llm", bb,
                    run(name, kind, ds, g, mn, its), miss_i + miss_m, mn)
                if not miss_i and cm:   # Re-Invoke with m = 1 / 5 (backbones compare at equal m) and with the
                    for mm in m_steps(cm):                                   # m the cache serves so far
                        if mm < mn:
                            add(name, f"Re-Invoke ({label}){sfx}, m={mm}", ("extra",), "llm", bb,
                                run(name, kind, ds, g, mm, its), [], mm)
        for bb, g in gens.items():   # each component alone for the other backbones (dense; extra rows)
            if bb == main_backbone:
                continue
            cm, its = g.complete_m(name), g.intents.get(name, {})
            if g.has_intents(name, ds):
                add(name, f"+ Intent extractor{_suffix(bb, main_backbone)}", ("extra",), "llm", bb,
                    run(name, "dense", ds, intents=its), [])
            if cm:
                add(name, f"+ Query generator{_suffix(bb, main_backbone)}, m={min(cm, mn)}", ("extra",), "llm", bb,
                    run(name, "dense", ds, g, min(cm, mn)), [], min(cm, mn))
        # Table 3 (dense, main backbone), on the LLM query set
        g = gens.get(main_backbone)
        if g is None:
            continue
        cm, its = g.complete_m(name), g.intents.get(name, {})
        miss_i = [] if g.has_intents(name, ds) else [f"intents for {len(its)}/{len(ds.queries)} queries"]

        def miss(need, cm=cm):
            return [] if cm >= need else [f"synthetic queries complete for m={cm} < {need}"]
        # with one copy per tool the max and the mean over copies are the same number: 3D needs m >= 2
        one_copy = [] if mn >= 2 else [f"m={mn} synthetic query per tool here: max = mean, 3D needs m >= 2"]
        # the Dense row of Table 3A, on the same queries as the other rows (the LLM sample for ToolE single)
        add(name, "Dense", ("3A",), "llm", None, run(name, "dense", ds), [])
        add(name, "+ Query generator", ("3A",), "llm", g.backbone, run(name, "dense", ds, g, mn), miss(mn), mn)
        add(name, "+ Intent extractor", ("3A",), "llm", g.backbone, run(name, "dense", ds, intents=its), miss_i)
        # extras (the paper's Table 3A is dense only): each component with BM25
        add(name, "+ Query generator (BM25)", ("extra",), "llm", g.backbone, run(name, "bm25", ds, g, mn), miss(mn),
            mn)
        add(name, "+ Intent extractor (BM25)", ("extra",), "llm", g.backbone, run(name, "bm25", ds, intents=its),
            miss_i)
        for mm, label in ((1, "1 synthetic query"), (5, "5 synthetic queries"), (10, "10 synthetic queries")):
            add(name, label, ("3C",), "llm", g.backbone, run(name, "dense", ds, g, mm), miss(mm), mm)
        add(name, "Synthetic query only", ("3B",), "llm", g.backbone,
            run(name, "dense", ds, g, mn, mode="query_only"), miss(mn), mn)
        add(name, "Synthetic query appended to document", ("3B",), "llm", g.backbone, run(name, "dense", ds, g, mn),
            miss(mn), mn)
        add(name, "Max similarity", ("3D",), "llm", g.backbone, run(name, "dense", ds, g, mn, agg="max"),
            one_copy + miss(mn), mn)
        add(name, "Mean similarity", ("3D",), "llm", g.backbone, run(name, "dense", ds, g, mn), one_copy + miss(mn), mn)
        if 2 <= cm < mn:   # 3B and 3D with the m the cache serves so far (with one copy they are all the same run)
            add(name, f"Synthetic query only, m={cm}", ("extra",), "llm", g.backbone,
                run(name, "dense", ds, g, cm, mode="query_only"), [], cm)
            add(name, f"Max similarity, m={cm}", ("extra",), "llm", g.backbone,
                run(name, "dense", ds, g, cm, agg="max"), [], cm)
            add(name, f"Mean similarity, m={cm}", ("extra",), "llm", g.backbone, run(name, "dense", ds, g, cm), [], cm)
    return out


def run_conditions(conds: list[Condition], sets: Mapping[str, EvalSet], ties: str = "sklearn",
                   metrics=METRICS, log=None) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """Evaluate the computable conditions -> (runs {(dataset, method, query set): run}, values frame,
    pending frame). A condition feeding several tables is computed once."""
    runs, rows, pending = {}, [], []
    for c in conds:
        if c.compute is None:
            pending.append({"dataset": c.dataset, "method": c.method, "tables": ",".join(c.tables), "missing": c.pending})
            continue
        key = (c.dataset, c.method, c.query_set)
        if key not in runs:
            if log:
                log(f"{c.dataset}: {c.method}")
            runs[key] = c.compute()
        ds = getattr(sets[c.dataset], c.query_set)
        vals = evaluate(runs[key], ds.qrels, list(metrics), ties=ties)
        keep(c.dataset, c.method if c.query_set == "all" else f"{c.method} [{c.query_set} sample]", runs[key],
             ds.qrels, ties=ties)
        rows.append({"dataset": c.dataset, "method": c.method, "tables": ",".join(c.tables), "backbone": c.backbone,
                     "m": c.m, "queries": len(ds.queries), **vals})
    return runs, pd.DataFrame(rows), pd.DataFrame(pending, columns=["dataset", "method", "tables", "missing"])


# ---------------------------------------------------------------------------------------------
# Table 4 and case studies
# ---------------------------------------------------------------------------------------------

def roundtrip_table(sets: Mapping[str, EvalSet], gen: Generations, embed, m: int = 10,
                    names=("toole-multi", "toolbench-i1", "toolbench-i2", "toolbench-i3"),
                    m_toolbench: int | None = None) -> pd.DataFrame:
    """Round-trip recall@5/10 of the synthetic queries (Table 4), searching the plain tool documents
    with the first j synthetic queries of each tool, for j = 1, 5 and the largest complete
    j <= ``dataset_m(name, m, m_toolbench)`` (the ``m`` column); ``main`` marks the row with all of them,
    the one to set beside the paper's. ToolE single and multi share one tool set, so ``toole-multi``'s
    corpus stands for ``toole-all``."""
    rows = []
    for name in names:
        want = dataset_m(name, m, m_toolbench)
        top = min(want, gen.complete_m(name))
        if name not in sets or top == 0:
            continue
        index = build_index(sets[name].llm, "dense", None, embed=embed)
        for mm in m_steps(top):
            run, qrels = roundtrip_run(index, gen.expansions(name, mm), k=10)
            vals = evaluate(run, qrels, ["recall@5", "recall@10"])
            rows.append({"dataset": "toole-all" if name.startswith("toole") else name,
                         "synthetic queries": len(qrels), "m": mm, "main": mm == want, **vals})
    return pd.DataFrame(rows)


def _tool(ds: RetrievalDataset, d: str) -> str:
    return ds.corpus[d].tool or d


def case_studies(ds: RetrievalDataset, base: Run, other: Run, k: int, n: int = 3, wins: bool = True,
                 intents: Mapping[str, list[str]] | None = None) -> pd.DataFrame:
    """Queries where ``other`` gets all gold tools into its top ``k`` and ``base`` gets none of them
    (``wins``), or the reverse; the ``n`` shortest such queries (the paper's Tables 7-9 show short
    ones), ties by query id."""
    def top(run, q):
        return [d for d, _ in sorted(run.get(q, {}).items(), key=lambda x: -x[1])[:k]]
    rows = []
    for q in sorted(ds.queries, key=lambda q: (len(ds.queries[q].text), q)):
        gold = {d for d, r in ds.qrels.get(q, {}).items() if r > 0}
        b, o = top(base, q), top(other, q)
        good, bad = (o, b) if wins else (b, o)
        if gold <= set(good) and not gold & set(bad):
            rows.append({"query": ds.queries[q].text, "gold": ", ".join(sorted(_tool(ds, d) for d in gold)),
                         "baseline top-%d" % k: ", ".join(_tool(ds, d) for d in b),
                         "Re-Invoke top-%d" % k: ", ".join(_tool(ds, d) for d in o),
                         **({"intents": " | ".join(intents.get(q, []))} if intents else {})})
        if len(rows) == n:
            break
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# replay check: per-query values of a slice, stored with the standard results and re-derived by a test
# ---------------------------------------------------------------------------------------------

def replay_slice(runs: Mapping, sets: Mapping[str, EvalSet], dataset: str = "toole-multi", n: int = 20,
                 metric: str = "ndcg@5", ties: str = "sklearn") -> dict:
    """``{"dataset", "metric", "ties", "qids", "values": {method: {qid: value}}}`` for the BM25-based LLM
    conditions (no neural model needed to recompute them) on the first ``n`` query ids of ``dataset``.
    ``tests/test_reinvoke_replay.py`` recomputes them from the committed caches and asserts equality."""
    if dataset not in sets:
        return {}
    ds = sets[dataset].llm
    qids = sorted(ds.queries)[:n]
    sub = ds.subset(qids)
    out = {}
    for (name, method, qset), run in runs.items():
        if name == dataset and qset == "llm" and "(BM25)" in method and not method.startswith("BM25"):
            per = evaluate({q: run[q] for q in qids if q in run}, sub.qrels, [metric], per_query=True, ties=ties)
            out[method] = {q: per[metric][q] for q in qids}
    return {"dataset": dataset, "metric": metric, "ties": ties, "qids": qids, "values": out}
