"""The head-to-head benchmark of notebook ``50_headtohead``: every method through the one
interface (:mod:`toolkit.methods.base`) on one query set, with its costs.

- **Sets.** In-domain: the StableToolBench groups I1 / I2 / I3 over the whole 16,427-API ToolBench library;
  out-of-domain: UltraTool (its 436 tools). The common queries are the feedback loop's LLM samples
  (:func:`toolkit.feedback.experiment.llm_sample` of its standard configuration: I1 150, I2 all 230, I3 all 61,
  UltraTool 150), so the method with the most expensive inputs, the loop, is evaluated on every query. The smoke
  profile keeps the first ``queries_per_set`` of each sample (the samples are nested) over the same corpora.
- **Metrics.** NDCG@5 and Recall@5 (binary relevance, trec_eval's tie rule: :mod:`toolkit.metrics`) and the share of
  queries with every gold API in the top 5 (what an agent that reads five tools needs; ToolRerank's Table 4
  proxy). ``I1-I3`` is the union of the three in-domain sets (every query once).
- **Significance.** Per set, each method against the set's reference baseline: the highest NDCG@5 of the fixed,
  named candidates :data:`REFERENCE_CANDIDATES` (BM25 and the off-the-shelf dense encoders: no LLM, no training),
  never a method added through ``methods``, so adding one moves no p value: the paired randomization test of
  :mod:`toolkit.significance`.

    sets = benchmark_sets(config_for("smoke"))
    result = run_benchmark({"BM25": BM25, "My method": MyMethod}, sets)
    board = leaderboard(result)
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping

import numpy as np
import pandas as pd

from toolkit.config import overridden
from toolkit.data.contract import RetrievalDataset
from toolkit.methods.base import Cost, Method, MethodPending
from toolkit.methods.catalog import LABELS
from toolkit.runs import keep
from toolkit.significance import p_label

METRICS = ("ndcg@5", "recall@5", "all_gold@5")
IN_DOMAIN = ("I1", "I2", "I3")
UNION = "I1-I3"
PROFILE_NAMES = ("smoke", "standard", "paper")
# the reference baseline of a set is the best of these on it (NDCG@5): fixed built-ins, never a user's method
REFERENCE_CANDIDATES = ("BM25", "Dense MiniLM", "Dense mpnet")


@dataclass(frozen=True)
class HeadToHeadConfig:
    profile: str = "smoke"
    queries_per_set: int | None = 5        # the first n of each common sample (nested); None: the whole common set
    encode_missing: bool = False           # encode document vectors no cache holds (else: the method is pending)
    timing_texts: int = 8                  # queries / documents encoded again without the cache to time an encoder
    rrf_k: int = 60                        # reciprocal-rank fusion's constant (Cormack et al. 2009)
    n_permutations: int = 10_000           # paired randomization test
    ties: str = "trec"                     # trec | sklearn (toolkit.metrics)
    # cost growth (toolkit.methods.scaling): nested libraries of these sizes (gold APIs kept; None: the library)
    scaling_sizes: tuple[int | None, ...] = (200, 400, 800)
    scaling_repeats: int = 3               # median of this many timings per point
    scaling_encode_docs: int = 8           # documents encoded without the cache per size (MiniLM's per-document rate)
    scaling_seed: int = 0                  # the permutation the nested libraries are drawn from

    def __post_init__(self) -> None:
        if self.profile not in PROFILE_NAMES:
            raise ValueError(f"profile must be one of {PROFILE_NAMES}, got {self.profile!r}")
        if self.queries_per_set is not None and self.queries_per_set < 1:
            raise ValueError(f"50_headtohead parameter queries_per_set must be >= 1 or None, got {self.queries_per_set}")
        if self.timing_texts < 0 or self.rrf_k < 0 or self.n_permutations < 1:
            raise ValueError("50_headtohead: timing_texts and rrf_k must be >= 0, n_permutations >= 1")
        if not self.scaling_sizes or any(n is not None and n < 1 for n in self.scaling_sizes):
            raise ValueError(f"50_headtohead parameter scaling_sizes must be sizes >= 1 (None: the whole library), "
                             f"got {self.scaling_sizes}")
        if self.scaling_repeats < 1 or self.scaling_encode_docs < 1:
            raise ValueError("50_headtohead: scaling_repeats and scaling_encode_docs must be >= 1")
        if self.ties not in ("trec", "sklearn"):
            raise ValueError(f"50_headtohead parameter ties must be trec or sklearn, got {self.ties!r}")


PROFILES = {
    # 5 queries per set over the same corpora: the plumbing in about a minute (CI runs it under nbval)
    "smoke": HeadToHeadConfig(profile="smoke", queries_per_set=5, timing_texts=4),
    # the common set: 150 + 230 + 61 in-domain queries, 150 UltraTool; replays the committed caches in minutes
    "standard": HeadToHeadConfig(profile="standard", queries_per_set=None, timing_texts=16,
                                 scaling_sizes=(1000, 4000, None), scaling_encode_docs=32),
    # as standard, encoding what is missing (mpnet over the library: hours on 2 cores, minutes on a GPU)
    "paper": HeadToHeadConfig(profile="paper", queries_per_set=None, encode_missing=True, timing_texts=16,
                              scaling_sizes=(1000, 4000, None), scaling_encode_docs=32),
}


def config_for(profile: str, **overrides) -> HeadToHeadConfig:
    """The profile's configuration with ``overrides`` (unknown names and wrong types are errors)."""
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILE_NAMES}, got {profile!r}")
    return overridden("50_headtohead", PROFILES[profile], overrides)


