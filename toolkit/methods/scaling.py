"""How each method's cost grows with the library size and the query rate (notebook 50's last section).

**Fit.** Each cost ``t`` (offline seconds for the whole library; online seconds per query) measured or derived at
library sizes ``N_1 < ... < N_k`` is fitted by a power law

    t = a * N^b,    i.e.  log t = log a + b log N,

by ordinary least squares on (log N, log t) (:func:`fit_power_law`; natural logs, every t > 0, at least two distinct
sizes). ``b`` is the growth exponent: b ≈ 0 constant in the library size, b ≈ 1 linear; ``r2`` is the coefficient
of determination of the log-log line (1 for two points; with three, a low r2 says the growth is not one power).

**Libraries.** :func:`nested_subsets`: seeded nested subsets of the 16,427-API library, each holding every gold API
of the benchmark's queries (so each query can still be answered) and the first ``N - gold`` APIs of one seeded
permutation of the rest: the size-N library is contained in every larger one.

**Measured** here (:func:`measure`), median of ``repeats`` runs at each size, on a shared 2-core machine:

- BM25: indexing the N documents (bm25s); search per query (all queries in one call, and one query per call).
- Dense MiniLM: encoding a sample batch of ``encode_docs`` documents of the size-N library without the embedding
  cache (seconds per document; the library's encoding is N times that: linear by construction, the per-document
  rate is what is measured at each size) plus indexing the stored vectors; per query: encoding ``encode_queries``
  queries without the cache (batched, and one per call; timed once, as it does not read the library) plus exact
  inner-product search over the N vectors (timed at each size).
- BM25 + Dense MiniLM (RRF): the two above plus the fusion of their runs (:func:`toolkit.methods.fusion.rrf`).

**Derived** (:func:`growth_table`) for every other method of the benchmark from its cost record on the whole
library (:class:`toolkit.methods.base.Cost`, the leaderboard's or the pending estimate's):

    offline(N) = LLM seconds * (N / N_library if the LLM expands the documents, else 1) + training + index(N)
    online(N)  = LLM seconds per query + rounds * online(N) of the retriever it searches with (``Cost.ms_as``)

``index(N)`` is the measured BM25 / MiniLM index at N (mpnet: N documents at the benchmarked rate of
``results/bench/encoders.txt``); a method whose online retrieval was not measured here keeps its recorded time
(constant in N). Training (ToolLens pairs, the feedback on training instructions) and per-query LLM calls do not
depend on the library; Re-Invoke's document expansion is N x m LLM answers.

**Query rate.** Online cost is paid per query: at ``r`` queries per second a method needs ``r x online(N)`` seconds
of this machine per second, so it sustains at most ``1 / online(N)`` queries per second when queries come one at a
time (:func:`growth_table`'s ``max queries/s``); batching many queries into one call (a high rate) amortizes the
per-call overhead -- the measured batched / single-call ratio.
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from toolkit.methods.base import Cost

MEASURED = ("BM25", "Dense MiniLM", "BM25 + Dense MiniLM (RRF)")
# the index each method builds over the library (its offline cost that grows with N); "minilm": MiniLM encodings
INDEX_OF = {"BM25": "bm25", "Dense MiniLM": "minilm", "Dense mpnet": "mpnet", "DPR (ToolLens)": "minilm",
            "Iterative feedback": "minilm", "Re-Invoke (intents only)": "minilm", "ToolRerank": "minilm",
            "Re-Invoke": "minilm", "Query generation": "mpnet"}
# methods whose offline LLM calls are per API of the library (Re-Invoke's synthetic queries: N x m answers)
EXPANDS_DOCUMENTS = ("Re-Invoke",)


# --- the fit --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PowerLaw:
    """t = a * N^b fitted on ``n_points`` sizes; ``r2`` of the log-log line."""
    a: float
    b: float
    r2: float
    n_points: int

    def __call__(self, n):
        return self.a * np.power(np.asarray(n, dtype=float), self.b)

    def growth(self, tol: float = 0.15) -> str:
        """In words: constant (|b| < tol), linear (|b - 1| < tol), else N^b."""
        if abs(self.b) < tol:
            return "constant"
        if abs(self.b - 1) < tol:
            return "linear"
        return f"N^{self.b:.2f}"


def fit_power_law(sizes: Sequence[float], seconds: Sequence[float]) -> PowerLaw:
    """Least squares on (log N, log t): b = cov(log N, log t) / var(log N), log a = mean(log t) - b mean(log N).
    Every size and time must be finite and > 0, with at least two distinct sizes."""
    x, y = np.asarray(sizes, dtype=float), np.asarray(seconds, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"fit_power_law: {x.shape} sizes for {y.shape} times")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y)) and np.all(x > 0) and np.all(y > 0)):
        raise ValueError("fit_power_law: sizes and times must be finite and > 0")
    if len(np.unique(x)) < 2:
        raise ValueError("fit_power_law: needs at least two distinct sizes")
    lx, ly = np.log(x), np.log(y)
    b = float(np.sum((lx - lx.mean()) * (ly - ly.mean())) / np.sum((lx - lx.mean()) ** 2))
    la = float(ly.mean() - b * lx.mean())
    resid = ly - (la + b * lx)
    ss = float(np.sum((ly - ly.mean()) ** 2))
    r2 = 1.0 - float(np.sum(resid ** 2)) / ss if ss > 0 else 1.0
    return PowerLaw(math.exp(la), b, r2, len(x))


# --- the libraries --------------------------------------------------------------------------------------------

def nested_subsets(doc_ids: Sequence[str], keep: set[str] | Sequence[str], sizes: Sequence[int],
                   seed: int = 0) -> dict[int, list[str]]:
    """{N: doc ids} for each size: ``keep`` (the gold APIs, in ``doc_ids`` order) plus the first N - |keep| of one
    seeded permutation of the other ids, so every smaller library is contained in every larger one. A size below
    |keep| or above the library is an error."""
    doc_ids = list(doc_ids)
    keep = set(keep)
    unknown = keep - set(doc_ids)
    if unknown:
        raise ValueError(f"nested_subsets: {len(unknown)} ids to keep are not in the library (e.g. {sorted(unknown)[0]!r})")
    kept = [d for d in doc_ids if d in keep]
    rest = [d for d in doc_ids if d not in keep]
    order = [rest[i] for i in np.random.default_rng(seed).permutation(len(rest))]
    out = {}
    for n in sorted(sizes):
        if n < len(kept) or n > len(doc_ids):
            raise ValueError(f"nested_subsets: size {n} must be between the {len(kept)} kept ids and the library's "
                             f"{len(doc_ids)}")
        out[n] = kept + order[:n - len(kept)]
    return out


# --- measuring ------------------------------------------------------------------------------------------------

def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    """The median wall-clock seconds of ``repeats`` calls of ``fn``."""
    times = []
    for _ in range(max(repeats, 1)):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(statistics.median(times))


def measure(corpus: Mapping, queries: Mapping[str, str], qrels: Mapping[str, Mapping[str, int]],
            sizes: Sequence[int], seed: int = 0, repeats: int = 3, encode_docs: int = 32, encode_queries: int = 16,
            single_queries: int = 16, rrf_k: int = 60, ties: str = "trec",
            log: Callable[[str], None] | None = print) -> tuple[pd.DataFrame, pd.DataFrame]:
    """BM25, Dense MiniLM and their RRF fusion on nested libraries of ``sizes`` (gold APIs of ``qrels`` kept).
    Returns (points, quality): points has one row per (method, part, component, size) with ``seconds`` (offline:
    for the whole library; online: per query) and ``how``; quality: NDCG@5 of the three methods per size on the
    queries (deterministic: the vectors come from the embedding cache)."""
    from toolkit.baselines import PROFILES
    from toolkit.methods.fusion import rrf
    from toolkit.metrics import evaluate
    from toolkit.retrieval import DenseRetriever, build_retriever
    from toolkit.retrieval.models import load_encoder

    gold = {d for q in qrels.values() for d in q}
    libs = nested_subsets(list(corpus), gold, sizes, seed)
    qids = list(queries)
    qtexts = [queries[q] for q in qids]
    enc = load_encoder("minilm")
    enc.encode(qtexts[:1], show_progress_bar=False)                    # warm-up: kernels, tokenizer
    rng = np.random.default_rng(seed)
    rows, quality = [], []
    # encoding a query does not read the library: timed once, the same at every size
    qs = qtexts[:encode_queries]
    t_qenc = median_seconds(lambda: enc.encode(qs, batch_size=32, normalize_embeddings=True,
                                               show_progress_bar=False), repeats) / len(qs)
    t_qenc1 = median_seconds(lambda: [enc.encode([t], normalize_embeddings=True, show_progress_bar=False)
                                      for t in qs], repeats) / len(qs)

    def add(method, part, component, n, seconds, how):
        rows.append({"method": method, "part": part, "component": component, "size": n, "seconds": seconds,
                     "how": how})

    for n, ids in libs.items():
        texts = [corpus[d].text for d in ids]
        # BM25
        params = PROFILES["standard"].bm25_params()
        holder = {}

        def index_bm25():
            holder["bm25"] = build_retriever("bm25", **params)
            holder["bm25"].index(ids, texts)
        t_index = median_seconds(index_bm25, repeats)
        bm25 = holder["bm25"]
        t_batch = median_seconds(lambda: bm25.search(dict(queries), k=100), repeats) / len(qids)
        one = qids[:single_queries]
        t_single = median_seconds(lambda: [bm25.search({q: queries[q]}, k=100) for q in one], repeats) / len(one)
        add("BM25", "offline", "index", n, t_index, "measured: tokenize and index the N documents")
        add("BM25", "online", "search", n, t_batch, "measured: all queries in one call")
        add("BM25", "online single", "search", n, t_single, "measured: one query per call")
        # Dense MiniLM: a document batch encoded without the cache (per document), the stored vectors indexed
        sample = [texts[i] for i in rng.choice(len(texts), size=min(encode_docs, len(texts)), replace=False)]
        t_doc = median_seconds(lambda: enc.encode(sample, batch_size=32, normalize_embeddings=True,
                                                  show_progress_bar=False), repeats) / len(sample)
        dense = DenseRetriever("minilm", show_progress=False)
        t_vec = median_seconds(lambda: dense.index(ids, texts), repeats)
        qvec = dense.embed(qtexts)
        t_search = median_seconds(lambda: dense.search_embeddings(qids, qvec, k=100), repeats) / len(qids)
        t_search1 = median_seconds(lambda: [dense.search_embeddings([q], qvec[i:i + 1], k=100)
                                            for i, q in enumerate(one)], repeats) / len(one)
        add("Dense MiniLM", "offline", "encode documents", n, t_doc * n,
            f"derived: N x {len(sample)}-document batch encoded (measured per document)")
        add("Dense MiniLM", "offline", "index vectors", n, t_vec, "measured: stored vectors into the index")
        add("Dense MiniLM", "online", "encode query", n, t_qenc,
            f"measured once ({len(qs)} queries in one batch): does not read the library")
        add("Dense MiniLM", "online", "search", n, t_search, "measured: exact inner product, all queries")
        add("Dense MiniLM", "online single", "encode query", n, t_qenc1, "measured once: one query per call")
        add("Dense MiniLM", "online single", "search", n, t_search1, "measured: one query per call")
        # RRF of the two runs
        run_b, run_d = bm25.search(dict(queries), k=100), dense.search_embeddings(qids, qvec, k=100)
        t_fuse = median_seconds(lambda: rrf([run_b, run_d], k=rrf_k), repeats) / len(qids)
        add("BM25 + Dense MiniLM (RRF)", "online", "fuse", n, t_fuse, "measured: RRF of the two runs")
        fused = rrf([run_b, run_d], k=rrf_k)
        for m, run in (("BM25", run_b), ("Dense MiniLM", run_d), ("BM25 + Dense MiniLM (RRF)", fused)):
            v = evaluate({q: run.get(q, {}) for q in qrels}, qrels, ["ndcg@5"], ties=ties)["ndcg@5"]
            quality.append({"method": m, "size": n, "ndcg@5": float(v), "queries": len(qrels)})
        if log:
            log(f"{n:>6,} APIs: BM25 index {t_index:.2f} s, search {t_batch * 1000:.2f} ms/query; MiniLM "
                f"{t_doc * 1000:.1f} ms/document, query {t_qenc * 1000:.1f} + search {t_search * 1000:.2f} ms")
    points = pd.DataFrame(rows)
    # the fused method: the sum of its parts
    parts = points[points["method"].isin(["BM25", "Dense MiniLM"]) & points["part"].isin(["offline", "online"])]
    points = pd.concat([points, parts.assign(method="BM25 + Dense MiniLM (RRF)")], ignore_index=True)
    return points, pd.DataFrame(quality)


def measure_methods(methods: Mapping[str, Callable], corpus: Mapping, queries: Mapping[str, str],
                    qrels: Mapping[str, Mapping[str, int]], sizes: Sequence[int], seed: int = 0, repeats: int = 3,
                    single_queries: int = 16, ties: str = "trec", log: Callable[[str], None] | None = print
                    ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Methods outside the built-ins (``methods``: name -> zero-argument factory, e.g. notebook 50's ``methods``
    parameter) measured as :func:`measure` measures BM25, on the same nested libraries: offline is a new instance's
    ``offline`` on the N documents, online its ``online`` with every query in one call and one query per call
    (per query), each the median of ``repeats``; NDCG@5 per size. Returns (points, quality) in :func:`measure`'s
    columns. A method pending on the library (:class:`toolkit.methods.MethodPending`) is left out, as it is from
    the leaderboard."""
    from toolkit.metrics import evaluate
    from toolkit.methods.base import MethodPending
    gold = {d for q in qrels.values() for d in q}
    libs = nested_subsets(list(corpus), gold, sizes, seed)
    qids = list(queries)
    one = qids[:single_queries]
    rows, quality = [], []
    for name, factory in methods.items():
        for n, ids in libs.items():
            sub = {d: corpus[d] for d in ids}
            holder = {}

            def offline():
                holder["m"] = factory()
                holder["m"].offline(sub)
            try:
                t_off = median_seconds(offline, repeats)
                m = holder["m"]
                t_batch = median_seconds(lambda: m.online(dict(queries)), repeats) / len(qids)
                t_single = median_seconds(lambda: [m.online({q: queries[q]}) for q in one], repeats) / len(one)
                run_ = m.online(dict(queries))
            except MethodPending as e:
                if log:
                    log(f"{name}: pending on the nested libraries ({e.pending.reason})")
                break
            for part, secs, how in (("offline", t_off, "measured: offline(corpus) on the N documents"),
                                    ("online", t_batch, "measured: online(queries), all queries in one call"),
                                    ("online single", t_single, "measured: online(queries), one query per call")):
                rows.append({"method": name, "part": part, "component": "method", "size": n, "seconds": secs,
                             "how": how})
            v = evaluate({q: run_.get(q, {}) for q in qrels}, qrels, ["ndcg@5"], ties=ties)["ndcg@5"]
            quality.append({"method": name, "size": n, "ndcg@5": float(v), "queries": len(qrels)})
            if log:
                log(f"{n:>6,} APIs: {name} offline {t_off:.2f} s, online {t_batch * 1000:.2f} ms/query")
    return (pd.DataFrame(rows, columns=["method", "part", "component", "size", "seconds", "how"]),
            pd.DataFrame(quality, columns=["method", "size", "ndcg@5", "queries"]))


