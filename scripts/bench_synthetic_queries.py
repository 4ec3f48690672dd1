#!/usr/bin/env python
"""Re-Invoke's query generator (Fig. 4 prompt) with and without stop strings: answers per minute, completion
tokens, the share of answers cut at the token cap, and how the parsed query changes.

Two parts, both printing tables:

  --simulate   no model: cut every cached unstopped answer (data/llm_cache/reinvoke_synthetic_queries) at the
               stop strings, as the server would have, and count what stays capped and what the parser returns
  live         (default) the same seeded sample of tool documents generated from scratch (temporary caches) in
               each variant: nostop (the first generation's sampling), stop (SYNTHETIC_QUERY_STOP); with
               --parallel also the stop variant with that many llama.cpp slots

    python scripts/bench_synthetic_queries.py --simulate
    python scripts/bench_synthetic_queries.py --dataset toolbench-i2 --docs 24 --n 2 --threads 2 --parallel 4 \
        --out results/bench/synthetic_queries.json
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
from pathlib import Path

from toolkit.llm.base import truncate_at_stop
from toolkit.llm.tasks import SYNTHETIC_QUERIES, SYNTHETIC_QUERIES_NOSTOP, SYNTHETIC_QUERY_STOP


def simulate(cache_dir: Path) -> list[dict]:
    """Each cached unstopped answer cut at the stop strings: still capped (the cap came before any stop), parse
    unchanged, parse empty; completion tokens estimated in proportion to the characters kept."""
    parse = SYNTHETIC_QUERIES.parse
    nostop_key = SYNTHETIC_QUERIES_NOSTOP.sampling.key()
    rows = []
    for f in sorted(cache_dir.glob("*.jsonl")):
        configs, ans = {}, []
        for line in f.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            if r["t"] == "c":
                configs[r["id"]] = r["sampling"]
            elif r["t"] == "a":
                ans.append(r)
        ans = [a for a in ans if configs.get(a["c"]) == nostop_key]
        if not ans:
            continue
        cut = [truncate_at_stop(a["text"], SYNTHETIC_QUERY_STOP) for a in ans]
        rows.append({
            "model": f.stem, "answers": len(ans),
            "capped before": sum(a.get("fin") == "length" for a in ans) / len(ans),
            "capped after": sum(a.get("fin") == "length" and not c for a, (_, c) in zip(ans, cut)) / len(ans),
            "parse unchanged": sum(parse(a["text"]) == parse(t) for a, (t, _) in zip(ans, cut)) / len(ans),
            "parse empty after": sum(not parse(t) for t, _ in cut) / len(ans),
            "mean tokens before": statistics.mean(a.get("ntok") or 0 for a in ans),
            "mean tokens after (est.)": statistics.mean((a.get("ntok") or 0) * len(t) / max(len(a["text"]), 1)
                                                        for a, (t, _) in zip(ans, cut)),
        })
    return rows


def live(dataset: str, docs: int, n: int, threads: int, parallel: int | None, model: str, seed: int) -> list[dict]:
    from toolkit.llm.backends import LocalGGUFBackend
    from toolkit.llm.client import LLMClient
    from toolkit.reinvoke.config import config_for
    from toolkit.reinvoke.experiment import eval_sets
    corpus = eval_sets(config_for("standard"), datasets=[dataset])[dataset].llm.corpus
    ids = sorted(corpus)
    random.Random(seed).shuffle(ids)
    texts = [corpus[d].text for d in ids[:docs]]
    variants = [("nostop, 1 slot", SYNTHETIC_QUERIES_NOSTOP, 1), ("stop, 1 slot", SYNTHETIC_QUERIES, 1)]
    if parallel and parallel > 1:
        variants.append((f"stop, {parallel} slots", SYNTHETIC_QUERIES, parallel))
    rows = []
    for name, task, slots in variants:
        backend = LocalGGUFBackend(model, n_threads=threads, n_parallel=slots)
        with tempfile.TemporaryDirectory() as tmp:
            llm = LLMClient(backend, namespace=task.namespace, cache_root=tmp, progress=True)
            llm.chat(f"warm-up {time.time()}", max_tokens=1)           # load the model, untimed
            load0 = os.getloadavg()[0]
            t0 = time.perf_counter()
            out = llm.generate(task.prompts_for(texts), n=n, sampling=task.sampling, desc=name)
            wall = time.perf_counter() - t0
            recs = [a for a in llm.cache().answers() if a.get("ntok") is not None and a.get("ntok", 0) > 1]
            llm.close()
        flat = [a for per in out for a in per]
        rows.append({"variant": name, "slots": slots, "threads": threads, "answers": len(flat),
                     "seconds": round(wall, 1), "answers_per_minute": round(len(flat) / wall * 60, 2),
                     "capped": sum(r.get("fin") == "length" for r in recs) / max(len(recs), 1),
                     "mean_completion_tokens": round(statistics.mean(r["ntok"] for r in recs), 1) if recs else None,
                     "parsed_empty": sum(not task.parse(a) for a in flat),
                     "loadavg": [round(load0, 2), round(os.getloadavg()[0], 2)], "answers_text": flat})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--simulate", action="store_true", help="replay the stop strings on the cached answers; no model")
    ap.add_argument("--cache-dir", default="data/llm_cache/reinvoke_synthetic_queries")
    ap.add_argument("--dataset", default="toolbench-i2", help="whose standard corpus to sample documents from")
    ap.add_argument("--docs", type=int, default=24)
    ap.add_argument("--n", type=int, default=2, help="samples per document (consecutive, as the generation runs)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--parallel", type=int, default=None, help="also run the stop variant with this many slots")
    ap.add_argument("--model", default="qwen-1.5b")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    print(f"stop strings: {list(SYNTHETIC_QUERY_STOP)}")
    if a.simulate:
        rows = simulate(Path(a.cache_dir))
        print("| model | answers | capped before | capped after | parse unchanged | parse empty after | "
              "tokens before | tokens after (est.) |\n|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['model']} | {r['answers']} | {r['capped before']:.1%} | {r['capped after']:.1%} | "
                  f"{r['parse unchanged']:.1%} | {r['parse empty after']:.1%} | {r['mean tokens before']:.1f} | "
                  f"{r['mean tokens after (est.)']:.1f} |")
        return 0
    rows = live(a.dataset, a.docs, a.n, a.threads, a.parallel, a.model, a.seed)
    base = rows[0]["answers_per_minute"]
    print(f"model={a.model} dataset={a.dataset} docs={a.docs} n={a.n} threads={a.threads}")
    print("| variant | answers | s | answers/min | speed-up | capped | mean tokens | parsed empty | load avg |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['variant']} | {r['answers']} | {r['seconds']} | {r['answers_per_minute']} | "
              f"{r['answers_per_minute'] / base:.2f}x | {r['capped']:.1%} | {r['mean_completion_tokens']} | "
              f"{r['parsed_empty']} | {r['loadavg'][0]}-{r['loadavg'][1]} |")
    if a.out:
        meta = {"model": a.model, "dataset": a.dataset, "docs": a.docs, "n": a.n, "threads": a.threads,
                "cpus": os.cpu_count(), "machine": platform.processor() or platform.machine(),
                "date": time.strftime("%Y-%m-%d"), "stop": list(SYNTHETIC_QUERY_STOP)}
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps({"meta": meta, "results": rows}, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
