"""Train ToolRerank's three models for a profile and pre-score the evaluation sets, in the background.

    nohup nice -n 5 env PYTHONPATH=. python scripts/train_toolrerank.py --profile standard \
        > /tmp/toolrerank_standard.log 2>&1 &

Runs exactly what notebook 10_toolrerank runs before its tables (same split, same Setup, same
cache directories), so the notebook afterwards only loads the models and the reranker's scores.
Resumable: rerun the same command after a kill. Writes ``<model root>/timings.json``.
"""
from __future__ import annotations

import argparse
import json
import time

from toolkit.data import load_dataset
from toolkit.toolrerank.experiment import PROFILES, eval_sets, prescore, train_all, transfer_sets
from toolkit.toolrerank.splits import make_split

# the notebook's defaults for the evaluation sizes, per profile
EVAL_SIZES = {"smoke": (3, 12, 2), "standard": (60, 100, 15), "paper": (0, 600, 0)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="standard", choices=sorted(PROFILES))
    ap.add_argument("--no-prescore", action="store_true")
    args = ap.parse_args()
    setup = PROFILES[args.profile]
    t0 = time.time()
    split = make_split(load_dataset("toollens-train"), load_dataset("toollens-test"), dev_size=setup.dev_size,
                       n_heldout_categories=setup.n_heldout_categories, heldout_tool_frac=setup.heldout_tool_frac,
                       seed=setup.seed)
    print(json.dumps(split.summary()), flush=True)
    models = train_all(split, setup, log=lambda m: print(m, flush=True))
    print(json.dumps(models.stats, indent=1), flush=True)
    timings = {"train_wall_s": round(time.time() - t0, 1), "stats": models.stats}
    if not args.no_prescore:
        sub_n, dev_n, tr_n = EVAL_SIZES[args.profile]
        sets = eval_sets(split, sub_n, dev_n, seed=setup.seed)
        sets.update(transfer_sets(tr_n, seed=setup.seed))
        timings["prescore_s"] = prescore(sets, models, setup, log=lambda m: print(m, flush=True))
    timings["total_wall_s"] = round(time.time() - t0, 1)
    (models.root / "timings.json").write_text(json.dumps(timings, indent=1) + "\n")
    print("done", json.dumps(timings), flush=True)


if __name__ == "__main__":
    main()