def benchmark_sets(cfg: HeadToHeadConfig) -> dict[str, RetrievalDataset]:
    """I1, I2, I3 (library corpus) and UltraTool restricted to the feedback loop's standard LLM samples (the
    first ``queries_per_set`` of each under smoke)."""
    from toolkit.feedback.config import config_for as feedback_config
    from toolkit.feedback.data import IN_DOMAIN as FB_IN, OUT_OF_DOMAIN, test_sets
    from toolkit.feedback.experiment import llm_sample
    fcfg = feedback_config("standard")
    if cfg.queries_per_set is not None:
        fcfg = replace(fcfg, test_requests={g: min(cfg.queries_per_set, fcfg.sample_size(g) or cfg.queries_per_set)
                                            for g in LABELS})
    tests = test_sets({**{g: FB_IN[g] for g in IN_DOMAIN}, **OUT_OF_DOMAIN}, corpus="library")
    return {g: tests[g].subset(llm_sample(fcfg, tests, g), name=f"{tests[g].name} (common set)") for g in LABELS}


@dataclass
class Result:
    per_query: pd.DataFrame                     # set, method, qid, metric, value
    costs: dict[str, Cost]                      # method -> its cost on the library (else its first corpus)
    pending: list[dict]                         # method, set, reason, command, estimate (Cost), estimate_note
    kinds: dict[str, str] = field(default_factory=dict)     # method -> "cheap" | "single" | "combination"
    parts: dict[str, list[str]] = field(default_factory=dict)   # combination -> its parts' benchmark keys
    failed: list[dict] = field(default_factory=list)        # method, set, error: a method that raised on that set
    warnings: list[str] = field(default_factory=list)       # runs that dropped queries or named unknown documents

    def values(self) -> pd.DataFrame:
        """Mean and n per (set, method, metric), with the I1-I3 union."""
        pq = self.per_query
        union = pq[pq["set"].isin(IN_DOMAIN)]
        # the union only for methods with all three in-domain sets
        full = union.groupby("method")["set"].nunique()
        union = union[union["method"].isin(full[full == len(IN_DOMAIN)].index)].assign(set=UNION)
        allq = pd.concat([pq, union], ignore_index=True)
        return allq.groupby(["set", "method", "metric"], sort=False)["value"].agg(["mean", "count"]).reset_index()

    def scores(self, method: str, set_: str, metric: str = "ndcg@5") -> dict[str, float]:
        pq = self.per_query
        sets = list(IN_DOMAIN) if set_ == UNION else [set_]
        sub = pq[(pq["method"] == method) & pq["set"].isin(sets) & (pq["metric"] == metric)]
        return dict(zip(sub["qid"], sub["value"]))


def per_query_metrics(run, qrels, ties: str = "trec") -> dict[str, dict[str, float]]:
    """``{metric: {qid: value}}`` of :data:`METRICS` (a query the run lacks scores 0)."""
    from toolkit.feedback.experiment import all_gold_in
    from toolkit.metrics import evaluate, rank
    run = {q: run.get(q, {}) for q in qrels}
    out = evaluate(run, qrels, ["ndcg@5", "recall@5"], per_query=True, ties=ties)
    out["all_gold@5"] = {q: float(all_gold_in(qrels[q], rank(run[q], 5) if run[q] else [])) for q in qrels}
    return out


