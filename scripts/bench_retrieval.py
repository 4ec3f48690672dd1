"""Throughput of the retrieval stack on this machine (a script, not a test).

Prints, with medians over ``--repeats`` runs and the ratios from the same run:
- BM25 over the ToolBench API library (16,427 documents after de-duplication; 16,463 rows):
  index seconds and queries/s, bm25s vs rank_bm25, and how often their top-10 lists agree;
- encoding documents/s with MiniLM and mpnet, cold (an empty temporary cache directory each run)
  and from the cache (shards re-read from disk), plus a cache lookup at library scale;
- dense search queries/s over a library-sized index (exact numpy vs faiss.IndexFlatIP), search
  only and end to end (query encoding + search).

Documents are the library rendered by ``toolkit.data.load_library()`` (ToolBench's corpus.tsv
format); queries are ToolE single-tool queries (``all_clean_data.csv``, column Query), a seeded
sample. Model loading is excluded from rates (printed once). The machine may be shared: the load
average is printed before and after.

    python scripts/bench_retrieval.py                     # a few minutes on 2 CPU cores
    python scripts/bench_retrieval.py --limit-docs 2000 --limit-docs-mpnet 500 --repeats 5
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


from toolkit.retrieval import BM25Retriever, DenseRetriever, embedding_cache, load_encoder
from toolkit.retrieval.embedding_cache import ShardStore, encode, namespace, text_keys


def median_time(fn, repeats: int, setup=None) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        if setup:
            setup()
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def load_data(n_queries: int, seed: int):
    from toolkit.data import load_library, load_toole_single
    docs = load_library()
    queries = load_toole_single().queries
    qids = sorted(random.Random(seed).sample(sorted(queries), min(n_queries, len(queries))))
    return ([d.doc_id for d in docs.values()], [d.text for d in docs.values()],
            {q: queries[q].text for q in qids})


def row(label: str, value: float, unit: str, extra: str = "") -> None:
    print(f"  {label:<48} {value:>10,.1f} {unit:<8} {extra}")


def bench_bm25(doc_ids, texts, queries, n_rank, repeats):
    print(f"\n## BM25 (method=lucene, k1=1.5, b=0.75, same tokenizer) over {len(doc_ids):,} documents")
    qids = list(queries)
    sub = {q: queries[q] for q in qids[:n_rank]}
    rates, runs = {}, {}
    for backend in ("bm25s", "rank_bm25"):
        r = BM25Retriever(backend)
        t_index, _ = median_time(lambda: r.index(doc_ids, texts), 1)
        qs = queries if backend == "bm25s" else sub
        t, _ = median_time(lambda: r.search(qs, k=100), repeats)
        rates[backend] = len(qs) / t
        runs[backend] = r.search(sub, k=10)
        row(f"{backend}: index", t_index, "s")
        row(f"{backend}: search, top-100 ({len(qs):,} queries)", rates[backend], "q/s")
    row("ratio bm25s / rank_bm25", rates["bm25s"] / rates["rank_bm25"], "x")
    same = sum(list(runs["bm25s"][q]) == list(runs["rank_bm25"][q]) for q in sub)
    overlap = np.mean([len(set(runs["bm25s"][q]) & set(runs["rank_bm25"][q])) / max(1, len(runs["bm25s"][q]))
                       for q in sub])
    print(f"  top-10 identical (order included) for {same}/{len(sub)} queries; mean top-10 overlap {overlap:.4f}")


def bench_encode(model, texts, qtexts, repeats):
    tmp = Path(tempfile.mkdtemp(prefix="bench-emb-"))
    roots = iter(range(10 ** 6))
    state = {}

    def fresh():
        state["root"] = tmp / f"cold{next(roots)}"
        embedding_cache._STORES.clear()

    t_cold, _ = median_time(lambda: encode(model, texts, batch_size=32, root=state["root"], show_progress=False),
                            repeats, setup=fresh)
    t_hot, _ = median_time(lambda: encode(model, texts, root=state["root"]), repeats,
                           setup=embedding_cache._STORES.clear)
    t_q, qvecs = median_time(lambda: encode(model, qtexts, batch_size=32, root=state["root"], show_progress=False),
                             repeats, setup=fresh)
    row(f"{model}: documents cold ({len(texts):,} docs)", len(texts) / t_cold, "docs/s")
    row(f"{model}: documents from cache (re-read from disk)", len(texts) / t_hot, "docs/s",
        f"x{t_cold / t_hot:,.0f} vs cold")
    row(f"{model}: queries cold ({len(qtexts):,} ToolE queries)", len(qtexts) / t_q, "q/s")
    shutil.rmtree(tmp, ignore_errors=True)
    return len(qtexts) / t_q


def bench_cache_scale(model, texts, repeats):
    """Lookup of every library text in a store of library size (synthetic vectors: no model calls)."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-emb-"))
    store = ShardStore(tmp / namespace(model)[0], namespace(model)[1])
    keys, dim = text_keys(texts), 384
    rng = np.random.default_rng(0)
    for s in range(0, len(texts), 1024):
        store.append(keys[s:s + 1024], rng.standard_normal((len(keys[s:s + 1024]), dim), dtype=np.float32))
    t, out = median_time(lambda: encode(model, texts, root=tmp), repeats, setup=embedding_cache._STORES.clear)
    assert out.shape == (len(texts), dim)
    row(f"cache lookup, {len(texts):,} texts in {len(list(store.dir.glob('*.keys.npy')))} shards", len(texts) / t,
        "texts/s", f"({t * 1000:.0f} ms, shards read from disk)")
    shutil.rmtree(tmp, ignore_errors=True)


