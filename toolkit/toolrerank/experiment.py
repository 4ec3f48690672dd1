"""Profiles and the end-to-end training of the three ToolRerank models (shared by notebook
``10_toolrerank`` and ``scripts/train_toolrerank.py``, which runs the same steps in the background).

Every stage is cached under ``cache_dir()/models/toolrerank/<profile>-<hash>/`` (hash over the
split and training parameters), and the reranker's scores are kept in ``reranker/scores.pkl``,
so a rerun of a finished profile only evaluates.
"""
from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from toolkit.data.contract import RetrievalDataset

from .classifier import QueryClassifier, classifier_examples, train_classifier
from .dual_encoder import positive_pairs, train_dual_encoder
from .reranker import Reranker, sample_reranker_pairs, train_cross_encoder
from .splits import SeenUnseenSplit
from .training import model_dir, set_threads


@dataclass(frozen=True)
class Setup:
    """Everything that decides the trained models and the evaluation sizes of a profile."""
    profile: str = "smoke"
    base: str = "minilm"
    seed: int = 0
    threads: int = 1                 # torch threads: 1 beats 2 on a shared 2-core machine (measured)
    # split
    dev_size: int = 600
    n_heldout_categories: int = 2
    heldout_tool_frac: float = 0.1
    # dual encoder (ToolBench recipe: lr 2e-5, warm-up, mean pooling, in-batch negatives)
    de_pairs: int = 0                # 0 = every positive pair; else a seeded sample of this many
    de_epochs: int = 1
    de_batch: int = 32
    de_max_len: int = 256
    de_warmup: int = 500
    # cross-encoder
    ce_queries: int = 0              # training queries whose pairs train the reranker (0 = all)
    ce_neg: int = 2                  # hard negatives per query, from the DPR top ce_depth
    ce_depth: int = 30
    ce_epochs: int = 1
    ce_batch: int = 32
    ce_max_len: int = 256
    # classifier
    cl_examples: int = 0             # 0 = all training queries
    cl_epochs: int = 1
    cl_batch: int = 32
    max_steps: int = 0               # cap on optimizer steps per model (smoke); 0 = none
    lr: float = 2e-5

    def training_params(self) -> dict:
        d = asdict(self)
        d.pop("profile"); d.pop("threads")
        return d


PROFILES = {
    # seconds: a few optimizer steps on tiny samples
    "smoke": Setup("smoke", de_pairs=48, de_batch=16, de_max_len=128, de_warmup=1, ce_queries=16, ce_neg=2,
                   ce_batch=16, ce_max_len=128, cl_examples=48, cl_batch=16, max_steps=3),
    # this machine (2 shared CPU cores): sized from measured throughput, see the notebook
    "standard": Setup("standard", de_pairs=3200, de_batch=32, de_max_len=128, de_warmup=10, ce_queries=800,
                      ce_neg=2, ce_batch=32, ce_max_len=128, cl_examples=3200, cl_batch=32),
    # the paper: bert-base-uncased, all pairs, ToolBench's recipe (needs a GPU)
    "paper": Setup("paper", base="bert-base-uncased", threads=0, de_epochs=5, de_max_len=256, de_warmup=500,
                   ce_neg=5, ce_max_len=256, cl_epochs=2),
}


@dataclass
class Models:
    dual_encoder: Path
    reranker: Path
    classifier: Path
    root: Path
    stats: dict


def _sample(items: list, n: int, seed: int) -> list:
    if not n or n >= len(items):
        return list(items)
    return random.Random(seed).sample(items, n)