def totals(points: pd.DataFrame) -> pd.DataFrame:
    """Measured offline seconds and online seconds per query per (method, size): the components summed."""
    tot = points.groupby(["method", "part", "size"], sort=False)["seconds"].sum().unstack("part").reset_index()
    return tot.rename(columns={"offline": "offline s", "online": "online s/query",
                               "online single": "online s/query, one per call"})


# --- derived costs for every method ----------------------------------------------------------------------------

def benchmark_costs(result) -> dict[str, Cost]:
    """Each method's cost record of a :class:`toolkit.methods.benchmark.Result`: the measured one, else (a method
    pending everywhere) its estimate, ``ms_as`` resolved against the measured methods."""
    out = {p["method"]: p["estimate"].resolved(result.costs) for p in result.pending}
    out.update(result.costs)
    return out


def growth_table(points: pd.DataFrame, costs: Mapping[str, Cost], library_size: int,
                 mpnet_docs_per_second: float | None = None,
                 parts: Mapping[str, Sequence[str]] | None = None) -> pd.DataFrame:
    """One row per (method, size): offline seconds, online seconds per query, max queries/s (1 / online) and
    where the numbers come from ("measured" for :data:`MEASURED` and every method :func:`measure_methods` timed,
    else "derived"). ``costs``: each method's cost
    record on the ``library_size``-API library (the leaderboard's, or a pending method's estimate, ``ms_as``
    resolved or not). ``parts``: combination -> its parts (an RRF combination: the parts' sum plus the measured
    fusion). Methods whose index is unknown (:data:`INDEX_OF`, a combination without parts) are left out."""
    tot = totals(points)
    sizes = sorted(tot["size"].unique())
    at = {(r["method"], r["size"]): r for r in tot.to_dict("records")}

    def measured(method, n, col):
        return float(at[method, n][col])

    def index_s(kind, n):
        if kind == "bm25":
            return measured("BM25", n, "offline s")
        if kind == "minilm":
            return measured("Dense MiniLM", n, "offline s")
        if kind == "mpnet" and mpnet_docs_per_second:
            return n / mpnet_docs_per_second
        return float("nan")

    timed = set(tot["method"])
    rows = []
    for method, c in costs.items():
        kind = INDEX_OF.get(method)
        if method in timed:
            for n in sizes:
                off, on = measured(method, n, "offline s"), measured(method, n, "online s/query")
                rows.append({"method": method, "size": n, "offline s": off, "online s/query": on,
                             "source": "measured"})
            continue
        if kind is None:
            continue
        for n in sizes:
            llm = c.llm_seconds * (n / library_size if method in EXPANDS_DOCUMENTS else 1.0)
            off = llm + c.training_minutes * 60 + index_s(kind, n)
            if c.ms_as is not None and c.ms_as[0] in MEASURED:
                on = c.llm_seconds_per_query + c.ms_as[1] * measured(c.ms_as[0], n, "online s/query")
                how = f"derived: {c.ms_as[1]:.2g} x {c.ms_as[0]} search at N"
            elif c.ms_per_query is not None:
                base = measured("Dense MiniLM", n, "online s/query") if method.startswith("ToolRerank") else 0.0
                on = c.llm_seconds_per_query + c.ms_per_query / 1000 + base
                how = "derived: recorded per-query time" + (" + Dense MiniLM first stage at N" if base else "")
            else:
                on = float("nan")
                how = "derived"
            terms = []
            if c.llm_seconds:
                terms.append("LLM x N/N_lib" if method in EXPANDS_DOCUMENTS else "LLM (constant)")
            if c.training_minutes:
                terms.append("training (constant)")
            terms.append(f"{kind} index at N")
            if c.llm_seconds_per_query:
                how += " + LLM per query (constant)"
            rows.append({"method": method, "size": n, "offline s": off, "online s/query": on,
                         "source": f"online {how}; offline: {' + '.join(terms)}"})
    fuse = points[points["component"] == "fuse"].groupby("size")["seconds"].first()
    done = {r["method"] for r in rows}
    for combo, ps in (parts or {}).items():
        if combo in done or combo not in costs or not ps or not all(p in done for p in ps):
            continue
        for n in sizes:
            got = [r for r in rows if r["method"] in ps and r["size"] == n]
            rows.append({"method": combo, "size": n, "offline s": sum(r["offline s"] for r in got),
                         "online s/query": sum(r["online s/query"] for r in got) + float(fuse.get(n, 0.0)),
                         "source": f"derived: sum of {' + '.join(ps)} at N + the measured fusion"})
    out = pd.DataFrame(rows)
    out["max queries/s"] = 1.0 / out["online s/query"]
    return out


