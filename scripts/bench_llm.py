#!/usr/bin/env python
"""Throughput of the local LLM client on Re-Invoke intent extraction (Fig. 5 prompt).

Generations per minute over the first N ToolE multi-tool queries (file order), same model, same
greedy sampling, for:

  naive         one call at a time, every prompt processed from scratch (no KV/prefix reuse)
  prefix        one call at a time, llama.cpp reuses the KV cache of the shared prompt prefix
  default       the client's default: prefix reuse, and n_parallel sequences decoded together when
                there are enough threads (on 2 cores: 1 slot, i.e. the same as "prefix")
  parallel      prefix reuse + --parallel (default 4) sequences decoded together

Model loading is excluded (one untimed warm-up call per variant). Every variant writes to a fresh
temporary cache, so all N answers are really generated. Outputs are compared with the naive run
(greedy decoding; batching and prefix reuse change floating-point summation order, which can flip
a near-tie token, so "identical" is measured, not assumed).

    python scripts/bench_llm.py                       # qwen-1.5b, 50 queries
    python scripts/bench_llm.py --model qwen-0.5b --n 20 --variants naive default
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path


from toolkit.llm import parsers
from toolkit.llm.backends import DEFAULT_PARALLEL, Backend, LocalGGUFBackend, default_threads
from toolkit.llm.client import LLMClient
from toolkit.llm.tasks import INTENTS, dataset_items


class Recording(Backend):
    """Delegates to a backend and keeps every Answer (token counts, cached prefix length)."""

    def __init__(self, inner: Backend):
        self.inner, self.name, self.model_id = inner, inner.name, inner.model_id
        self.max_concurrency = inner.max_concurrency
        self.answers = []

    def generate(self, req):
        a = self.inner.generate(req)
        self.answers.append(a)
        return a

    def close(self):
        self.inner.close()


VARIANTS = {
    "naive": dict(n_parallel=1, prompt_cache=False),
    "prefix": dict(n_parallel=1, prompt_cache=True),
    "default": dict(),                                   # LocalGGUFBackend defaults
    "parallel": dict(prompt_cache=True),                 # n_parallel from --parallel
}


def run_variant(name: str, model: str, prompts: list[str], threads: int, parallel: int | None) -> dict:
    kw = dict(VARIANTS[name])
    if name == "parallel":
        kw["n_parallel"] = parallel or DEFAULT_PARALLEL
    backend = Recording(LocalGGUFBackend(model, n_threads=threads, **kw))
    with tempfile.TemporaryDirectory() as tmp:
        client = LLMClient(backend, namespace="bench", cache_root=tmp, progress=True)
        client.chat(f"warm-up {time.time()}", max_tokens=1)             # load the model, untimed
        backend.answers.clear()
        load0 = os.getloadavg()[0]
        t0 = time.perf_counter()
        out = client.generate(prompts, sampling=INTENTS.sampling, desc=name)
        wall = time.perf_counter() - t0
        client.close()
    ans = backend.answers
    return {
        "variant": name, "n_parallel": backend.inner.n_parallel, "prompt_cache": backend.inner.prompt_cache,
        "threads": threads, "n": len(prompts), "seconds": round(wall, 1),
        "generations_per_minute": round(len(prompts) / wall * 60, 2),
        "prompt_tokens_computed": sum(a.extra.get("prompt_n") or 0 for a in ans),
        "prompt_tokens_reused": sum(a.cached_tokens or 0 for a in ans),
        "completion_tokens": sum(a.completion_tokens or 0 for a in ans),
        "loadavg_start": round(load0, 2), "loadavg_end": round(os.getloadavg()[0], 2),
        "outputs": [o[0] for o in out],
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen-1.5b")
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--threads", type=int, default=None, help="CPU threads for every variant (default: free cores)")
    ap.add_argument("--parallel", type=int, default=None, help=f"n_parallel of the 'parallel' variant ({DEFAULT_PARALLEL})")
    ap.add_argument("--variants", nargs="+", default=["naive", "default", "parallel"], choices=list(VARIANTS))
    ap.add_argument("--out", default=None, help="write the full results (with outputs) as JSON")
    ap.add_argument("--reference", default=None, help="a previous --out file: compare outputs with its first "
                    "variant (e.g. naive) instead of running it again")
    args = ap.parse_args(argv)

    queries = [q for _, q in dataset_items("toole-multi", "queries")[: args.n]]
    prompts = [INTENTS.build(q) for q in queries]
    threads = args.threads or default_threads()
    print(f"model={args.model} n={len(prompts)} threads={threads} cpus={os.cpu_count()} "
          f"sampling={INTENTS.sampling.key()}", file=sys.stderr)
    results = [run_variant(v, args.model, prompts, threads, args.parallel) for v in args.variants]
    base_run = results[0]
    if args.reference:
        prev = json.loads(Path(args.reference).read_text())["results"][0]
        if prev["n"] != len(prompts):
            raise SystemExit(f"reference has n={prev['n']}, this run n={len(prompts)}")
        base_run = {**prev, "variant": prev["variant"] + " (reference run)"}
    ref, ref_name = base_run["outputs"], base_run["variant"]
    key = "identical_to_reference"
    for r in results:
        r[key] = sum(a == b for a, b in zip(r["outputs"], ref))
        r["parsed_nonempty"] = sum(bool(parsers.parse_intents(o)) for o in r["outputs"])
    base = base_run["generations_per_minute"]
    print(f"\n| variant | n_parallel | prefix reuse | threads | s | gen/min | speed-up vs {ref_name} | "
          f"prompt tok computed | prompt tok reused | identical to {ref_name} | load avg |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['variant']} | {r['n_parallel']} | {'yes' if r['prompt_cache'] else 'no'} | {r['threads']} | "
              f"{r['seconds']} | {r['generations_per_minute']} | {r['generations_per_minute'] / base:.2f}x | "
              f"{r['prompt_tokens_computed']} | {r['prompt_tokens_reused']} | "
              f"{r[key]}/{r['n']} | {r['loadavg_start']}-{r['loadavg_end']} |")
    if args.out:
        meta = {"model": args.model, "n": len(prompts), "threads": threads, "cpus": os.cpu_count(),
                "machine": platform.processor() or platform.machine(), "sampling": INTENTS.sampling.key()}
        Path(args.out).write_text(json.dumps({"meta": meta, "results": results}, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