def _corpus_groups(sets: Mapping[str, RetrievalDataset]) -> list[list[str]]:
    from toolkit.experiment import corpus_fingerprint
    groups: dict[str, list[str]] = {}
    for label, ds in sets.items():
        groups.setdefault(corpus_fingerprint(ds), []).append(label)
    return list(groups.values())


class MethodTimeout(TimeoutError):
    """A method's offline and online steps on one corpus took longer than ``run_benchmark``'s ``timeout_s``."""


def _check_factories(methods: Mapping[str, Callable[[], Method]]) -> None:
    """Each value must make a fresh :class:`Method` (the class or a zero-argument factory), not be one."""
    for name, factory in methods.items():
        if isinstance(factory, Method):
            cls = type(factory).__name__
            raise TypeError(f"run_benchmark: methods[{name!r}] is an instance of {cls}; give the class (or a "
                            f"zero-argument factory) so that each corpus gets a fresh one: {{{name!r}: {cls}}}")
        if not callable(factory):
            raise TypeError(f"run_benchmark: methods[{name!r}] must be a Method class or a zero-argument factory, "
                            f"got {type(factory).__name__} {factory!r}")


def checked_run(name: str, label: str, run, ds: RetrievalDataset) -> tuple[dict, list[str]]:
    """``run`` as returned by method ``name``'s ``online`` on set ``label``, checked: a ``{qid: {doc_id: score}}``
    mapping (a list or tuples is a TypeError saying so), every score a finite number (a NaN is a ValueError naming
    the method, set, query and document). Returns the run and its warnings: queries of the set it dropped (they
    score 0) and documents not in the corpus (they can never be relevant), counted."""
    import math
    from collections.abc import Mapping as AnyMapping
    where = f"method {name!r} on {label}"
    if not isinstance(run, AnyMapping):
        hint = (" (a list of (doc_id, score) pairs? return one dict per query: {qid: dict(pairs)})"
                if isinstance(run, (list, tuple)) else "")
        raise TypeError(f"{where}: online() must return a run {{qid: {{doc_id: score}}}}, got "
                        f"{type(run).__name__}{hint}")
    for q, ranked in run.items():
        if not isinstance(ranked, AnyMapping):
            raise TypeError(f"{where}: the run's entry for query {q!r} must be {{doc_id: score}}, got "
                            f"{type(ranked).__name__} {str(ranked)[:80]}"
                            + (" (turn (doc_id, score) pairs into a dict)" if isinstance(ranked, (list, tuple)) else ""))
        for d, v in ranked.items():
            try:
                ok = math.isfinite(float(v))
            except (TypeError, ValueError):
                raise TypeError(f"{where}: query {q!r}, document {d!r}: the score must be a number, got "
                                f"{type(v).__name__} {v!r}") from None
            if not ok:
                raise ValueError(f"{where}: query {q!r} scores document {d!r} {v} (not a finite number); a NaN or "
                                 f"inf score has no rank -- return finite scores")
    warns = []
    dropped = [q for q in ds.queries if q not in run]
    if dropped:
        warns.append(f"{where}: {len(dropped)} of {len(ds.queries)} queries missing from the run, scored 0 "
                     f"(e.g. {dropped[:3]})")
    unknown = {d for ranked in run.values() for d in ranked if d not in ds.corpus}
    if unknown:
        warns.append(f"{where}: {len(unknown)} document ids not in the corpus ({len(ds.corpus)} documents), never "
                     f"relevant (e.g. {sorted(unknown)[:3]})")
    return run, warns


def _alarm(timeout_s: float | None, what: str):
    """A context that raises :class:`MethodTimeout` in the main thread after ``timeout_s`` (SIGALRM); elsewhere, or
    without a timeout, nothing."""
    import contextlib
    import signal
    import threading
    if not timeout_s or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        return contextlib.nullcontext()

    @contextlib.contextmanager
    def ctx():
        def fire(signum, frame):
            raise MethodTimeout(f"{what} took longer than timeout_s={timeout_s:g} s")
        old = signal.signal(signal.SIGALRM, fire)
        signal.setitimer(signal.ITIMER_REAL, timeout_s)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    return ctx()