def fit_table(growth: pd.DataFrame) -> pd.DataFrame:
    """Per method: the power law of offline seconds and of online seconds per query against N (b, r2, in words),
    and both costs at the largest size."""
    rows = []
    for method, g in growth.groupby("method", sort=False):
        g = g.sort_values("size")
        row = {"method": method, "source": "measured" if g["source"].iloc[0] == "measured" else "derived"}
        for col, label in (("offline s", "offline"), ("online s/query", "online")):
            ok = g[np.isfinite(g[col]) & (g[col] > 0)]
            if ok["size"].nunique() >= 2:
                f = fit_power_law(ok["size"], ok[col])
                row.update({f"{label} b": f.b, f"{label} r2": f.r2, f"{label} grows": f.growth()})
            else:
                row.update({f"{label} b": float("nan"), f"{label} r2": float("nan"), f"{label} grows": ""})
        last = g.iloc[-1]
        row.update({f"offline s at {int(last['size']):,}": last["offline s"],
                    f"online s/query at {int(last['size']):,}": last["online s/query"],
                    "max queries/s": last["max queries/s"]})
        rows.append(row)
    return pd.DataFrame(rows).set_index("method")


def batching_table(points: pd.DataFrame) -> pd.DataFrame:
    """Per measured retriever and size: online seconds per query with every query in one call (a high query rate,
    batched) and one query per call (a low rate), and their ratio."""
    tot = totals(points)
    tot = tot[tot["method"].isin(["BM25", "Dense MiniLM"])]
    out = tot[["method", "size", "online s/query", "online s/query, one per call"]].copy()
    out["one per call / batched"] = out["online s/query, one per call"] / out["online s/query"]
    return out.set_index(["method", "size"])


