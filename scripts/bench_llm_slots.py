#!/usr/bin/env python
"""llama.cpp slots x threads for the two long generation workloads: answers per minute of each setting.

The grid is 1, 2 and 4 slots with 1 and 2 threads (``--slots``, ``--threads``), for
  synthetic   Re-Invoke's synthetic-query generator (Fig. 4 prompt, the stop strings) on seeded tool
              documents of the ToolBench I1 pool (``--docs`` x ``--n`` answers);
  feedback    one fair feedback round (``FAIR_FEEDBACK``: comprehension, assessment, decision, refinement as
              one multi-turn chat) on ``--queries`` seeded I2 instructions, top-10 off-the-shelf MiniLM APIs.
Every setting generates from scratch into a temporary cache (greedy answers are not replayed), model load
excluded; the load average before and after is printed beside each row, since another busy process on this
2-core machine slows llama.cpp several-fold. Prints one table per workload and the fastest setting, and
records them in ``--out``. A benchmark prints figures; it is not a timed test.

    python scripts/bench_llm_slots.py --out results/bench/llm_slots.json
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def synthetic_texts(docs: int, seed: int) -> list[str]:
    from toolkit.reinvoke.config import config_for
    from toolkit.reinvoke.experiment import eval_sets
    corpus = eval_sets(config_for("standard"), datasets=["toolbench-i1"])["toolbench-i1"].llm.corpus
    ids = sorted(corpus)
    random.Random(seed).shuffle(ids)
    return [corpus[d].text for d in ids[:docs]]


def run_synthetic(texts: list[str], n: int, slots: int, threads: int, model: str) -> dict:
    from toolkit.llm.client import get_client
    from toolkit.llm.tasks import SYNTHETIC_QUERIES as task
    with tempfile.TemporaryDirectory() as tmp, get_client(model, "local", cache_root=tmp, namespace=task.namespace,
                                                           n_threads=threads, n_parallel=slots) as llm:
        llm.chat(f"warm-up {time.time()}", max_tokens=1)           # model load, untimed
        t0 = time.perf_counter()
        out = llm.generate(task.prompts_for(texts), n=n, sampling=task.sampling, desc=f"synthetic {slots}x{threads}")
        wall = time.perf_counter() - t0
        recs = [a for a in llm.cache(task.namespace).answers() if (a.get("ntok") or 0) > 1]
    answers = sum(len(x) for x in out)
    return {"answers": answers, "seconds": wall, "tokens_out": sum(r["ntok"] for r in recs),
            "capped": sum(r.get("fin") == "length" for r in recs)}


def feedback_inputs(queries: int, seed: int):
    from toolkit.data import load_dataset
    from toolkit.retrieval import build_retriever, retrieve
    ds = load_dataset("toolbench-i2", corpus="pool").nested_sample(queries, seed)
    run = retrieve(ds, build_retriever("minilm"), k=10)
    return [(ds.queries[q].text, [ds.corpus[d] for d in run[q]]) for q in ds.queries]


def run_feedback(items, slots: int, threads: int, model: str) -> dict:
    from toolkit.feedback.config import FAIR_FEEDBACK
    from toolkit.feedback.round import NAMESPACE, feedback_round
    from toolkit.llm.client import get_client
    with tempfile.TemporaryDirectory() as tmp, get_client(model, "local", cache_root=tmp, namespace="bench",
                                                           n_threads=threads, n_parallel=slots) as llm:
        llm.chat(f"warm-up {time.time()}", max_tokens=1)
        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=slots) as ex:
            list(ex.map(lambda it: feedback_round(llm, it[0], it[1], FAIR_FEEDBACK), items))
        wall = time.perf_counter() - t0
        recs = list(llm.cache(NAMESPACE).answers())
    return {"answers": len(recs), "seconds": wall, "tokens_out": sum(r.get("ntok") or 0 for r in recs),
            "capped": sum(r.get("fin") == "length" for r in recs), "instructions": len(items)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workloads", default="synthetic,feedback")
    ap.add_argument("--slots", default="1,2,4")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--docs", type=int, default=8, help="synthetic: tool documents")
    ap.add_argument("--n", type=int, default=2, help="synthetic: queries per document")
    ap.add_argument("--queries", type=int, default=4, help="feedback: instructions (one round each)")
    ap.add_argument("--model", default="qwen-1.5b")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    try:
        slots = [int(x) for x in a.slots.split(",")]
        threads = [int(x) for x in a.threads.split(",")]
    except ValueError:
        ap.error("--slots and --threads are comma lists of whole numbers, e.g. 1,2,4")
    workloads = a.workloads.split(",")
    unknown = set(workloads) - {"synthetic", "feedback"}
    if unknown:
        ap.error(f"unknown workload(s) {sorted(unknown)}; expected synthetic, feedback")
    if min(slots + threads) < 1:
        ap.error("--slots and --threads must be >= 1")
    inputs = {}
    if "synthetic" in workloads:
        inputs["synthetic"] = synthetic_texts(a.docs, a.seed)
    if "feedback" in workloads:
        inputs["feedback"] = feedback_inputs(a.queries, a.seed)
    rows = []
    for w in workloads:
        for t in threads:
            for s in slots:
                load0 = os.getloadavg()[0]
                r = (run_synthetic(inputs[w], a.n, s, t, a.model) if w == "synthetic"
                     else run_feedback(inputs[w], s, t, a.model))
                r.update(workload=w, slots=s, threads=t, answers_per_minute=r["answers"] / r["seconds"] * 60,
                         loadavg=[round(load0, 2), round(os.getloadavg()[0], 2)])
                rows.append(r)
                print(f"{w}: {s} slot(s), {t} thread(s): {r['answers']} answers in {r['seconds']:.1f} s = "
                      f"{r['answers_per_minute']:.2f}/min, {r['tokens_out']} tokens, {r['capped']} at the cap, "
                      f"load {load0:.2f}->{os.getloadavg()[0]:.2f}", flush=True)
    print(f"\nmodel={a.model}; synthetic: {a.docs} I1-pool documents x {a.n}; feedback: {a.queries} I2 instructions, "
          "one fair round each")
    best = {}
    for w in workloads:
        mine = [r for r in rows if r["workload"] == w]
        base = next(r for r in mine if r["slots"] == 1 and r["threads"] == max(threads))["answers_per_minute"] \
            if any(r["slots"] == 1 and r["threads"] == max(threads) for r in mine) else mine[0]["answers_per_minute"]
        print(f"\n{w}\n| threads | slots | answers | s | answers/min | vs 1 slot, {max(threads)} threads | "
              "tokens/s | at cap | load avg |\n|---|---|---|---|---|---|---|---|---|")
        for r in mine:
            print(f"| {r['threads']} | {r['slots']} | {r['answers']} | {r['seconds']:.1f} | "
                  f"{r['answers_per_minute']:.2f} | {r['answers_per_minute'] / base:.2f}x | "
                  f"{r['tokens_out'] / r['seconds']:.1f} | {r['capped']} | {r['loadavg'][0]}-{r['loadavg'][1]} |")
        top = max(mine, key=lambda r: r["answers_per_minute"])
        best[w] = {"slots": top["slots"], "threads": top["threads"], "answers_per_minute": top["answers_per_minute"]}
        print(f"fastest: {top['slots']} slot(s), {top['threads']} thread(s), {top['answers_per_minute']:.2f} answers/min "
              f"(median over settings {statistics.median(r['answers_per_minute'] for r in mine):.2f})")
    if a.out:
        meta = {"model": a.model, "docs": a.docs, "n": a.n, "queries": a.queries, "seed": a.seed,
                "cpus": os.cpu_count(), "machine": platform.machine(), "date": time.strftime("%Y-%m-%d")}
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps({"meta": meta, "best": best, "results": rows}, indent=1) + "\n")
        print(f"recorded in {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