def run_benchmark(methods: Mapping[str, Callable[[], Method]], sets: Mapping[str, RetrievalDataset],
                  ties: str = "trec", log: Callable[[str], None] | None = print, on_error: str = "record",
                  timeout_s: float | None = None) -> Result:
    """Every method on every set: one instance per corpus (``methods``: name -> zero-argument factory, e.g. the
    class), ``offline`` once, ``online`` per set, both timed; a progress line per method and corpus (``log``). A
    :class:`MethodPending` from either step makes the method pending on that corpus's sets (its reason, command and
    estimate kept). Any other error (a bug, a run that is not ``{qid: {doc_id: score}}`` or holds a NaN:
    :func:`checked_run`, or more than ``timeout_s`` seconds on one corpus) marks the method failed on those sets
    with the error (``Result.failed``, the leaderboard's ``failed`` column) and the benchmark goes on with the
    others; ``on_error="raise"`` propagates it instead. Dropped queries and unknown document ids are counted in
    ``Result.warnings`` (and logged)."""
    if on_error not in ("record", "raise"):
        raise ValueError(f"run_benchmark: on_error must be 'record' or 'raise', got {on_error!r}")
    if timeout_s is not None and not timeout_s > 0:
        raise ValueError(f"run_benchmark: timeout_s must be > 0 seconds or None, got {timeout_s}")
    _check_factories(methods)
    rows, pending, costs, kinds, failed, warns = [], [], {}, {}, [], []
    signatures: dict[str, tuple[type, str]] = {}              # key -> (type, name) of its instance
    combos: dict[str, list[tuple[Callable, type, str]]] = {}  # combination -> its parts' (factory, type, name)
    groups = _corpus_groups(sets)
    total, step = len(methods) * len(groups), 0
    for name, factory in methods.items():
        for labels in groups:
            step += 1
            sets_text = "/".join(labels)
            if log:
                log(f"[{step}/{total}] {name} on {sets_text} ...")
            corpus = sets[labels[0]].corpus
            try:
                m = factory()
                if not isinstance(m, Method):
                    raise TypeError(f"run_benchmark: methods[{name!r}]() returned {type(m).__name__}, not a Method "
                                    "(subclass toolkit.methods.Method)")
                kinds[name] = "combination" if m.combination else "cheap" if m.cheap else "single"
                signatures.setdefault(name, (type(m), m.name))
                if m.combination:
                    combos[name] = [(f, type(p), p.name) for f, p in zip(getattr(m, "factories", [None] * len(
                        getattr(m, "parts", []))), getattr(m, "parts", []))]
                t0 = time.perf_counter()
                with _alarm(timeout_s, f"method {name!r} on {sets_text}"):
                    m.offline(corpus)
                    offline_s = time.perf_counter() - t0
                    online_s, n, got = 0.0, 0, []
                    for label in labels:
                        ds = sets[label]
                        t = time.perf_counter()
                        run = m.online(ds.query_texts())
                        online_s += time.perf_counter() - t
                        run, w = checked_run(name, label, run, ds)
                        n += len(ds.queries)
                        got.append((label, run, ds, w))
            except MethodPending as e:
                p = e.pending
                pending += [{"method": name, "set": label, "reason": p.reason, "command": p.command,
                             "estimate": p.estimate, "estimate_note": p.estimate_note} for label in labels]
                if log:
                    log(f"{name:<34} {sets_text:<14} pending: {p.reason}")
                continue
            except Exception as e:
                if on_error == "raise":
                    raise
                msg = str(e).strip().splitlines()
                error = f"{type(e).__name__}: {msg[-1] if msg else ''}"
                kinds.setdefault(name, "single")
                failed += [{"method": name, "set": label, "error": error} for label in labels]
                if log:
                    log(f"{name:<34} {sets_text:<14} FAILED: {error}")
                continue
            for label, run, ds, w in got:
                keep(label, name, run, ds.qrels, ties=ties)
                for metric, values in per_query_metrics(run, ds.qrels, ties).items():
                    rows += [(label, name, q, metric, v) for q, v in values.items()]
                for line in w:
                    warns.append(line)
                    if log:
                        log(f"  warning: {line}")
            c = m.cost
            if c.index_seconds is None:
                c = replace(c, index_seconds=offline_s)
            if c.ms_per_query is None and c.ms_as is None:
                c = replace(c, ms_per_query=online_s * 1000 / max(n, 1))
            if name not in costs or labels[0] in IN_DOMAIN:      # the library's cost is the one reported
                costs[name] = c
            if log:
                log(f"{name:<34} {sets_text:<14} offline {offline_s:6.1f}s  online {online_s:6.1f}s "
                    f"({n} queries)")
    parts = {}
    for combo, infos in combos.items():
        keys = part_keys(methods, signatures, kinds, infos)
        if keys is None:
            line = (f"combination {combo!r}: its parts ({', '.join(n for _, _, n in infos)}) are not each one method "
                    "of the benchmark, so its cost is its own measured one, not the sum of its parts'")
            warns.append(line)
            if log:
                log(f"  warning: {line}")
        else:
            parts[combo] = keys
    costs = resolve_costs(costs, parts)
    per_query = pd.DataFrame(rows, columns=["set", "method", "qid", "metric", "value"])
    return Result(per_query, costs, pending, kinds, parts, failed, warns)