def scaling_figure(growth: pd.DataFrame, path):
    """Offline seconds and online seconds per query against the library size (log-log), measured methods solid,
    derived dashed (the derived RRF combinations, sums of the plotted parts, left out of the figure); saved to
    ``path`` (png) with every point beside it as csv. Returns the figure."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    shown = growth[~growth["source"].str.startswith("derived: sum")]
    colors = plt.get_cmap("tab20").colors
    for i, (method, g) in enumerate(shown.groupby("method", sort=False)):
        g = g.sort_values("size")
        meas = g["source"].iloc[0] == "measured"
        for ax, col in zip(axes, ("offline s", "online s/query")):
            ok = g[np.isfinite(g[col]) & (g[col] > 0)]
            if not ok.empty:
                ax.plot(ok["size"], ok[col], "o-" if meas else "s--", color=colors[(2 * i) % 20 + (i >= 10)],
                        lw=1.5 if meas else 1, ms=5 if meas else 3, label=method)
    for ax, label in zip(axes, ("offline seconds (whole library)", "online seconds per query")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("library size N (APIs, log scale)")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_title("Offline cost against N (solid: measured; dashed: derived)")
    axes[1].set_title("Online cost per query against N")
    axes[1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    growth.to_csv(str(path).rsplit(".", 1)[0] + ".csv", index=False)
    return fig


# --- notebook 50's glue ------------------------------------------------------------------------------------------

def run(cfg, sets: Mapping, log: Callable[[str], None] | None = print,
        methods: Mapping[str, Callable] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`measure` on the in-domain sets' library with the configuration's sizes (None: the whole library),
    the union of their queries timed (``cfg``: :class:`toolkit.methods.benchmark.HeadToHeadConfig`); ``methods``
    (name -> factory: the user's, notebook 50's ``methods`` parameter) measured on the same libraries by
    :func:`measure_methods`."""
    from toolkit.methods.benchmark import IN_DOMAIN
    corpus = sets[IN_DOMAIN[0]].corpus
    sizes = sorted({len(corpus) if n is None else n for n in cfg.scaling_sizes})
    queries = {q: t for g in IN_DOMAIN for q, t in sets[g].query_texts().items()}
    qrels = {q: r for g in IN_DOMAIN for q, r in sets[g].qrels.items()}
    timed = max(1, min(cfg.timing_texts, len(queries)))
    points, quality = measure(corpus, queries, qrels, sizes, seed=cfg.scaling_seed, repeats=cfg.scaling_repeats,
                              encode_docs=cfg.scaling_encode_docs, encode_queries=timed, single_queries=timed,
                              rrf_k=cfg.rrf_k, ties=cfg.ties, log=log)
    if methods:
        p2, q2 = measure_methods(methods, corpus, queries, qrels, sizes, seed=cfg.scaling_seed,
                                 repeats=cfg.scaling_repeats, single_queries=timed, ties=cfg.ties, log=log)
        points = pd.concat([points, p2], ignore_index=True)
        quality = pd.concat([quality, q2], ignore_index=True)
    return points, quality


