"""NDCG@5 of any dense encoders on notebook 30's test sets (I1-I3 over the ToolBench library, UltraTool), with the
notebook's own evaluation (``toolkit.feedback.tables.baseline_values``) -- to compare a trained model with the
ToolRetriever rows without running the feedback pipeline.

    python scripts/eval_dense_on_feedback_tests.py NAME=PATH [NAME=PATH ...] [--profile standard]

e.g. ``dpr=~/.cache/toolret-repro/models/toolrerank/<run>/dual_encoder/final`` or ``minilm=minilm``.
Prints one row per model; a script that prints figures, not a test.
"""
from __future__ import annotations

import argparse
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+", help="NAME=PATH (a saved SentenceTransformer or a registry name)")
    ap.add_argument("--profile", default="standard")
    args = ap.parse_args()
    bad = [m for m in args.models if "=" not in m]
    if bad:
        ap.error(f"each model must be NAME=PATH, got {bad}")
    from toolkit.feedback import experiment as X
    from toolkit.feedback import tables as T
    from toolkit.feedback.config import config_for
    from toolkit.retrieval import DenseRetriever
    cfg = config_for(args.profile)
    tests = {k: v for k, v in X.test_datasets(cfg).items() if k != "All"}
    t0 = time.perf_counter()
    retrievers = {name: DenseRetriever(path, show_progress=False) for name, path in (m.split("=", 1) for m in args.models)}
    v = T.baseline_values(tests, retrievers, cfg, k=30)
    print(v[(v.metric == "ndcg@5") & ~v.ours_only].pivot(index="method", columns="set", values="value").round(3))
    print(f"{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