def part_keys(methods: Mapping[str, Callable[[], Method]], signatures: Mapping[str, tuple[type, str]],
              kinds: Mapping[str, str], infos: list[tuple[Callable | None, type, str]]) -> list[str] | None:
    """The benchmark keys of a combination's parts (``infos``: each part's factory, type and ``.name``): the key
    whose factory is the part's, else the one method of the same type and name, else the key equal to the part's
    name among those; None when a part matches no single method (its cost is then not summed). Keys, not ``.name``:
    a user method named "BM25" under the key "mine" is not the suite's BM25."""
    singles = [k for k in methods if kinds.get(k) != "combination"]
    out = []
    for factory, typ, pname in infos:
        keys = [k for k in singles if factory is not None and methods[k] is factory]
        if len(keys) != 1:
            keys = [k for k in singles if signatures.get(k) == (typ, pname)] or keys
        if len(keys) > 1 and pname in keys:
            keys = [pname]
        if len(keys) != 1:
            return None
        out.append(keys[0])
    return out


def resolve_costs(costs: Mapping[str, Cost], parts: Mapping[str, list[str]]) -> dict[str, Cost]:
    """Each ``ms_as`` resolved against the measured methods; a combination's cost is the sum of its parts' (their
    own rows' costs, run one after the other)."""
    out = {n: c.resolved(costs) for n, c in costs.items()}
    for name, ps in parts.items():
        if name in out and all(p in out for p in ps):
            total = out[ps[0]]
            for p in ps[1:]:
                total = total + out[p]
            out[name] = replace(total, note=f"sum of {' + '.join(ps)}")
    return out


def reference_baseline(result: Result, set_: str, metric: str = "ndcg@5",
                       candidates: tuple[str, ...] = REFERENCE_CANDIDATES) -> str | None:
    """The set's reference baseline: of the fixed ``candidates`` that ran on ``set_``, the one with the highest
    mean ``metric`` (ties: by name). A method outside ``candidates`` (a user's, however cheap) never is."""
    v = result.values()
    sub = v[(v["set"] == set_) & (v["metric"] == metric) & v["method"].isin(candidates)]
    return None if sub.empty else sub.sort_values(["mean", "method"], ascending=[False, True]).iloc[0]["method"]


def leaderboard(result: Result, n_permutations: int = 10_000, sets: tuple[str, ...] = (*IN_DOMAIN, UNION, "UltraTool"),
                candidates: tuple[str, ...] = REFERENCE_CANDIDATES) -> pd.DataFrame:
    """One row per method: per set NDCG@5 (x100), its n and the paired p against the set's reference baseline
    (:func:`reference_baseline` of ``candidates``); Recall@5 and all-gold@5 on I1-I3 and UltraTool; online seconds
    per query and offline minutes; "reference on" the sets it is the reference of; "pending" the sets it has no
    numbers for. ``board.attrs["reference"]``: set -> its reference baseline."""
    from toolkit.significance import compared
    v = result.values()
    value = {(r.set, r.method, r.metric): (r.mean, int(r.count)) for r in v.itertuples()}
    base = {s: reference_baseline(result, s, candidates=candidates) for s in sets}
    tests = {}
    for s in sets:
        for m in result.kinds:
            if base[s] and m != base[s] and (s, m, "ndcg@5") in value:
                a, b = result.scores(m, s), result.scores(base[s], s)
                common = sorted(set(a) & set(b))
                if common:
                    tests[s, m] = compared(f"{m} vs {base[s]}", {q: a[q] for q in common}, {q: b[q] for q in common},
                                           n_permutations=n_permutations)["p"]
    pend: dict[str, list[str]] = {}
    for p in result.pending:
        pend.setdefault(p["method"], []).append(p["set"])
    fails: dict[str, dict[str, list[str]]] = {}
    for f in result.failed:
        fails.setdefault(f["method"], {}).setdefault(f["error"], []).append(f["set"])
    rows = []
    for m, kind in result.kinds.items():
        row = {"method": m, "kind": kind}
        for s in sets:
            mean, n = value.get((s, m, "ndcg@5"), (float("nan"), 0))
            row[f"NDCG@5 {s}"] = round(mean * 100, 2)
            row[f"n {s}"] = n
            row[f"p {s}"] = tests.get((s, m), float("nan"))
        for s in (UNION, "UltraTool"):
            for metric, label in (("recall@5", "Recall@5"), ("all_gold@5", "all gold@5")):
                row[f"{label} {s}"] = round(value.get((s, m, metric), (float("nan"), 0))[0] * 100, 2)
        c = result.costs.get(m)
        row["online s/query"] = None if c is None else c.online_seconds_per_query
        row["offline min"] = None if c is None else round(c.offline_minutes, 1)
        row["reference on"] = ", ".join(s for s in sets if base[s] == m)
        row["pending"] = ", ".join(pend.get(m, []))
        if result.failed:          # the column only when a method failed: a clean run's table stays as it was
            row["failed"] = "; ".join(f"{', '.join(ss)}: {err}" for err, ss in fails.get(m, {}).items())
        rows.append(row)
    board = pd.DataFrame(rows).set_index("method")
    board.attrs["reference"] = base
    return board


