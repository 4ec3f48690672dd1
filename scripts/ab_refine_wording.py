"""A/B of feedback step 4's wording (``FeedbackConfig.refine_wording``) on the same recorded rounds.

    python scripts/ab_refine_wording.py [--n 24] [--threads 2] [--out results/bench/refine_wording.json]

Takes the first ``--n`` step-4 calls (refinement requests) of the standard profile's feedback cache
(``data/llm_cache/feedback/``, written by ``python -m toolkit.feedback``): each is a round's chat up to
step 4 -- instruction, the retriever's top 10, the model's comprehension, assessment and yes/no
answers. For each wording, the chat with that step-4 request is answered through the same cache (a
missing answer is generated with the local model and appended, so the loop later reuses it), and the
refinement is parsed as the loop parses it. Prints, per wording, how many refinements change the
instruction (a refinement equal to the instruction retrieves the same list) and how many extend it
(start with it), and the median refinement length in words. Not a timing: the recorded rounds were
generated with several llama.cpp slots, the other wording's with one.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path


def instruction_of(messages: list[dict]) -> str:
    return messages[0]["content"].split("Instruction: ", 1)[1].split("\n\nRetrieved tools", 1)[0].strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=24)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=None, help="also record the figures in this JSON file (notebook 30 prints it)")
    args = ap.parse_args()
    if args.n < 1:
        ap.error("--n must be >= 1")
    import os
    os.environ.setdefault("TOOLKIT_LLM_THREADS", str(args.threads))
    from dataclasses import replace

    from toolkit.feedback.config import config_for
    from toolkit.llm import prompts
    from toolkit.llm.cache import ResponseCache
    from toolkit.llm.client import get_client
    from toolkit.llm.parsers import parse_refinement
    from toolkit.paths import PROJECT_DATA

    cfg = config_for("standard")
    llm = get_client(cfg.llm, "local", namespace="feedback", n_parallel=1)
    cache = ResponseCache(PROJECT_DATA / "llm_cache", "feedback", llm.model_id, readonly=True)
    wordings = prompts.FEEDBACK_REFINE_WORDINGS
    texts = set(wordings.values())
    rounds = [a["prompt"][:-1] for a in cache.answers() if a["kind"] == "chat" and a["prompt"][-1]["content"] in texts]
    rounds = list({json.dumps(r): r for r in rounds}.values())[:args.n]       # each round once, in cache order
    if not rounds:
        print(f"no step-4 call in {cache.path}: run python -m toolkit.feedback all --profile standard first",
              file=sys.stderr)
        return 1
    record = {"measured": time.strftime("%Y-%m-%d"), "model": cfg.llm, "threads": args.threads, "rounds": len(rounds),
              "source": "first step-4 calls of the standard training feedback", "wordings": {}}
    for name, text in wordings.items():
        fb = replace(cfg.feedback, refine_wording=name)
        changed = extended = 0
        words = []
        for chat in rounds:
            msgs = chat + [{"role": "user", "content": text}]
            answer = llm.generate([msgs], n=1, sampling=fb.sampling("refinement"), progress=False)[0][0]
            refined, original = parse_refinement(answer), instruction_of(chat)
            if refined is not None and refined.strip() != original:
                changed += 1
                extended += refined.startswith(original.rstrip(".?! "))
            words.append(len((refined or "").split()))
        record["wordings"][name] = {"changed": changed, "extended": extended, "median words": statistics.median(words)}
        print(f"{name:>11}: changed {changed}/{len(rounds)} instructions ({extended} by extending them), median "
              f"{statistics.median(words)} words")
    if args.out:
        path = Path(args.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=1) + "\n")
        print(f"recorded in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
