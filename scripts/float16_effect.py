"""What rounding a trained encoder's weights to float16 (``keep-warmup --float16``, :mod:`toolkit.weights`) does to its
retrieval scores: the float32 model and its rounded copy score the same (query, tool) pairs -- each query of a
trace against its recorded top-``k`` tools -- and the script prints the score differences and how often the top-k
order changes. Both models must be on disk (the float32 one exists only on the machine that trained it).

    python scripts/float16_effect.py --float32 ~/.cache/toolret-repro/models/feedback/<id>/final \\
        --rounded ~/.cache/toolret-repro/models/feedback/<id>/kept-float32 \\
        --trace data/feedback_traces/standard-toolretriever-I2-<hash>.jsonl --group I2 [--queries 40 --k 10]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--float32", required=True, help="the trained model as saved (float32 weights)")
    p.add_argument("--rounded", required=True, help="its float16-rounded copy, restored to float32")
    p.add_argument("--trace", required=True, help="a trace whose round-0 queries and top-k tools are scored")
    p.add_argument("--group", required=True, help="the trace's test group (I1, I2, I3, UltraTool): its corpus")
    p.add_argument("--queries", type=int, default=40)
    p.add_argument("--k", type=int, default=10)
    args = p.parse_args()
    from toolkit.feedback import experiment as X
    from toolkit.feedback import stages
    from toolkit.feedback.config import config_for
    traces = list(X.load_traces(Path(args.trace)).values())[:args.queries]
    corpus = X.test_datasets(config_for("standard"))[args.group].corpus
    docs = {d: corpus[d] for t in traces for d in list(t.runs[0])[:args.k]}
    queries = {t.qid: t.instructions[0] for t in traces}
    scores = {}
    for name, path in (("float32", args.float32), ("rounded", args.rounded)):
        run = stages.dense_search(path, docs, depth=len(docs))(queries)    # a dense score ignores the rest of the corpus
        scores[name] = [{d: run[t.qid][d] for d in list(t.runs[0])[:args.k]} for t in traces]
    diffs = np.array([abs(a[d] - b[d]) for a, b in zip(scores["float32"], scores["rounded"]) for d in a])
    order = sum(sorted(a, key=a.get, reverse=True) == sorted(b, key=b.get, reverse=True)
                for a, b in zip(scores["float32"], scores["rounded"]))
    top1 = sum(max(a, key=a.get) == max(b, key=b.get) for a, b in zip(scores["float32"], scores["rounded"]))
    print(json.dumps({"queries": len(traces), "pairs": int(diffs.size), "max_abs_score_change": float(diffs.max()),
                      "median_abs_score_change": float(np.median(diffs)),
                      f"same_top{args.k}_order": f"{order} of {len(traces)}",
                      "same_top1": f"{top1} of {len(traces)}"}, indent=1))


if __name__ == "__main__":
    main()