def leaderboard_table(board: pd.DataFrame, columns: list[str] | None = None):
    """The leaderboard as shown (:func:`toolkit.report.format_table`): NDCG@5, Recall@5 and all-gold@5 x100 with one
    decimal (the board holds them x100 already), p as ``< 0.001``, "reference" in the p cell of each set's reference
    baseline, "pending" where a method has no number; ``columns``: the board's columns to show (default: all)."""
    from toolkit.report import REFERENCE, format_table
    shown = board if columns is None else board[columns]
    quality = [c for c in shown.columns if c.startswith(("NDCG@5 ", "Recall@5 ", "all gold@5 "))]
    table = format_table(shown, percents=quality, text=["kind", "reference on", "pending"], missing="pending")
    for s, ref in board.attrs.get("reference", {}).items():
        if ref in table.frame.index and f"p {s}" in table.frame.columns:
            table.frame.loc[ref, f"p {s}"] = REFERENCE
    return table


def pareto_front(points: Mapping[str, tuple[float, float]]) -> list[str]:
    """The names whose (cost, quality) no other point beats: none has cost <= and quality >= with one of them
    strict. In ascending cost."""
    front = []
    for n, (c, q) in points.items():
        if not any((c2 <= c and q2 >= q) and (c2 < c or q2 > q) for n2, (c2, q2) in points.items() if n2 != n):
            front.append(n)
    return sorted(front, key=lambda n: (points[n][0], -points[n][1]))


def pareto_points(board: pd.DataFrame, set_: str = UNION) -> dict[str, tuple[float, float]]:
    """(online seconds per query, NDCG@5 x100 on ``set_``) of every method with both."""
    out = {}
    for m, r in board.iterrows():
        x, y = r["online s/query"], r[f"NDCG@5 {set_}"]
        if x is not None and not pd.isna(x) and x > 0 and not pd.isna(y):
            out[m] = (float(x), float(y))
    return out


def pareto_figure(board: pd.DataFrame, path, set_: str = UNION):
    """Quality against online seconds per query (log x), the Pareto front joined and its points labelled in bold;
    saved to ``path`` (png) with the points beside it as csv. Returns the figure."""
    import matplotlib.pyplot as plt
    pts = pareto_points(board, set_)
    front = pareto_front(pts)
    fig, ax = plt.subplots(figsize=(8, 5))
    for m, (x, y) in pts.items():
        on = m in front
        kind = board.loc[m, "kind"]
        ax.scatter([x], [y], s=60 if on else 30, marker="s" if kind == "combination" else "o",
                   color="C3" if on else "C0", zorder=3)
        ax.annotate(m, (x, y), textcoords="offset points", xytext=(5, 4), fontsize=8,
                    fontweight="bold" if on else "normal")
    if front:
        ax.step([pts[m][0] for m in front], [pts[m][1] for m in front], where="post", color="C3", lw=1, zorder=2,
                label="Pareto front")
    ax.set_xscale("log")
    ax.set_xlabel("online seconds per query (log scale; LLM time included)")
    ax.set_ylabel(f"NDCG@5 x100, {set_}")
    ax.set_title(f"Quality against online cost ({set_}; squares: combinations)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    pd.DataFrame([{"method": m, "online_s_per_query": x, f"ndcg@5_{set_}": y, "front": m in front}
                  for m, (x, y) in pts.items()]).to_csv(str(path).rsplit(".", 1)[0] + ".csv", index=False)
    return fig


