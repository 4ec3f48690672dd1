"""Measure training throughput (pairs/s) of the three ToolRerank models on a few batches.

    PYTHONPATH=. python scripts/bench_toolrerank.py [--steps 6] [--batch-size 32] [--max-len 128]

Used to size the standard profile's epochs and hard-negative counts (notebook 10_toolrerank).
Trains into a temporary directory and throws the models away.
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from toolkit.data import load_dataset
from toolkit.toolrerank.classifier import classifier_examples, train_classifier
from toolkit.toolrerank.dual_encoder import positive_pairs, train_dual_encoder
from toolkit.toolrerank.reranker import sample_reranker_pairs, train_cross_encoder


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-len", type=int, default=128,
                    help="max tokens per input (the standard setup's de/ce_max_len; the trainers' defaults are 256)")
    args = ap.parse_args()
    ds = load_dataset("toollens-train")
    ranked = {q: list(ds.corpus)[:40] for q in ds.qrels}
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, fn in [
            ("dual_encoder", lambda: train_dual_encoder(positive_pairs(ds), Path(tmp) / "de", max_steps=args.steps,
                                                        batch_size=args.batch_size, threads=args.threads, log=None,
                                                        max_seq_length=args.max_len)),
            ("cross_encoder", lambda: train_cross_encoder(sample_reranker_pairs(ds, ranked, 3), Path(tmp) / "ce",
                                                          max_steps=args.steps, batch_size=args.batch_size,
                                                          threads=args.threads, log=None, max_length=args.max_len)),
            ("classifier", lambda: train_classifier(classifier_examples(ds), Path(tmp) / "cl", max_steps=args.steps,
                                                    batch_size=args.batch_size, threads=args.threads, log=None,
                                                    max_length=args.max_len)),
        ]:
            t = time.perf_counter()
            _, stats = fn()
            out[name] = {"pairs_per_second": stats["pairs_per_second"], "steps": stats["steps"],
                         "wall_s": round(time.perf_counter() - t, 1)}
            print(name, out[name], flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