def record(rec, points: pd.DataFrame, quality: pd.DataFrame, growth: pd.DataFrame, fits: pd.DataFrame,
           gold: int) -> None:
    """Cells (paper key ``headtohead``, table ``scaling``): per size the library's documents and gold APIs kept
    and the three measured methods' NDCG@5 (deterministic), and every method's offline seconds and online seconds
    per query (timings: checked for a finite value >= 0, not to the digit); the measured components and the fits
    go into ``rec.extra['scaling']``."""
    for n in sorted(quality["size"].unique()):
        rec.add(paper="headtohead", table="scaling", dataset=f"library-{n}", method="library", metric="documents",
                value=int(n), ours_only=True)
        rec.add(paper="headtohead", table="scaling", dataset=f"library-{n}", method="library", metric="gold_apis",
                value=int(gold), ours_only=True)
    for r in quality.to_dict("records"):
        rec.add(paper="headtohead", table="scaling", dataset=f"library-{r['size']}", method=r["method"],
                metric="ndcg@5", value=r["ndcg@5"], n_queries=int(r["queries"]), ours_only=True)
    for r in growth.to_dict("records"):
        for col, metric in (("offline s", "offline_seconds"), ("online s/query", "online_seconds_per_query")):
            if np.isfinite(r[col]):
                rec.add(paper="headtohead", table="scaling", dataset=f"library-{r['size']}", method=r["method"],
                        metric=metric, value=float(r[col]), ours_only=True, note=r["source"])
    rec.extra["scaling"] = {"points": points.to_dict(orient="records"),
                            "growth": growth.to_dict(orient="records"),
                            "fits": fits.reset_index().to_dict(orient="records")}


