"""Train ToolRerank's three models for a profile and pre-score the evaluation sets, in the background.

    nohup nice -n 5 env PYTHONPATH=. python scripts/train_toolrerank.py --profile standard \
        > /tmp/toolrerank_standard.log 2>&1 &

Runs exactly what notebook 10_toolrerank runs before its tables (same split, same Setup, same
cache directories), so the notebook afterwards only loads the models and the reranker's scores.
Resumable: rerun the same command after a kill. Stages can run in parallel processes:
``--stages dual_encoder`` and ``--stages classifier`` together, then ``--stages reranker``, then
``--prescore toollens --tag a`` and ``--prescore transfer --tag b`` together.
"""
from __future__ import annotations

import argparse
import json
import time

from toolkit.data import load_dataset
from toolkit.toolrerank.experiment import EVAL_SIZES, PROFILES, eval_sets, prescore, train_all, transfer_sets
from toolkit.toolrerank.splits import make_split


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="standard", choices=sorted(PROFILES))
    ap.add_argument("--stages", default="dual_encoder,reranker,classifier")
    ap.add_argument("--prescore", default="toollens,transfer", help="toollens, transfer, both or none")
    ap.add_argument("--only", default="", help="comma list of set names to pre-score (dev, I1-Inst, ..., toolbench-g1-tool)")
    ap.add_argument("--sizes", default="", help="override EVAL_SIZES: subset,dev,transfer (must match the notebook's)")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="override a Setup field of the profile, e.g. --set ce_rounds=2")
    ap.add_argument("--tag", default="", help="suffix of this process's score file (parallel runs)")
    args = ap.parse_args()
    setup = PROFILES[args.profile]
    if args.set:
        import ast
        from dataclasses import replace
        over = {k: ast.literal_eval(v) for k, v in (x.split("=", 1) for x in args.set)}
        setup = replace(setup, **over)
    t0 = time.time()
    split = make_split(load_dataset("toollens-train"), load_dataset("toollens-test"), dev_size=setup.dev_size,
                       n_heldout_categories=setup.n_heldout_categories, heldout_tool_frac=setup.heldout_tool_frac,
                       seed=setup.seed)
    print(json.dumps(split.summary()), flush=True)
    stages = [s for s in args.stages.split(",") if s]
    models = train_all(split, setup, log=lambda m: print(m, flush=True), stages=stages)
    print(json.dumps(models.stats, indent=1), flush=True)
    timings = {"train_wall_s": round(time.time() - t0, 1), "stats": models.stats}
    which = [s for s in args.prescore.split(",") if s and s != "none"]
    if which:
        sub_n, dev_n, tr_n = (map(int, args.sizes.split(",")) if args.sizes else EVAL_SIZES[args.profile])
        sets = {}
        if "toollens" in which:
            sets.update(eval_sets(split, sub_n, dev_n, seed=setup.seed))
        if "transfer" in which:
            sets.update(transfer_sets(tr_n, seed=setup.seed, sample_pools_only=args.profile == "smoke"))
        if args.only:
            sets = {k: v for k, v in sets.items() if k in args.only.split(",")}
        timings["prescore_s"] = prescore(sets, models, setup, log=lambda m: print(m, flush=True), tag=args.tag)
    timings["total_wall_s"] = round(time.time() - t0, 1)
    name = f"timings-{'-'.join(stages) or 'none'}-{'-'.join(which) or 'none'}.json"
    (models.root / name).write_text(json.dumps(timings, indent=1) + "\n")
    print("done", json.dumps(timings), flush=True)


if __name__ == "__main__":
    main()
