"""Benchmark: one feedback round as a multi-turn chat vs independent calls, one per step (same inputs).

    python scripts/bench_feedback.py [--n 8] [--model qwen-1.5b] [--threads 2] [--fair] [--tool-chars 600]
                                     [--caps 256,256,128] [--only chat] [--speculative ngram-simple,draft:qwen-0.5b]
                                     [--brevity one-line]
                                     [--decision answers|model|both] [--parallel 4] [--out FILE]

For ``--n`` seeded I2 queries, the top-10 APIs of the off-the-shelf MiniLM over the I2 candidate pool
are given to the LLM; each variant runs with a fresh temporary response cache (every answer really
generated), one llama.cpp slot, prompt-prefix reuse on, model load excluded. Prints wall seconds per
round (median and total), tokens generated, and whether the two variants agree on N/A. A benchmark prints figures; it is not a timed test.
Sizing the caps: ``--caps 1024,1024,512 --only chat`` records each turn's median / 95th-percentile / maximum tokens
(``turns`` in the record), so a cap can be set to hold 95 % of the answers.
``--out results/bench/feedback_round.json`` also records them there (notebook 30's budget section reads that file).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path



def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--model", default="qwen-1.5b")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tool-chars", type=int, default=None, help="FeedbackConfig.tool_chars (default: its default)")
    ap.add_argument("--caps", default=None,
                    help="comprehension,assessment,refinement max tokens (default: FeedbackConfig's)")
    ap.add_argument("--fair", action="store_true",
                    help="start from issue 48's fair LLM step (toolkit.feedback.config.FAIR_FEEDBACK) instead of "
                         "FeedbackConfig's defaults; --caps, --tool-chars, --brevity, --decision override it")
    ap.add_argument("--only", choices=["chat", "independent"], default=None, help="run one variant only")
    ap.add_argument("--brevity", default=None, help="FeedbackConfig.brevity (none | one-line; default: its default)")
    ap.add_argument("--speculative", default="",
                    help="comma list of speculative-decoding settings to add as chat variants "
                         "(ngram-simple, ngram-mod, draft:qwen-0.5b); their answers are compared with the plain chat's")
    ap.add_argument("--parallel", type=int, default=1,
                    help="llama.cpp slots; with more than 1, that many queries' rounds run at once (their decoding "
                         "batched): compare 'total s' with a --parallel 1 run for the throughput")
    ap.add_argument("--out", default=None,
                    help="also record the figures in this JSON file (the notebook reads results/bench/feedback_round.json)")
    ap.add_argument("--draft-max", type=int, default=16, help="tokens drafted per step (speculative variants)")
    ap.add_argument("--decision", choices=["answers", "model", "both"], default=None,
                    help="FeedbackConfig.decision (default: its default); both: instead of the timing, the chat with "
                         "each decision rule on the same queries, sharing steps 1-2 through one cache, and how often "
                         "each stops (N/A) beside how often the top 10 holds every gold API")
    args = ap.parse_args()
    if args.n < 1:
        ap.error("--n must be >= 1")
    if args.parallel < 1:
        ap.error("--parallel must be >= 1")
    overrides = {} if args.tool_chars is None else {"tool_chars": args.tool_chars}
    if args.caps:
        try:
            c, a, r = (int(x) for x in args.caps.split(","))
        except ValueError:
            ap.error(f"--caps must be three integers like 256,256,128, got {args.caps!r}")
        overrides.update(comprehension_tokens=c, assessment_tokens=a, refinement_tokens=r)

    from toolkit.data import load_dataset
    from toolkit.feedback.round import NAMESPACE, FeedbackConfig, feedback_round, feedback_round_independent
    from toolkit.llm.client import get_client
    from toolkit.retrieval import build_retriever, retrieve

    ds = load_dataset("toolbench-i2", corpus="pool").nested_sample(args.n, args.seed)
    run = retrieve(ds, build_retriever("minilm"), k=10)
    if args.brevity is not None:
        overrides["brevity"] = args.brevity
    if args.decision in ("answers", "model"):
        overrides["decision"] = args.decision
    try:
        if args.fair:
            from dataclasses import replace

            from toolkit.feedback.config import FAIR_FEEDBACK
            cfg = replace(FAIR_FEEDBACK, **overrides)
        else:
            cfg = FeedbackConfig(**overrides)
    except ValueError as e:
        ap.error(str(e))
    if args.decision == "both":
        return decision_probe(ds, run, cfg, args)
    from toolkit.llm.backends import parse_speculative
    specs = [x for x in args.speculative.split(",") if x]
    try:
        [parse_speculative(x) for x in specs]
    except ValueError as e:
        ap.error(str(e))
    variants = {"chat": ("multi-turn chat", feedback_round, None),
                "independent": ("independent calls (one per step)", feedback_round_independent, None)}
    todo = [(k, *v) for k, v in variants.items() if args.only in (None, k)]
    todo += [(f"chat, speculative {x}", f"chat, speculative {x}", feedback_round, x) for x in specs]
    rows, texts, keys = {}, {}, {}
    for key, name, fn, spec in todo:
        keys[name] = key
        kw = {"speculative": spec, "draft_max": args.draft_max} if spec else {}
        with tempfile.TemporaryDirectory() as tmp, get_client(args.model, "local", cache_root=tmp, namespace="bench",
                                                               n_threads=args.threads, n_parallel=args.parallel,
                                                               **kw) as llm:
            llm.chat("warm-up", max_tokens=1)           # model load outside the timing

            def one(qid):
                t0 = time.perf_counter()
                fb = fn(llm, ds.queries[qid].text, [ds.corpus[d] for d in run[qid]], cfg)
                return fb, time.perf_counter() - t0
            t_all = time.perf_counter()
            with ThreadPoolExecutor(max_workers=args.parallel) as ex:
                done = list(ex.map(one, ds.queries))
            wall = time.perf_counter() - t_all
            out, secs = [d[0] for d in done], [d[1] for d in done]
            ans = list(llm.cache(NAMESPACE).answers())          # the rounds' answers (not the warm-up's)
            texts[name] = [(x.comprehension, x.assessment, x.refinement) for x in out]
            rows[name] = {"median s/round": statistics.median(secs), "total s": wall,
                          "tokens out": sum(a.get("ntok") or 0 for a in ans), "refined": out,
                          "steps": step_tokens(ans) if fn is feedback_round else None}
            # each variant's figures as soon as it ends: a bench stopped before the last variant still says these
            print(f"{name}: {wall / args.n:.1f} s per round ({wall:.1f} s for {args.n} rounds, {args.parallel} "
                  f"slot(s)), {rows[name]['tokens out']} tokens out", flush=True)
    print(f"{args.n} I2 queries, top-10 MiniLM APIs, {args.model}, {args.parallel} slot(s), {args.threads} threads, {cfg}")
    if args.out:
        from dataclasses import asdict

        from toolkit.feedback.budget import add_bench
        record = {"measured": time.strftime("%Y-%m-%d"), "model": args.model, "threads": args.threads,
                  "slots": args.parallel, "n": args.n, "feedback": asdict(cfg), "variants": {
                      keys[name]: {"seconds per round": round(r["total s"] / args.n, 1),
                                   "median latency s": round(r["median s/round"], 1), "total s": round(r["total s"], 1),
                                   "tokens out": r["tokens out"], "N/A": sum(x.refined is None for x in r["refined"]),
                                   # per chat turn: what a cap must hold (sizing the caps at the 95th percentile)
                                   **({"turns": {str(t): turn_summary(*v) for t, v in r["steps"].items()}}
                                      if r["steps"] else {})}
                      for name, r in rows.items()}}
        print(f"recorded in {add_bench(record, Path(args.out))}")
    print(f"{'variant':<40}{'median s/round':>16}{'total s':>10}{'tokens out':>12}{'N/A':>6}")
    for name, r in rows.items():
        print(f"{name:<40}{r['median s/round']:>16.1f}{r['total s']:>10.1f}{r['tokens out']:>12}"
              f"{sum(x.refined is None for x in r['refined']):>6}")
    for name, r in rows.items():
        for step, (ntoks, capped, cap) in (r["steps"] or {}).items():
            t = turn_summary(ntoks, capped, cap)
            print(f"  {name}, turn {step}: {t['answers']} answers, median {t['median tokens']:.0f} tokens "
                  f"(95th percentile {t['p95 tokens']:.0f}, max {t['max tokens']}), {capped}/{len(ntoks)} stopped "
                  f"by the cap of {cap}")
    plain = rows.get("multi-turn chat")
    for name in [n for n in rows if n.startswith("chat, speculative")]:
        if plain is None:
            break
        same = sum(a == b for x, y in zip(texts["multi-turn chat"], texts[name]) for a, b in zip(x, y))
        print(f"{name}: {plain['total s'] / rows[name]['total s']:.2f}x the plain chat's speed; "
              f"{same}/{3 * args.n} answers identical to the plain chat's")
    if {"multi-turn chat", "independent calls (one per step)"} <= set(rows):     # not with --only
        a, b = rows["multi-turn chat"], rows["independent calls (one per step)"]
        print(f"speed-up of the chat: {b['total s'] / a['total s']:.2f}x; same N/A decision on "
              f"{sum((x.refined is None) == (y.refined is None) for x, y in zip(a['refined'], b['refined']))}/{args.n}")
    return 0


def turn_summary(ntoks: list[int], capped: int, cap: int | None) -> dict:
    """One chat turn's answers: count, median / 95th-percentile (nearest rank) / maximum tokens, cap hits and cap."""
    import math
    ranked = sorted(ntoks)
    p95 = ranked[min(len(ranked) - 1, math.ceil(0.95 * len(ranked)) - 1)] if ranked else 0
    return {"answers": len(ntoks), "median tokens": statistics.median(ntoks) if ntoks else 0, "p95 tokens": p95,
            "max tokens": max(ntoks, default=0), "at the cap": capped, "cap": cap}


