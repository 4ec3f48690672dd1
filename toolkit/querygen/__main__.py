"""Fill the query-generation caches (resumable; rerun to continue):

    python -m toolkit.querygen zeroshot [--model qwen-1.5b] [--dev 100] [--test 400] [--temperatures 0,0.3,0.6,0.9]

1. zero-shot answers for ``--dev`` dev requests at every temperature of the grid;
2. calibration: Recall@5 per temperature on those dev requests, the best one chosen (§4.3);
3. zero-shot answers for ``--test`` in-domain and ``--test`` out-of-domain test requests at it.
Answers go to ``data/llm_cache/querygen_zeroshot/<model>.jsonl`` (``querygen_intents`` with
``--kind intent``), which the notebook replays.
"""
from __future__ import annotations

import argparse
import sys
import time

from toolkit.llm.client import get_client
from toolkit.querygen import generation as gen
from toolkit.querygen.data import SplitConfig, make_split, nested_sample
from toolkit.querygen.retrieval import QueryIndex


def _floats(text: str) -> tuple[float, ...]:
    try:
        vals = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"--temperatures must be comma-separated numbers, got {text!r}") from None
    if not vals or any(v < 0 for v in vals):
        raise argparse.ArgumentTypeError(f"--temperatures needs at least one value >= 0, got {text!r}")
    return vals


def _positive(text: str) -> int:
    v = int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def cmd_zeroshot(args) -> int:
    split = make_split(SplitConfig(seed=args.split_seed))
    dev = nested_sample(split.dev, args.dev, seed=args.sample_seed)
    kw = {k: v for k, v in (("n_threads", args.threads), ("n_parallel", args.parallel)) if v is not None}
    llm = get_client(args.model, args.backend, namespace=gen.task_for(args.kind).namespace, **kw)
    t0 = time.time()
    with llm:
        for t in args.temperatures:
            gen.generate_queries(dev.query_texts(), llm, t, kind=args.kind, desc=f"dev T={t}")
            print(f"[querygen] dev T={t}: {len(dev.queries)} requests done ({time.time() - t0:.0f}s)", file=sys.stderr)
        index = QueryIndex(split.corpus)
        cal = gen.calibrate(index, dev, llm, args.temperatures, kind=args.kind)
        print(f"[querygen] calibration {gen.CALIBRATION_METRIC} on {len(dev.queries)} dev requests: "
              f"{ {t: round(v, 4) for t, v in cal['scores'].items()} } -> T={cal['best']}", file=sys.stderr)
        for ds in (split.test_in, split.test_out):
            sample = nested_sample(ds, args.test, seed=args.sample_seed)
            gen.generate_queries(sample.query_texts(), llm, cal["best"], kind=args.kind, desc=f"{ds.name} T={cal['best']}")
            print(f"[querygen] {sample.name}: done ({time.time() - t0:.0f}s)", file=sys.stderr)
    print(f"[querygen] {llm.stats['generated']} generated, {llm.stats['cached']} cached, {time.time() - t0:.0f}s",
          file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m toolkit.querygen", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    z = sub.add_parser("zeroshot", help="zero-shot answers: dev temperature grid, calibration, test sets")
    z.add_argument("--model", default=gen.DEFAULT_MODEL)
    z.add_argument("--backend", default=None)
    z.add_argument("--kind", default="description", choices=sorted(gen.TASKS))
    z.add_argument("--dev", type=_positive, default=100, help="dev requests for calibration (nested seeded sample)")
    z.add_argument("--test", type=_positive, default=400, help="requests per test set (nested seeded sample)")
    z.add_argument("--temperatures", type=_floats, default=gen.TEMPERATURES)
    z.add_argument("--split-seed", type=int, default=0)
    z.add_argument("--sample-seed", type=int, default=0)
    z.add_argument("--threads", type=_positive, default=2)
    z.add_argument("--parallel", type=_positive, default=None, help="slots (default: the backend's, 1 on 2 threads)")
    args = p.parse_args(argv)
    return {"zeroshot": cmd_zeroshot}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