def _s(x: float) -> str:
    """Seconds in a readable unit."""
    if not np.isfinite(x):
        return "n/a"
    if x < 1:
        return f"{x * 1000:.3g} ms"
    if x < 120:
        return f"{x:.1f} s"
    if x < 7200:
        return f"{x / 60:.0f} min"
    return f"{x / 3600:.1f} h"


def reading(fits: pd.DataFrame, growth: pd.DataFrame, points: pd.DataFrame, batching: pd.DataFrame) -> str:
    """How each cost grows with N and the query rate, formatted from the run (markdown)."""
    sizes = sorted(growth["size"].unique())
    lo, hi = sizes[0], sizes[-1]
    tot = totals(points).set_index(["method", "size"])
    comp = points.set_index(["method", "part", "component", "size"])["seconds"]

    def at(m, n, col):
        return float(growth[(growth["method"] == m) & (growth["size"] == n)][col].iloc[0])

    def b(m, part):
        f = fits.loc[m]
        v = f[f"{part} b"]
        return f"b = {0.0 if abs(v) < 0.005 else v:.2f} ({f[f'{part} grows']})"
    lines = [f"- **Measured** on nested libraries of {', '.join(f'{n:,}' for n in sizes)} APIs (gold APIs kept; "
             f"medians of repeats on a shared 2-core machine), fitted as t = a·N^b:"]
    if "BM25" in fits.index:
        lines.append(f"  - BM25: indexing {b('BM25', 'offline')}, {_s(at('BM25', lo, 'offline s'))} at {lo:,} to "
                     f"{_s(at('BM25', hi, 'offline s'))} at {hi:,}; search {b('BM25', 'online')}, "
                     f"{_s(at('BM25', hi, 'online s/query'))} per query at {hi:,}.")
    if "Dense MiniLM" in fits.index:
        doc = comp["Dense MiniLM", "offline", "encode documents", hi] / hi
        q = comp["Dense MiniLM", "online", "encode query", hi]
        srch = comp["Dense MiniLM", "online", "search", hi]
        fs = fit_power_law(sizes, [comp["Dense MiniLM", "online", "search", n] for n in sizes])
        lines.append(f"  - Dense MiniLM: offline is encoding every document, {b('Dense MiniLM', 'offline')}: "
                     f"{_s(doc)} per document measured, {_s(at('Dense MiniLM', hi, 'offline s'))} for {hi:,}; "
                     f"online {b('Dense MiniLM', 'online')}: encoding the query ({_s(q)}) dominates the exact "
                     f"search over the N vectors ({_s(srch)} at {hi:,}; the search alone b = {fs.b:.2f}).")
    if "BM25 + Dense MiniLM (RRF)" in fits.index:
        fuse = comp["BM25 + Dense MiniLM (RRF)", "online", "fuse", hi]
        lines.append(f"  - RRF fusion adds {_s(fuse)} per query (it reads the runs' top 100, not the library): the "
                     f"fused method grows as its parts, offline {b('BM25 + Dense MiniLM (RRF)', 'offline')}, online "
                     f"{b('BM25 + Dense MiniLM (RRF)', 'online')}.")
    yours = [m for m in fits.index if fits.loc[m, "source"] == "measured" and m not in MEASURED]
    for m in yours:
        lines.append(f"  - {m} (added through `methods`): offline {b(m, 'offline')}, "
                     f"{_s(at(m, hi, 'offline s'))} at {hi:,}; online {b(m, 'online')}, "
                     f"{_s(at(m, hi, 'online s/query'))} per query at {hi:,}.")
    derived = fits[fits["source"] == "derived"]
    if not derived.empty:
        lines.append("- **Derived** (the cost records on the whole library, the measured retrievers at N):")
        for m, f in derived.iterrows():
            lines.append(f"  - {m}: offline {b(m, 'offline')}, {_s(at(m, hi, 'offline s'))} at {hi:,}; online "
                         f"{b(m, 'online')}, {_s(at(m, hi, 'online s/query'))} per query.")
        lines.append("  A small offline b beside a training or an LLM step says that the fixed part (training, the "
                     "feedback on training instructions) dominates at these sizes: the index under it still grows "
                     "as Dense MiniLM's, and takes over in a library large enough. The online b of the LLM methods "
                     "is 0: their LLM seconds per query do not read the library.")
    fastest = fits["max queries/s"].idxmax()
    slowest = fits["max queries/s"].idxmin()
    lines.append(f"- **Query rate.** Online cost is per query, so the machine time grows linearly with the rate: "
                 f"at {hi:,} APIs this machine sustains at most {fits.loc[fastest, 'max queries/s']:,.0f} queries/s "
                 f"with {fastest} and {fits.loc[slowest, 'max queries/s']:.2g} with {slowest} (1 / online seconds "
                 f"per query; a higher rate needs proportionally more machines, or a server for the LLM calls).")
    if not batching.empty:
        r = batching.xs(hi, level="size")["one per call / batched"]
        lines.append("  Batching the queries of a high rate into one call: one query per call costs "
                     + ", ".join(f"{v:.1f}x the batched time with {m}" for m, v in r.items())
                     + f" (at {hi:,} APIs).")
    return "\n".join(lines)


