"""The feedback experiment's long stages, each resumable (rerun to continue) and cached:

    python -m toolkit.feedback warmup          [--profile standard]   # ToolRetriever: original instructions
    python -m toolkit.feedback train-feedback  [--profile standard]   # offline feedback on training instructions
    python -m toolkit.feedback train           [--profile standard]   # iteration-aware training (§4.3)
    python -m toolkit.feedback test-feedback   [--profile standard] --group I2

Trained models live in ``cache_dir()/models/feedback/`` (not committed). What the notebook needs from
them is committed: the LLM answers (``data/llm_cache/feedback/``) and every loop's *trace* — the
instruction of each round and its top-100 documents with scores — in ``data/feedback_traces/``, so the
standard profile evaluates without a model and a retrained retriever cannot silently change the
prompts the cached answers belong to.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from toolkit.feedback.config import config_for
from toolkit.feedback.loop import Trace

TRACE_DIR = Path(__file__).resolve().parents[2] / "data" / "feedback_traces"
DEPTH = 100


def _log(msg: str) -> None:
    print(f"[feedback] {msg}", file=sys.stderr, flush=True)


def model_root(cfg) -> Path:
    from toolkit.paths import cache_dir
    from toolkit.training import params_hash
    return cache_dir() / "models" / "feedback" / f"{cfg.profile}-{cfg.base}-{params_hash(asdict(cfg.training))}"


def save_traces(traces: dict[str, Trace], path: Path) -> None:
    rows = [{"qid": t.qid, "instructions": t.instructions, "runs": [list(r.items()) for r in t.runs],
             "seconds": t.seconds, "stopped": t.stopped} for t in traces.values()]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n")
    tmp.replace(path)


def load_traces(path: Path) -> dict[str, Trace]:
    out = {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            try:
                r = json.loads(line)
                out[r["qid"]] = Trace(r["qid"], r["instructions"], [dict(x) for x in r["runs"]], [], r["seconds"])
            except (json.JSONDecodeError, KeyError) as e:
                raise ValueError(f"{path}:{lineno}: not a feedback trace ({e})") from e
    return out


def dense_search(model_path: Path, corpus) -> "callable":
    from toolkit.retrieval import DenseRetriever
    r = DenseRetriever(f"{model_path}", show_progress=True)
    ids = list(corpus)
    r.index(ids, [corpus[d].text for d in ids])
    return lambda queries: r.search(dict(queries), k=DEPTH)


def cmd_warmup(cfg) -> Path:
    from toolkit.feedback.data import training_set
    from toolkit.toolrerank.dual_encoder import positive_pairs, train_dual_encoder
    train = training_set("train")
    t = cfg.training
    path, stats = train_dual_encoder(positive_pairs(train), model_root(cfg) / "warmup", base=cfg.base,
                                     epochs=t.epochs, batch_size=t.batch_size, lr=t.lr, warmup_steps=t.warmup_steps,
                                     max_seq_length=t.max_seq_length, max_steps=cfg.warmup_max_steps, seed=t.seed)
    _log(f"warm-up (ToolRetriever) at {path}: {stats.get('steps')} steps, {stats.get('pairs_per_second')} pairs/s")
    return path


def cmd_train_feedback(cfg) -> Path:
    from toolkit.feedback.data import training_set
    from toolkit.feedback.loop import iterate
    from toolkit.llm.client import get_client
    train = training_set("train").nested_sample(cfg.train_feedback_requests, cfg.sample_seed)
    start = cmd_warmup(cfg) if cfg.training.warmup else cfg.base
    search = dense_search(start, train.corpus)
    with get_client(cfg.llm, namespace="feedback") as llm:
        traces = iterate(train.query_texts(), search, train.corpus, llm, rounds=cfg.training.rounds,
                         cfg=cfg.feedback, prefix=False)
    out = TRACE_DIR / f"train-{model_root(cfg).name}.jsonl"
    save_traces(traces, out)
    _log(f"{len(traces)} training traces -> {out}")
    return out


def cmd_train(cfg) -> Path:
    from toolkit.feedback.data import training_set
    from toolkit.feedback.training import feedback_examples, train_iteration_aware
    train = training_set("train")
    traces = load_traces(TRACE_DIR / f"train-{model_root(cfg).name}.jsonl")
    examples = feedback_examples(traces, train.qrels, train.corpus, cfg.training)
    start = cmd_warmup(cfg) if cfg.training.warmup else cfg.base
    path, stats = train_iteration_aware(examples, model_root(cfg) / "iteration-aware", str(start), cfg.training)
    _log(f"iteration-aware model at {path}: {stats.get('steps')} steps on {len(examples)} examples")
    return path


def cmd_test_feedback(cfg, group: str) -> Path:
    from toolkit.feedback.data import test_sets
    from toolkit.feedback.loop import iterate
    from toolkit.llm.client import get_client
    ds = test_sets()[group].nested_sample(cfg.sample_size(group), cfg.sample_seed)
    model = model_root(cfg) / "iteration-aware" / "final"
    if not model.is_dir():
        raise FileNotFoundError(f"no trained model at {model}; run `python -m toolkit.feedback train` first")
    with get_client(cfg.llm, namespace="feedback") as llm:
        traces = iterate(ds.query_texts(), dense_search(model, ds.corpus), ds.corpus, llm,
                         rounds=cfg.training.rounds, cfg=cfg.feedback, prefix=cfg.training.prefix)
    out = TRACE_DIR / f"test-{group}-{model_root(cfg).name}.jsonl"
    save_traces(traces, out)
    _log(f"{len(traces)} {group} traces -> {out}")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m toolkit.feedback", description=__doc__.split("\n\n")[0])
    p.add_argument("stage", choices=("warmup", "train-feedback", "train", "test-feedback"))
    p.add_argument("--profile", default="standard", choices=("smoke", "standard", "paper"))
    p.add_argument("--group", default="I2", help="test-feedback: I1 | I2 | I3 | UltraTool")
    args = p.parse_args(argv)
    cfg = config_for(args.profile)
    if args.stage == "test-feedback":
        cmd_test_feedback(cfg, args.group)
    else:
        {"warmup": cmd_warmup, "train-feedback": cmd_train_feedback, "train": cmd_train}[args.stage](cfg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