def bench_dense_search(dims, n_docs, n_queries, q_rates, repeats):
    print(f"\n## Dense exact search over {n_docs:,} documents, {n_queries:,} queries, top-100 "
          f"(random unit vectors of the models' shapes: cost depends only on shape)")
    rng = np.random.default_rng(0)
    for model, dim in dims.items():
        D = rng.standard_normal((n_docs, dim), dtype=np.float32)
        D /= np.linalg.norm(D, axis=1, keepdims=True)
        Q = rng.standard_normal((n_queries, dim), dtype=np.float32)
        Q /= np.linalg.norm(Q, axis=1, keepdims=True)
        qids, ids = [f"q{i}" for i in range(n_queries)], [f"d{i}" for i in range(n_docs)]
        rate, runs = {}, {}
        for faiss in (False, True):
            r = DenseRetriever(model, use_faiss=faiss).index_embeddings(ids, D)
            t, runs[faiss] = median_time(lambda: r.search_embeddings(qids, Q, k=100), repeats)
            rate[faiss] = n_queries / t
            row(f"{model} (d={dim}): {'faiss IndexFlatIP' if faiss else 'numpy matmul + top-k'}", rate[faiss], "q/s")
        same = sum(list(runs[False][q]) == list(runs[True][q]) for q in qids)
        close = sum(np.allclose(list(runs[False][q].values()), list(runs[True][q].values()), rtol=0, atol=1e-6)
                    for q in qids)
        row(f"{model}: ratio faiss / numpy", rate[True] / rate[False], "x",
            f"(same top-100 ids in order: {same}/{n_queries} queries; "
            f"same score at every rank within 1e-6: {close}/{n_queries})")
        e2e = 1 / (1 / q_rates[model] + 1 / rate[False])
        row(f"{model}: end to end, cold query encoding + numpy search", e2e, "q/s", "(1 / (1/encode + 1/search))")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=2000, help="ToolE queries for BM25 (bm25s) and dense search")
    ap.add_argument("--rank-bm25-queries", type=int, default=200, help="queries for the (slow) rank_bm25 backend")
    ap.add_argument("--limit-docs", type=int, default=200, help="library documents encoded with MiniLM")
    ap.add_argument("--limit-docs-mpnet", type=int, default=50, help="library documents encoded with mpnet")
    ap.add_argument("--encode-queries", type=int, default=200, help="queries encoded cold per model")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    import torch
    print(f"# bench_retrieval  cpus={os.cpu_count()} torch_threads={torch.get_num_threads()} "
          f"cuda={torch.cuda.is_available()} load_avg={os.getloadavg()[0]:.2f} repeats={args.repeats} (medians)")
    doc_ids, texts, queries = load_data(args.queries, args.seed)
    print(f"data: {len(doc_ids):,} library documents (toolkit.data.load_library, corpus.tsv rendering; "
          f"median {int(np.median([len(t) for t in texts]))} chars), {len(queries):,} ToolE queries (seed {args.seed})")

    bench_bm25(doc_ids, texts, queries, args.rank_bm25_queries, args.repeats)

    print("\n## Encoding (sentence-transformers, batch 32, through the embedding cache)")
    sample = random.Random(args.seed).sample(texts, len(texts))
    qtexts = list(queries.values())[:args.encode_queries]
    q_rates = {}
    for model, n in (("minilm", args.limit_docs), ("mpnet", args.limit_docs_mpnet)):
        t = time.perf_counter()
        load_encoder(model)
        row(f"{model}: load model (once)", time.perf_counter() - t, "s")
        q_rates[model] = bench_encode(model, sample[:n], qtexts, args.repeats)
    bench_cache_scale("minilm", texts, args.repeats)

    bench_dense_search({"minilm": 384, "mpnet": 768}, len(doc_ids), len(queries), q_rates, args.repeats)
    print(f"\nload_avg at end={os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