def paper_needs(costs: Mapping[str, Cost], fits: pd.DataFrame, library_size: int) -> str:
    """What the ``paper`` profile needs, with this run's rates (markdown): a GPU for bert-base training and the
    cross-encoder, an OpenAI-compatible server for the large LLM (the ``paper`` profile)."""
    from toolkit.feedback.config import config_for as feedback_config
    from toolkit.methods.catalog import RERANKER_PAIRS_PER_SECOND
    from toolkit.reinvoke.config import config_for as reinvoke_config
    from toolkit.toolrerank.experiment import PROFILES as TOOLRERANK_SETUPS
    fb, rv, tr = feedback_config("paper"), reinvoke_config("paper"), TOOLRERANK_SETUPS["paper"]
    lines = []
    trr = costs.get("ToolRerank")
    if trr is not None:
        lines.append(f"- **A GPU** for {tr.base} (ToolRerank's dual encoder, cross-encoder and classifier; the "
                     f"feedback loop's retriever, {fb.base}): on this machine the MiniLM versions took "
                     f"{trr.training_minutes:.0f} min (ToolRerank) and "
                     f"{costs['Iterative feedback'].training_minutes:.0f} min (feedback: warm-up + training) to "
                     f"train, and the MiniLM cross-encoder scores {RERANKER_PAIRS_PER_SECOND} pairs/s, "
                     f"{_s(trr.ms_per_query / 1000)} per query for its candidates -- constant in the library size, "
                     f"but several times more for bert-base's larger model.")
    rei = costs.get("Re-Invoke")
    if rei is not None and rei.llm_seconds:
        per_answer = rei.llm_seconds / library_size
        lines.append(f"- **An OpenAI-compatible server** for the large LLM ({fb.llm} in the feedback paper's "
                     f"profile): Re-Invoke's expansion at the paper's m = {rv.m} is {library_size:,} x {rv.m} "
                     f"answers, {_s(per_answer * library_size * rv.m)} at this machine's "
                     f"{per_answer:.1f} s per answer (linear in N x m), and the per-query LLM calls "
                     f"(feedback {_s(costs['Iterative feedback'].llm_seconds_per_query)}, Re-Invoke's intents "
                     f"{_s(costs['Re-Invoke (intents only)'].llm_seconds_per_query)} per query here) do not depend on "
                     f"the library: a server's throughput sets the query rate those methods sustain.")
    return "\n".join(lines)