def record(rec, result: Result, board: pd.DataFrame) -> None:
    """The leaderboard's cells (paper key ``headtohead``, ours only): per set and method the three metrics with n,
    the p against the best cheap baseline, and each method's online seconds per query and offline seconds (timings:
    ``check`` tests them for a sane value, not against the expected number)."""
    v = result.values()
    for r in v.itertuples():
        rec.add(paper="headtohead", table="leaderboard", dataset=r.set, method=r.method, metric=r.metric,
                value=r.mean, n_queries=int(r.count), ours_only=True)
    for m, row in board.iterrows():
        for s in (*IN_DOMAIN, UNION, "UltraTool"):
            if not pd.isna(row[f"p {s}"]):
                rec.add(paper="headtohead", table="leaderboard", dataset=s, method=m, metric="p_ndcg@5_vs_baseline",
                        value=row[f"p {s}"], n_queries=int(row[f"n {s}"]), ours_only=True)
        c = result.costs.get(m)
        if c is not None and c.online_seconds_per_query is not None:
            rec.add(paper="headtohead", table="cost", dataset="library", method=m, metric="online_seconds_per_query",
                    value=c.online_seconds_per_query, ours_only=True, note=c.note)
            rec.add(paper="headtohead", table="cost", dataset="library", method=m, metric="offline_seconds",
                    value=c.offline_minutes * 60, ours_only=True)


def pending_table(result: Result) -> pd.DataFrame:
    """One row per pending method: its sets, why, the command that produces its inputs and the estimated cost."""
    rows: dict[str, dict] = {}
    for p in result.pending:
        est = p["estimate"].resolved(result.costs)
        r = rows.setdefault(p["method"], {"method": p["method"], "sets": [], "reason": p["reason"],
                                          "command": p["command"], "estimate": p["estimate_note"],
                                          "offline h (est.)": round(est.offline_minutes / 60, 1),
                                          "online s/query (est.)": est.online_seconds_per_query})
        if p["reason"] != r["reason"]:
            r["reason"] += f"; {p['set']}: {p['reason']}"
        r["sets"].append(p["set"])
    out = pd.DataFrame(list(rows.values()), columns=["method", "sets", "reason", "command", "estimate",
                                                     "offline h (est.)", "online s/query (est.)"])
    out["sets"] = out["sets"].map(", ".join)
    return out.set_index("method")


def cost_table(result: Result) -> pd.DataFrame:
    """Each method's cost record (library corpus): offline LLM seconds and tokens, training minutes, index seconds;
    online ms of retrieval and LLM seconds and tokens per query; where a number comes from."""
    rows = []
    for m, c in result.costs.items():
        rows.append({"method": m, "offline LLM s": round(c.llm_seconds, 1), "offline LLM tokens": c.llm_tokens,
                     "training min": round(c.training_minutes, 1), "index s": round(c.index_seconds or 0.0, 1),
                     "retrieval ms/query": None if c.ms_per_query is None else round(c.ms_per_query, 1),
                     "LLM s/query": round(c.llm_seconds_per_query, 2), "LLM tokens/query": c.llm_tokens_per_query,
                     "online s/query": c.online_seconds_per_query, "offline min": round(c.offline_minutes, 1),
                     "source": c.note})
    return pd.DataFrame(rows).set_index("method")


def reading(board: pd.DataFrame, result: Result, set_: str = UNION) -> str:
    """Which method to pick at which online budget, formatted from the leaderboard (markdown)."""
    pts = pareto_points(board, set_)
    if not pts:
        return "No method has both a quality and an online cost on this run."
    front = pareto_front(pts)
    base = reference_baseline(result, set_)

    def cell(m, s=set_):
        r = board.loc[m]
        p = r[f"p {s}"]
        ptxt = "" if pd.isna(p) else f", {p_label(p)}"
        return f"{r[f'NDCG@5 {s}']:.1f} (n={int(r[f'n {s}'])}{ptxt})"

    def secs(m):
        x = pts[m][0]
        return f"{x * 1000:.2g} ms" if x < 1 else f"{x:.1f} s"
    lines = [f"- **The Pareto front on {set_}** (NDCG@5 x100 against online seconds per query) holds "
             + ", then ".join(f"{m} ({cell(m)}, {secs(m)}/query)" for m in front) + "."]
    if base:
        lines.append(f"- **Reference baseline** on {set_}: {base} (the best of {', '.join(REFERENCE_CANDIDATES)}), "
                     f"{cell(base)}; p values are paired randomization tests against it on the same queries.")
    best = max(pts, key=lambda m: pts[m][1])
    cheapest = front[0]
    lines.append(f"- **At the smallest budget** pick {cheapest} ({secs(cheapest)}/query); **for the best quality** "
                 f"{best} ({cell(best)}, {secs(best)}/query, offline {board.loc[best, 'offline min']:.0f} min).")
    for m in front[1:]:
        prev = front[front.index(m) - 1]
        gain, factor = pts[m][1] - pts[prev][1], pts[m][0] / pts[prev][0]
        lines.append(f"  - {m} over {prev}: {gain:+.1f} NDCG@5 points for {factor:.0f}x the online time.")
    if "UltraTool" in {c.split(" ", 1)[1] for c in board.columns if c.startswith("NDCG@5 ")}:
        ut = board["NDCG@5 UltraTool"].dropna()
        if not ut.empty:
            top = ut.idxmax()
            lines.append(f"- **Out of domain (UltraTool)** the best is {top}, {cell(top, 'UltraTool')}.")
    pend = sorted({p["method"] for p in result.pending})
    if pend:
        lines.append(f"- **Pending** on some or all sets (no committed inputs for these queries; commands and "
                     f"estimates in the pending table): {', '.join(pend)}.")
    return "\n".join(lines)