def train_all(split: SeenUnseenSplit, setup: Setup, log=print) -> Models:
    """Train (or load from the cache) the dual encoder, the reranker and the classifier."""
    from toolkit.retrieval import build_retriever
    set_threads(setup.threads)
    params = {**setup.training_params(), "train_queries": len(split.train.queries),
              "heldout": [split.heldout_categories, split.heldout_tools]}
    root = model_dir(setup.profile, ".", params).resolve()
    steps = setup.max_steps or None
    stats: dict = {}
    train = split.train
    # 1. dual encoder
    t = time.perf_counter()
    pairs = _sample(positive_pairs(train), setup.de_pairs, setup.seed)
    de_path, stats["dual_encoder"] = train_dual_encoder(
        pairs, root / "dual_encoder", base=setup.base, epochs=setup.de_epochs, batch_size=setup.de_batch,
        lr=setup.lr, warmup_steps=setup.de_warmup, max_seq_length=setup.de_max_len, max_steps=steps,
        seed=setup.seed, threads=setup.threads, log=log)
    stats["dual_encoder"]["stage_wall_s"] = round(time.perf_counter() - t, 1)
    # 2. hard negatives from the trained retriever, then the cross-encoder
    t = time.perf_counter()
    ce_qids = _sample(sorted(train.queries), setup.ce_queries, setup.seed + 1)
    ce_ds = train.subset(ce_qids)
    retr = build_retriever(f"dense:{de_path}", batch_size=64)
    ids, texts = ce_ds.doc_texts()
    retr.index(ids, texts)
    run = retr.search(ce_ds.query_texts(), k=setup.ce_depth)
    ranked = {q: sorted(r, key=lambda d: -r[d]) for q, r in run.items()}
    mine_s = time.perf_counter() - t
    ce_pairs = sample_reranker_pairs(ce_ds, ranked, setup.ce_neg, setup.ce_depth, seed=setup.seed)
    ce_path, stats["reranker"] = train_cross_encoder(
        ce_pairs, root / "reranker", base=setup.base, epochs=setup.ce_epochs, batch_size=setup.ce_batch,
        lr=setup.lr, max_length=setup.ce_max_len, max_steps=steps, seed=setup.seed, threads=setup.threads, log=log)
    stats["reranker"]["hard_negative_mining_s"] = round(mine_s, 1)
    stats["reranker"]["stage_wall_s"] = round(time.perf_counter() - t, 1)
    # 3. classifier
    t = time.perf_counter()
    ex = _sample(classifier_examples(train), setup.cl_examples, setup.seed + 2)
    cl_path, stats["classifier"] = train_classifier(
        ex, root / "classifier", base=setup.base, epochs=setup.cl_epochs, batch_size=setup.cl_batch, lr=setup.lr,
        max_steps=steps, seed=setup.seed, threads=setup.threads, log=log)
    stats["classifier"]["stage_wall_s"] = round(time.perf_counter() - t, 1)
    return Models(de_path, ce_path, cl_path, root, stats)


def load_models(models: Models, corpus_texts: dict[str, str], setup: Setup):
    """(retriever factory, reranker with its persisted scores, classifier)."""
    from toolkit.retrieval import build_retriever
    reranker = Reranker(models.reranker, corpus_texts, max_length=setup.ce_max_len)
    reranker.load_memo(models.root / "reranker" / "scores.pkl")
    return (lambda: build_retriever(f"dense:{models.dual_encoder}", batch_size=64)), reranker, \
        QueryClassifier(models.classifier)


def eval_sets(split: SeenUnseenSplit, subset_queries: int, dev_queries: int, seed: int = 0
              ) -> dict[str, RetrievalDataset]:
    """dev + the six mirror subsets, each a seeded sample (0 = all)."""
    from .splits import SUBSETS
    out = {"dev": split.dev.sample(dev_queries or None, seed=seed)}
    for name in SUBSETS:
        out[name] = split.subset(name, subset_queries or None, seed=seed)
    return out


TRANSFER_GROUPS = ["g1-instruction", "g2-instruction", "g3-instruction", "g1-tool", "g1-category", "g2-category"]


def transfer_sets(n_per_group: int, corpus: str = "pool", seed: int = 0) -> dict[str, RetrievalDataset]:
    """The six StableToolBench groups (``toolbench-<group>``), each a seeded sample (0 = all)."""
    from toolkit.data import load_dataset
    return {f"toolbench-{g}": load_dataset(f"toolbench-{g}", corpus=corpus).sample(n_per_group or None, seed=seed)
            for g in TRANSFER_GROUPS}


def prescore(datasets: dict[str, RetrievalDataset], models: Models, setup: Setup, depth: int = 50, chunk: int = 20,
             log=print) -> dict[str, float]:
    """Retrieve top-``depth`` with the trained DPR and have the reranker score them, saving the scores
    every ``chunk`` queries (so the notebook's later run, or a killed one, scores nothing twice)."""
    texts = {}
    for ds in datasets.values():
        texts.update({d: doc.text for d, doc in ds.corpus.items()})
    make_retriever, reranker, _ = load_models(models, texts, setup)
    memo = models.root / "reranker" / "scores.pkl"
    seconds = {}
    for name, ds in datasets.items():
        t = time.perf_counter()
        retr = make_retriever()
        ids, dtexts = ds.doc_texts()
        retr.index(ids, dtexts)
        run = retr.search(ds.query_texts(), k=depth)
        items = [(ds.queries[q].text, sorted(run.get(q, {}), key=lambda d: -run[q][d])) for q in ds.queries]
        for s in range(0, len(items), chunk):
            reranker.score_many(items[s:s + chunk])
            reranker.save_memo(memo)
            if log:
                log(f"prescore {name}: {min(s + chunk, len(items))}/{len(items)} queries, "
                    f"{reranker.pairs_scored} pairs in {reranker.seconds:.0f}s")
        seconds[name] = round(time.perf_counter() - t, 1)
    return seconds
