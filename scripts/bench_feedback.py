"""Benchmark: one feedback round as a multi-turn chat vs three independent calls (same inputs).

    python scripts/bench_feedback.py [--n 8] [--model qwen-1.5b] [--threads 2]

For ``--n`` seeded I2 queries, the top-10 APIs of the off-the-shelf MiniLM over the I2 candidate pool
are given to the LLM; each variant runs with a fresh temporary response cache (every answer really
generated), one llama.cpp slot, prompt-prefix reuse on, model load excluded. Prints wall seconds per
round (median and total), tokens generated, and whether the two variants agree on N/A. A benchmark prints figures; it is not a timed test.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path



def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--model", default="qwen-1.5b")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.n < 1:
        ap.error("--n must be >= 1")

    from toolkit.data import load_dataset
    from toolkit.feedback.round import NAMESPACE, FeedbackConfig, feedback_round, feedback_round_independent
    from toolkit.llm.client import get_client
    from toolkit.retrieval import build_retriever, retrieve

    ds = load_dataset("toolbench-i2", corpus="pool").nested_sample(args.n, args.seed)
    run = retrieve(ds, build_retriever("minilm"), k=10)
    cfg = FeedbackConfig()
    rows = {}
    for name, fn in (("multi-turn chat", feedback_round), ("three independent calls", feedback_round_independent)):
        with tempfile.TemporaryDirectory() as tmp, get_client(args.model, "local", cache_root=tmp, namespace="bench",
                                                               n_threads=args.threads, n_parallel=1) as llm:
            llm.chat("warm-up", max_tokens=1)           # model load outside the timing
            secs, out = [], []
            for qid, q in ds.queries.items():
                docs = [ds.corpus[d] for d in run[qid]]
                t0 = time.perf_counter()
                out.append(fn(llm, q.text, docs, cfg))
                secs.append(time.perf_counter() - t0)
            ans = list(llm.cache(NAMESPACE).answers())          # the rounds' answers (not the warm-up's)
            rows[name] = {"median s/round": statistics.median(secs), "total s": sum(secs),
                          "tokens out": sum(a.get("ntok") or 0 for a in ans), "refined": out}
    a, b = rows["multi-turn chat"], rows["three independent calls"]
    print(f"{args.n} I2 queries, top-10 MiniLM APIs, {args.model}, 1 slot, {args.threads} threads")
    print(f"{'variant':<26}{'median s/round':>16}{'total s':>10}{'tokens out':>12}")
    for name, r in rows.items():
        print(f"{name:<26}{r['median s/round']:>16.1f}{r['total s']:>10.1f}{r['tokens out']:>12}")
    print(f"speed-up of the chat: {b['total s'] / a['total s']:.2f}x; same N/A decision on "
          f"{sum((x.refined is None) == (y.refined is None) for x, y in zip(a['refined'], b['refined']))}/{args.n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