def default_methods(cfg: HeadToHeadConfig, sets: Mapping[str, RetrievalDataset]) -> dict[str, Callable[[], Method]]:
    """The suite's methods and the combinations (:data:`COMBINATION_WHY`) as name -> factory; ``sets``: the run's
    query sets (the pending estimates are for their queries)."""
    from toolkit.methods.base import PendingMethod
    from toolkit.methods.catalog import (BM25, Dense, IterativeFeedback, QueryGeneration, ReinvokeIntents,
                                         ToolLensDPR, ToolRerank, reinvoke_pending)
    from toolkit.methods.fusion import Fusion

    def dense(model):
        return lambda: Dense(model, encode_missing=cfg.encode_missing, timing_texts=cfg.timing_texts)

    def fused(name, *factories):
        return lambda: Fusion(name, factories, k=cfg.rrf_k)

    def pending(name, make, combination=False):
        def build():
            m = PendingMethod(name, make())
            m.combination = combination
            return m
        return build

    return {
        "BM25": BM25,
        "Dense MiniLM": dense("minilm"),
        "Dense mpnet": dense("mpnet"),
        "DPR (ToolLens)": ToolLensDPR,
        "ToolRerank": lambda: ToolRerank(sets, cfg.profile),
        "Re-Invoke": pending("Re-Invoke", reinvoke_pending),
        "Re-Invoke (intents only)": ReinvokeIntents,
        "Iterative feedback": IterativeFeedback,
        "Query generation": lambda: QueryGeneration(encode_missing=cfg.encode_missing),
        "BM25 + Dense MiniLM (RRF)": fused("BM25 + Dense MiniLM (RRF)", BM25, dense("minilm")),
        "BM25 + DPR (RRF)": fused("BM25 + DPR (RRF)", BM25, ToolLensDPR),
        "Feedback + BM25 (RRF)": fused("Feedback + BM25 (RRF)", IterativeFeedback, BM25),
        "Re-Invoke intents + BM25 (RRF)": fused("Re-Invoke intents + BM25 (RRF)", ReinvokeIntents, BM25),
        "BM25 + Dense MiniLM + DPR (RRF)": fused("BM25 + Dense MiniLM + DPR (RRF)", BM25, dense("minilm"), ToolLensDPR),
        "Re-Invoke + ToolRerank": pending("Re-Invoke + ToolRerank", reinvoke_pending, combination=True),
    }


# one line per combination, what it should fix (the notebook prints them beside the leaderboard)
COMBINATION_WHY = {
    "BM25 + Dense MiniLM (RRF)": "lexical and semantic matching fail on different queries; fusion keeps each one's hits",
    "BM25 + DPR (RRF)": "the fine-tuned encoder knows ToolBench's document style, BM25 the rare API names it never saw",
    "Feedback + BM25 (RRF)": "the loop's rewrites can drift from the request's words; BM25 on the original pulls back",
    "Re-Invoke intents + BM25 (RRF)": "intents split a multi-tool request; BM25 keeps the API names an intent paraphrases",
    "BM25 + Dense MiniLM + DPR (RRF)": "three retrievers with different failure modes, the lexical and fine-tuned most apart",
    "Re-Invoke + ToolRerank": "expansion lifts first-stage recall, the reranker fixes the order of what it found",
}