def step_tokens(answers) -> dict:
    """Chat answers by turn (the number of user messages in the prompt): tokens generated, how many stopped
    at the turn's cap, and the cap -- which step's cap is worth cutting."""
    out: dict = {}
    for a in answers:
        if not isinstance(a["prompt"], list):
            continue
        turn = sum(m.get("role") == "user" for m in a["prompt"])
        ntoks, capped, _ = out.setdefault(turn, ([], 0, (a.get("sampling") or {}).get("max_tokens")))
        ntoks.append(a.get("ntok") or 0)
        out[turn] = (ntoks, capped + (a.get("fin") == "length"), out[turn][2])
    return dict(sorted(out.items()))


def decision_probe(ds, run, cfg, args) -> int:
    """The chat with decision="answers" then "model" on the same queries, in one cache (their steps 1-2 are
    the same requests): per query, the two answers, each rule's N/A, and whether the top 10 holds every gold API."""
    from dataclasses import replace

    from toolkit.feedback.round import feedback_round
    from toolkit.llm.client import get_client
    rules = ("answers", "model")
    out = {r: [] for r in rules}
    with tempfile.TemporaryDirectory() as tmp, get_client(args.model, "local", cache_root=tmp, namespace="bench",
                                                           n_threads=args.threads, n_parallel=1) as llm:
        for qid, q in ds.queries.items():
            docs = [ds.corpus[d] for d in run[qid]]
            for r in rules:
                out[r].append(feedback_round(llm, q.text, docs, replace(cfg, decision=r)))
    from toolkit.feedback.experiment import all_gold_in
    covered = [all_gold_in(ds.qrels[q], run[q]) for q in ds.queries]
    print(f"{args.n} I2 queries, top-10 MiniLM APIs, {args.model}, {args.threads} threads, {cfg}")
    print(f"{'qid':<10}{'all gold in top 10':>20}{'answers':>14}{'N/A (answers)':>15}{'N/A (model)':>13}")
    for i, qid in enumerate(ds.queries):
        a = out["answers"][i]
        print(f"{qid:<10}{str(covered[i]):>20}{'/'.join(a.answers):>14}{str(a.refined is None):>15}"
              f"{str(out['model'][i].refined is None):>13}")
    for r in rules:
        na = [x.refined is None for x in out[r]]
        print(f"decision={r}: N/A {sum(na)}/{len(na)}; N/A with a gold API missing "
              f"{sum(n and not c for n, c in zip(na, covered))}; refined with every gold API in the top 10 "
              f"{sum(not n and c for n, c in zip(na, covered))}")
    print(f"top 10 holds every gold API: {sum(covered)}/{len(covered)}")
    first = out["answers"][0]
    print("\nfirst query, decision='answers' -- step 3:", repr(first.decision), "\nstep 4:", repr(first.refinement))
    print("decision='model' -- step 3:", repr(out["model"][0].refinement))
    return 0


if __name__ == "__main__":
    sys.exit(main())
