"""A/B of llama.cpp's DRY sampler on the feedback answers that reached their token cap.

    python scripts/ab_reasoning_dry.py [--llm qwen-0.5b] [--dry 0.8 2.0] [--threads 1] [--out results/bench/feedback_dry.json]

Takes every answer of ``--llm``'s feedback cache (``data/llm_cache/feedback/``) that ended at its cap (``fin`` other
than "stop") and answers the same prompt again, with the same sampling plus ``dry_multiplier`` (each value of
``--dry``; :class:`toolkit.llm.base.Sampling`), with the local model and no cache (nothing is appended: the loop's
own answers come from its run). Prints, per answer and value, whether it now ends before the cap, its tokens and
seconds. Issue 48: the 0.5B model's assessment answers loop a paragraph verbatim to the cap, which the repetition
penalty over the last 64 tokens does not see (``toolkit.feedback.config.FAIR_FEEDBACK_FOR_LLM`` cites this run).
Seconds are not a timing when another job shares the cores.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llm", default="qwen-0.5b")
    ap.add_argument("--dry", type=float, nargs="+", default=[0.8, 2.0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=None, help="also record the figures in this JSON file")
    args = ap.parse_args()
    if any(not d > 0 for d in args.dry):
        ap.error("--dry values must be > 0 (0 is the cached answer's own setting)")
    from toolkit.llm import models
    from toolkit.llm.backends import LocalGGUFBackend
    from toolkit.llm.base import Request, Sampling
    from toolkit.llm.cache import ResponseCache
    from toolkit.llm.client import default_cache_root
    model_id = models.canonical_id(args.llm)
    cache = ResponseCache(default_cache_root(), "feedback", model_id, readonly=True)
    capped = [a for a in cache.answers() if a.get("fin") != "stop"]
    if not capped:
        print(f"no answer of {model_id} in {cache.path} ended at its cap: nothing to compare")
        return 0
    print(f"{len(capped)} of {len(cache)} cached answers of {model_id} ended at their cap")
    backend = LocalGGUFBackend(args.llm, n_parallel=1, n_threads=args.threads)
    rows = []
    for i, a in enumerate(capped):
        base = Sampling(**{**a["sampling"], "stop": tuple(a["sampling"].get("stop", ()))})
        for dry in args.dry:
            ans = backend.generate(Request(a["kind"], a["prompt"], replace(base, dry_multiplier=dry), a["index"]))
            row = {"answer": i, "max_tokens": base.max_tokens, "dry_multiplier": dry, "fin": ans.finish_reason,
                   "tokens": ans.completion_tokens, "seconds": round(ans.seconds or 0.0, 1), "end": ans.text[-160:]}
            rows.append(row)
            print(json.dumps(row), flush=True)
    for dry in args.dry:
        got = [r for r in rows if r["dry_multiplier"] == dry]
        ended = sum(r["fin"] == "stop" for r in got)
        print(f"dry_multiplier {dry}: {ended} of {len(got)} capped answers now end before the cap")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        from toolkit.paths import REPO
        where = cache.path.relative_to(REPO) if cache.path.is_relative_to(REPO) else cache.path
        Path(args.out).write_text(json.dumps({"llm": model_id, "cache": str(where), "capped": len(capped),
                                              "answers": len(cache), "threads": args.threads, "rows": rows},
                                             indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
