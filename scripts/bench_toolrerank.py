"""Measure training throughput (pairs/s) of the three ToolRerank models on a few batches.

    PYTHONPATH=. python scripts/bench_toolrerank.py [--steps 6] [--batch-size 32] [--max-len 128] [--ce-bases minilm,mpnet]

Used to size the standard profile's epochs and hard-negative counts (notebook 10_toolrerank), and issue 50's
reranker variants: the cross-encoder's training and scoring throughput for each base encoder of ``--ce-bases``.
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
from toolkit.retrieval.dual_encoder import positive_pairs, train_dual_encoder
from toolkit.toolrerank.reranker import sample_reranker_pairs, train_cross_encoder


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=None, help="also write the figures, the command and the date to this JSON file")
    ap.add_argument("--ce-bases", default="minilm", help="comma list of the cross-encoder's base encoders")
    ap.add_argument("--score-pairs", type=int, default=256, help="pairs each trained cross-encoder scores (pairs/s)")
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
            *[(f"cross_encoder[{base}]", lambda base=base: train_cross_encoder(
                sample_reranker_pairs(ds, ranked, 3), Path(tmp) / f"ce-{base}", base=base, max_steps=args.steps,
                batch_size=args.batch_size, threads=args.threads, log=None, max_length=args.max_len))
              for base in args.ce_bases.split(",")],
            ("classifier", lambda: train_classifier(classifier_examples(ds), Path(tmp) / "cl", max_steps=args.steps,
                                                    batch_size=args.batch_size, threads=args.threads, log=None,
                                                    max_length=args.max_len)),
        ]:
            t = time.perf_counter()
            _, stats = fn()
            out[name] = {"pairs_per_second": stats["pairs_per_second"], "steps": stats["steps"],
                         "wall_s": round(time.perf_counter() - t, 1)}
            if name.startswith("cross_encoder["):      # scoring, as the reranker-alone table and pre-scoring do
                from sentence_transformers import CrossEncoder
                model = CrossEncoder(str(Path(tmp) / f"ce-{name[14:-1]}" / "final"), max_length=args.max_len)
                docs = [d.text for d in ds.corpus.values()]
                pairs = [(q.text, docs[i % len(docs)]) for i, q in zip(range(args.score_pairs), ds.queries.values())]
                t = time.perf_counter()
                model.predict(pairs, batch_size=64, show_progress_bar=False)
                out[name]["score_pairs_per_second"] = round(len(pairs) / (time.perf_counter() - t), 1)
            print(name, out[name], flush=True)
    print(json.dumps(out))
    if args.out:
        import sys
        Path(args.out).write_text(json.dumps({"measured": time.strftime("%Y-%m-%d"),
                                              "command": "python scripts/bench_toolrerank.py " + " ".join(sys.argv[1:]),
                                              "results": out}, indent=1) + "\n")


if __name__ == "__main__":
    main()
