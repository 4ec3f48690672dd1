"""Profiles and the end-to-end training of the three ToolRerank models (shared by notebook
``10_toolrerank`` and ``scripts/train_toolrerank.py``, which runs the same steps in the background).

Every stage is cached under ``cache_dir()/models/toolrerank/<profile>-<hash>/`` (hash over the
split and training parameters), and the reranker's scores are kept in ``reranker/scores.pkl``,
so a rerun of a finished profile only evaluates.
"""
from __future__ import annotations

import functools

import json
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from toolkit.data.contract import RetrievalDataset

from . import dpr_vectors
from .classifier import QueryClassifier, classifier_examples, train_classifier
from toolkit.retrieval.dual_encoder import positive_pairs, train_dual_encoder
from .reranker import Reranker, add_random_negatives, sample_reranker_pairs, train_cross_encoder
from .splits import SeenUnseenSplit, seen_tools, tool_id
from toolkit.data import STABLE_GROUPS
from toolkit.training import model_dir, set_threads, trained, write_stats


SPLIT_FIELDS = ("base", "seed", "max_steps", "dev_size", "n_heldout_categories", "heldout_tool_frac", "dev_pool",
                "category_draw", "category_shuffle_seed")
# fields added after models were cached: left out of a stage's cache key while they hold these defaults, so
# the models trained before them keep their keys
LATER_DEFAULTS = {"ce_rounds": 1, "ce_neg_pool": "all", "de_select_on_dev": False, "ce_select_on_dev": False,
                  "cl_select_on_dev": False, "ce_neg_per": "query", "dev_pool": "all", "ce_init": "base",
                  "ce_base": "", "ce_random_neg": 0, "category_draw": "sample", "category_shuffle_seed": 0}
NEG_PER = ("query", "positive")
NEG_POOLS = ("all", "seen")
CE_INITS = ("base", "dpr")


@dataclass(frozen=True)
class Setup:
    """Everything that decides the trained models and the evaluation sizes of a profile."""
    profile: str = "smoke"
    base: str = "minilm"
    seed: int = 0
    threads: int = 1                 # torch threads: 1 beats 2 on a shared 2-core machine (measured)
    max_steps: int = 0               # cap on optimizer steps per model (smoke); 0 = none
    # split
    dev_pool: str = "all"            # dev sampled from: all = every training query (our first runs; ~40 % touched
                                     # held-out tools); seen = queries of seen tools only (the paper)
    dev_size: int = 600
    n_heldout_categories: int = 2    # whole categories held out of training (I1-Cat, I2-Cat)
    category_draw: str = "sample"    # how the seed picks them (toolkit.toolrerank.splits): sample = at random (our first
                                     # runs; two seeds' draws may share categories); block = block number `seed` of one
                                     # fixed shuffle of the eligible categories, so seeds 0, 1, ... hold out disjoint sets
    category_shuffle_seed: int = 0   # the seed of that one shuffle (category_draw="block")
    heldout_tool_frac: float = 0.1
    # dual encoder (ToolBench recipe: lr 2e-5, warm-up, mean pooling, in-batch negatives)
    de_pairs: int = 0                # 0 = every positive pair; else a seeded sample of this many
    de_pos: int = 0                  # gold APIs per training query (0 = all; 1 = one sampled, every query once)
    de_epochs: int = 1
    de_batch: int = 32
    de_max_len: int = 256
    de_warmup: int = 500
    de_lr: float = 2e-5
    de_select_on_dev: bool = False   # evaluate dev Recall@5 after every epoch, keep the best epoch
    # cross-encoder
    ce_queries: int = 0              # training queries whose pairs train the reranker (0 = all)
    ce_pos: int = 0                  # gold APIs per query (0 = all; 1 = one sampled)
    ce_neg: int = 2                  # hard negatives per query (or per gold API: ce_neg_per), from the top ce_depth of ...
    ce_neg_per: str = "query"        # ce_neg counts per "query" or per "positive" (gold API; the issue's "several per
                                     # positive"; a query with 3 gold APIs and ce_neg=2 gets 6 negatives)
    ce_depth: int = 30
    ce_neg_source: str = "dpr"       # ... dpr: the trained DPR (the paper); base: the untrained base encoder
    ce_neg_pool: str = "all"         # negatives from: all = the whole library; seen = APIs of training (seen)
                                     # tools only, so held-out tools never appear in training, not even as negatives
    ce_epochs: int = 1
    ce_batch: int = 32
    ce_max_len: int = 256
    ce_lr: float = 2e-5
    ce_rounds: int = 1               # >1: continue training the previous round's reranker on a fresh query sample
    ce_init: str = "base"            # the reranker's encoder starts from: base = the pretrained encoder (ce_base, else
                                     # base); dpr = the fine-tuned DPR checkpoint. A fresh one-logit head either way
    ce_base: str = ""                # the reranker's pretrained encoder when it is not ``base`` (e.g. mpnet)
    ce_random_neg: int = 0           # random negatives per positive from the whole 16,427-API ToolBench library,
                                     # beside the hard negatives (against memorising a small training library)
    ce_select_on_dev: bool = False   # evaluate dev Rerank-10 Recall@5 after every epoch, keep the best epoch
                                     # with negatives from the trained DPR
    # classifier
    cl_examples: int = 0             # 0 = all training queries
    cl_balance: bool = False         # equal numbers of single- and multi-tool training queries
    cl_epochs: int = 1
    cl_batch: int = 32
    cl_lr: float = 2e-5
    cl_select_on_dev: bool = False   # evaluate dev accuracy after every epoch, keep the best epoch
    dev_eval_queries: int = 300      # dev queries the per-epoch evaluations use (a seeded sample)

    def __post_init__(self):
        if self.ce_neg_pool not in NEG_POOLS:
            raise ValueError(f"Setup.ce_neg_pool must be one of {NEG_POOLS}, got {self.ce_neg_pool!r}")
        if self.ce_neg_per not in NEG_PER:
            raise ValueError(f"Setup.ce_neg_per must be one of {NEG_PER}, got {self.ce_neg_per!r}")
        if self.ce_neg_source not in ("dpr", "base"):
            raise ValueError(f"Setup.ce_neg_source must be 'dpr' or 'base', got {self.ce_neg_source!r}")
        if self.ce_init not in CE_INITS:
            raise ValueError(f"Setup.ce_init must be one of {CE_INITS}, got {self.ce_init!r}")
        if self.ce_init == "dpr" and self.ce_base:
            raise ValueError("Setup.ce_base names a pretrained encoder; with ce_init='dpr' the reranker starts from "
                             "the fine-tuned DPR instead: set one of them")
        if self.ce_random_neg < 0:
            raise ValueError(f"Setup.ce_random_neg must be >= 0, got {self.ce_random_neg}")
        from .splits import CATEGORY_DRAWS, DEV_POOLS
        if self.dev_pool not in DEV_POOLS:
            raise ValueError(f"Setup.dev_pool must be one of {DEV_POOLS}, got {self.dev_pool!r}")
        if self.category_draw not in CATEGORY_DRAWS:
            raise ValueError(f"Setup.category_draw must be one of {CATEGORY_DRAWS}, got {self.category_draw!r}")
        if self.n_heldout_categories < 0 or (self.category_draw == "block" and self.n_heldout_categories < 1):
            raise ValueError(f"Setup.n_heldout_categories must be >= {1 if self.category_draw == 'block' else 0} "
                             f"(category_draw={self.category_draw!r}), got {self.n_heldout_categories}")
        if self.category_shuffle_seed < 0:
            raise ValueError(f"Setup.category_shuffle_seed must be >= 0, got {self.category_shuffle_seed}")
        if self.seed < 0:
            raise ValueError(f"Setup.seed must be >= 0, got {self.seed}")

    def stage_params(self, stage: str) -> dict:
        """The parameters that decide one stage's weights (its cache key)."""
        d = asdict(self)
        common = {k: d[k] for k in SPLIT_FIELDS if LATER_DEFAULTS.get(k, object()) != d[k]}
        own = {k: v for k, v in d.items() if k.startswith({"dual_encoder": "de_", "reranker": "ce_",
                                                            "classifier": "cl_"}[stage])}
        for k, default in LATER_DEFAULTS.items():
            if own.get(k, object()) == default:
                own.pop(k)
        if any(k.endswith("select_on_dev") for k in own):
            own["dev_eval_queries"] = self.dev_eval_queries          # decides which epoch is kept
        return {**common, **own}

    def training_params(self) -> dict:
        return {**self.stage_params("dual_encoder"), **self.stage_params("reranker"),
                **self.stage_params("classifier")}

    @property
    def reranker_dir(self) -> str:
        from toolkit.training import params_hash
        return f"reranker-{params_hash(self.stage_params('reranker'))}"

    @property
    def classifier_dir(self) -> str:
        from toolkit.training import params_hash
        return f"classifier-{params_hash(self.stage_params('classifier'))}"


PROFILES = {
    # seconds: a few optimizer steps on tiny samples
    "smoke": Setup("smoke", de_pairs=48, de_batch=16, de_max_len=64, de_warmup=1, ce_queries=16, ce_neg=2,
                   ce_batch=16, ce_max_len=64, cl_examples=48, cl_batch=16, max_steps=3),
    # full strength on this machine: the DPR on every (query, gold API) pair, the reranker's hard negatives
    # from the *trained* DPR's top 30 (§4.1), two per gold API, among seen tools only; every model evaluated on dev
    # after each epoch and its best epoch kept. Measured here on 2026-11-25 with the cores to itself (2 threads, max
    # length 128): DPR 12.8 pairs/s (24,261 pairs x 2 epochs: 61 min), classifier 33.6 pairs/s (7,182 examples over 3
    # epochs: 3.6 min), reranker ~18 pairs/s (72,783 pairs per epoch x 2: ~2.2 h).
    # Negatives only from seen tools' APIs: with negatives from the whole 464-API library, each held-out API was
    # a training negative 16 times on average and never a positive, and the reranker learned to score unseen tools low
    # (gold APIs of I1-Tool 0.12 vs wrong seen-tool APIs 0.40 in the first standard run). The reranker and classifier
    # heads are fresh: lr 5e-5 (2e-5 with ~75 steps stayed at chance).
    "standard": Setup("standard", threads=2, de_pos=0, de_epochs=2, de_batch=32, de_max_len=128, de_select_on_dev=True,
                      ce_pos=0, ce_neg=2, ce_neg_per="positive", ce_depth=30, ce_neg_source="dpr",
                      ce_neg_pool="seen", ce_epochs=2,
                      ce_batch=16, ce_max_len=128, ce_lr=5e-5, ce_select_on_dev=True,
                      cl_balance=True, cl_epochs=3, cl_batch=16, cl_lr=5e-5, cl_select_on_dev=True),
    # the paper: bert-base-uncased, all pairs, ToolBench's recipe (needs a GPU)
    "paper": Setup("paper", base="bert-base-uncased", threads=0, de_epochs=5, de_max_len=256, de_warmup=500,
                   ce_neg=5, ce_neg_per="positive", ce_max_len=256, cl_epochs=2),
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


def model_root(split: SeenUnseenSplit, setup: Setup) -> Path:
    """``cache_dir()/models/toolrerank/<profile>-<hash>``: the hash covers the split and the dual encoder; the
    reranker and the classifier live in ``reranker-<hash>`` / ``classifier-<hash>`` below it."""
    params = {**setup.stage_params("dual_encoder"), "train_queries": len(split.train.queries),
              "heldout": [split.heldout_categories, split.heldout_tools]}
    return model_dir(setup.profile, ".", params).resolve()


def train_all(split: SeenUnseenSplit, setup: Setup, log=print, stages=("dual_encoder", "reranker", "classifier")
              ) -> Models:
    """Train (or load from the cache) the dual encoder, the reranker and the classifier.

    ``stages`` limits what is trained in this call (the others' directories are still returned),
    so stages can run in parallel processes; the reranker needs a trained dual encoder."""
    set_threads(setup.threads)
    root = model_root(split, setup)
    steps = setup.max_steps or None
    stats: dict = {}
    train = split.train
    # 1. dual encoder
    t = time.perf_counter()
    if "dual_encoder" not in stages and "reranker" in stages and setup.ce_neg_source == "dpr" \
            and not (root / "dual_encoder" / "final").is_dir():
        raise RuntimeError("the reranker's hard negatives need the trained dual encoder: train it first")
    frozen = dpr_vectors.meta(root)
    if "dual_encoder" in stages and frozen and setup.ce_init != "dpr" and not trained(root / "dual_encoder"):
        # the weights left with an earlier machine, their vectors are committed: nothing here needs the weights
        de_path, stats["dual_encoder"] = root / "dual_encoder" / "final", {**frozen["training"], "vectors": "committed"}
        if log:
            log(f"dual_encoder: not on this machine; its committed vectors ({dpr_vectors.path_for(root).name}, "
                f"{frozen['texts']} texts) serve it")
    elif "dual_encoder" in stages:
        pairs = _sample(positive_pairs(train, setup.de_pos, setup.seed), setup.de_pairs, setup.seed)
        de_path, stats["dual_encoder"] = train_dual_encoder(
            pairs, root / "dual_encoder", base=setup.base, epochs=setup.de_epochs, batch_size=setup.de_batch,
            lr=setup.de_lr, warmup_steps=setup.de_warmup, max_seq_length=setup.de_max_len, max_steps=steps,
            seed=setup.seed, threads=setup.threads, log=log,
            dev_eval=dpr_dev_eval(dev_sample(split, setup)) if setup.de_select_on_dev else None)
        _stage_wall(root / "dual_encoder", stats["dual_encoder"], t)
    else:
        de_path = root / "dual_encoder" / "final"
    # 2. hard negatives from a retriever, then the cross-encoder
    if "reranker" in stages:
        ce_path, stats["reranker"] = _train_reranker(split, setup, root, de_path, steps, log)
    else:
        ce_path = root / setup.reranker_dir / "final"
    # 3. classifier
    t = time.perf_counter()
    if "classifier" in stages:
        ex = classifier_examples(train)
        if setup.cl_balance:
            one = [e for e in ex if e[1] == 1]
            many = [e for e in ex if e[1] == 0]
            k = min(len(one), len(many), (setup.cl_examples or len(ex)) // 2)
            ex = _sample(one, k, setup.seed + 2) + _sample(many, k, setup.seed + 3)
        else:
            ex = _sample(ex, setup.cl_examples, setup.seed + 2)
        cl_path, stats["classifier"] = train_classifier(
            ex, root / setup.classifier_dir, base=setup.base, epochs=setup.cl_epochs, batch_size=setup.cl_batch,
            lr=setup.cl_lr, max_steps=steps, seed=setup.seed, threads=setup.threads, log=log,
            dev_eval=classifier_dev_eval(dev_sample(split, setup)) if setup.cl_select_on_dev else None)
        _stage_wall(root / setup.classifier_dir, stats["classifier"], t)
    else:
        cl_path = root / setup.classifier_dir / "final"
    for stage in ("dual_encoder", "reranker", "classifier"):
        f = root / {"dual_encoder": "dual_encoder", "reranker": setup.reranker_dir,
                    "classifier": setup.classifier_dir}[stage] / "final" / "train_stats.json"
        if stage not in stats and f.is_file():
            stats[stage] = json.loads(f.read_text())
        elif stage == "dual_encoder" and stage not in stats and frozen:
            stats[stage] = {**frozen["training"], "vectors": "committed"}
    # wall times of stages trained by scripts/train_toolrerank.py before they were written to train_stats.json
    for tf in sorted(root.glob("timings-*.json")):
        for stage, st in json.loads(tf.read_text()).get("stats", {}).items():
            if stage in stats and "stage_wall_s" not in stats[stage] and "stage_wall_s" in st:
                stats[stage]["stage_wall_s"] = st["stage_wall_s"]
    return Models(de_path, ce_path, cl_path, root, stats)


@functools.lru_cache(maxsize=8)
def toollens_split(setup: Setup) -> SeenUnseenSplit:
    """The seen/unseen split of ToolLens (train + test) that ``setup`` trains on: its seed draws the
    held-out categories and tools and the dev set. Built once per setup and process (the head-to-head asked for
    it three times per run); callers read it and never change it."""
    from toolkit.data import load_dataset

    from .splits import make_split
    return make_split(load_dataset("toollens-train"), load_dataset("toollens-test"), dev_size=setup.dev_size,
                      n_heldout_categories=setup.n_heldout_categories, heldout_tool_frac=setup.heldout_tool_frac,
                      seed=setup.seed, dev_pool=setup.dev_pool, category_draw=setup.category_draw,
                      category_shuffle_seed=setup.category_shuffle_seed)


def dev_sample(split: SeenUnseenSplit, setup: Setup) -> RetrievalDataset:
    """The dev queries the per-epoch evaluations use (seeded, independent of the evaluation sample)."""
    return split.dev.sample(setup.dev_eval_queries, seed=setup.seed + 7)


def dpr_dev_eval(dev: RetrievalDataset):
    """``dev_eval`` of the dual encoder: Recall@5 of dense retrieval over the whole corpus."""
    import numpy as np

    from toolkit.metrics import evaluate
    ids, texts = dev.doc_texts()
    qids = list(dev.queries)

    def score(encode) -> float:
        d, q = encode(texts), encode([dev.queries[x].text for x in qids])
        top = np.argsort(-(q @ d.T), axis=1)[:, :5]
        run = {x: {ids[j]: float(5 - r) for r, j in enumerate(row)} for x, row in zip(qids, top)}
        return evaluate(run, dev.qrels, ["recall@5"])["recall@5"]
    return score


def rerank_dev_eval(dev: RetrievalDataset, top10: dict[str, list[str]]):
    """``dev_eval`` of the reranker: Recall@5 of Rerank-10 over the trained DPR's top 10."""
    from toolkit.metrics import evaluate
    qids = [q for q in dev.queries if top10.get(q)]

    def score(predict) -> float:
        pairs = [(dev.queries[q].text, dev.corpus[d].text) for q in qids for d in top10[q]]
        s, i, run = list(predict(pairs)), 0, {}
        for q in qids:
            k = len(top10[q])
            order = sorted(range(k), key=lambda j: -s[i + j])
            run[q] = {top10[q][j]: float(k - r) for r, j in enumerate(order)}
            i += k
        return evaluate(run, {q: dev.qrels[q] for q in qids}, ["recall@5"])["recall@5"]
    return score


def classifier_dev_eval(dev: RetrievalDataset):
    """``dev_eval`` of the classifier: accuracy of its single/multi-tool decision."""
    from .splits import is_single_tool
    qids = list(dev.queries)
    gold = [int(is_single_tool(dev, q)) for q in qids]

    def score(predict) -> float:
        pred = predict([dev.queries[q].text for q in qids])
        return sum(int(p) == g for p, g in zip(pred, gold)) / len(gold)
    return score


def _stage_wall(directory: Path, st: dict, t0: float) -> None:
    """Record the wall time of a stage once, when it was trained (not when loaded from the cache)."""
    if "stage_wall_s" not in st:
        st["stage_wall_s"] = round(time.perf_counter() - t0, 1)
        write_stats(directory, st)


def negative_pool(train: RetrievalDataset, pool: str = "all") -> tuple[list[str], list[str]]:
    """The APIs (ids, texts) the reranker's hard negatives are mined from: the whole library (``all``) or
    only APIs of tools with a gold API in ``train`` (``seen``: held-out tools stay out of training entirely)."""
    ids, texts = train.doc_texts()
    if pool == "all":
        return ids, texts
    if pool not in NEG_POOLS:
        raise ValueError(f"negative pool must be one of {NEG_POOLS}, got {pool!r}")
    seen = seen_tools(train)
    keep = [i for i, d in enumerate(ids) if tool_id(train.corpus[d]) in seen]
    return [ids[i] for i in keep], [texts[i] for i in keep]


def random_negative_pool(train: RetrievalDataset) -> list[str]:
    """The ToolBench library's APIs outside ``train``'s corpus (ToolLens: 16,427 - 464), in ToolLens's document format
    (:func:`toolkit.data.toollens.render_like_toollens`): random negatives that are never a test document, so no
    held-out API is taught as irrelevant."""
    from toolkit.data import load_library
    from toolkit.data.toollens import render_like_toollens
    inside = {doc.meta.get("api_key", d) for d, doc in train.corpus.items()}
    return [render_like_toollens(doc) for key, doc in sorted(load_library().items()) if key not in inside]


def _train_reranker(split, setup, root, de_path, steps, log):
    from dataclasses import replace

    from toolkit.retrieval import build_retriever
    t = time.perf_counter()
    out = root / setup.reranker_dir
    if done := trained(out):
        return done
    train = split.train
    base = str(de_path) if setup.ce_init == "dpr" else (setup.ce_base or setup.base)
    source, rounds = setup.ce_neg_source, []
    if setup.ce_rounds > 1:
        prev_path, prev_stats = _train_reranker(split, replace(setup, ce_rounds=setup.ce_rounds - 1), root, de_path,
                                                steps, log)
        base, source = str(prev_path), "dpr"
        rounds = prev_stats.get("rounds", [prev_stats])
    ce_qids = _sample(sorted(train.queries), setup.ce_queries, setup.seed + 1 + 100 * (setup.ce_rounds - 1))
    ce_ds = train.subset(ce_qids)
    retr = dpr_vectors.retriever(de_path) if source == "dpr" else build_retriever(f"dense:{setup.base}", batch_size=64)
    ids, texts = negative_pool(train, setup.ce_neg_pool)
    retr.index(ids, texts)
    run = retr.search(ce_ds.query_texts(), k=setup.ce_depth)
    ranked = {q: sorted(r, key=lambda d: -r[d]) for q, r in run.items()}
    mine_s = time.perf_counter() - t
    ce_pairs = sample_reranker_pairs(ce_ds, ranked, setup.ce_neg, setup.ce_depth, seed=setup.seed, n_pos=setup.ce_pos,
                                     per_positive=setup.ce_neg_per == "positive")
    if setup.ce_random_neg:
        ce_pairs = add_random_negatives(ce_pairs, random_negative_pool(train), setup.ce_random_neg, seed=setup.seed + 11)
    dev_eval = None
    if setup.ce_select_on_dev:       # Rerank-10 over the trained DPR's top 10 of the whole corpus
        dev = dev_sample(split, setup)
        dpr = dpr_vectors.retriever(de_path)
        dpr.index(*dev.doc_texts())
        run10 = dpr.search(dev.query_texts(), k=10)
        dev_eval = rerank_dev_eval(dev, {q: sorted(r, key=lambda d: -r[d]) for q, r in run10.items()})
    ce_path, stats = train_cross_encoder(
        ce_pairs, out, base=base, epochs=setup.ce_epochs, batch_size=setup.ce_batch,
        lr=setup.ce_lr, max_length=setup.ce_max_len, max_steps=steps, seed=setup.seed, threads=setup.threads, log=log,
        dev_eval=dev_eval)
    stats = dict(stats)
    stats["hard_negative_mining_s"] = round(mine_s, 1)
    stats["stage_wall_s"] = round(time.perf_counter() - t, 1)
    stats["negatives_from"] = source
    stats["negative_pool"] = f"{setup.ce_neg_pool} ({len(ids)} APIs)"
    stats["init"] = "the fine-tuned DPR" if setup.ce_init == "dpr" else (setup.ce_base or setup.base)
    if setup.ce_random_neg:
        stats["random_negatives"] = f"{setup.ce_random_neg} per positive from the ToolBench library outside ToolLens"
    if rounds:
        this = dict(stats)
        stats["rounds"] = rounds + [this]
        for key in ("steps", "pairs", "seconds", "train_pairs", "positives", "stage_wall_s", "hard_negative_mining_s"):
            stats[key] = round(sum(r.get(key) or 0 for r in stats["rounds"]), 1)
        stats["pairs_per_second"] = round(stats["pairs"] / max(stats["seconds"], 1e-9), 2)
        stats["negatives_from"] = "+".join(r.get("negatives_from", "?") for r in stats["rounds"])
    (out / "final" / "train_stats.json").write_text(json.dumps(stats, indent=1) + "\n")
    return ce_path, stats


def load_models(models: Models, corpus_texts: dict[str, str], setup: Setup):
    """(retriever factory, reranker with its persisted scores, classifier)."""
    reranker = Reranker(models.reranker, corpus_texts, max_length=setup.ce_max_len)
    for f in sorted(Path(models.reranker).parent.glob("scores*.pkl")):
        reranker.load_memo(f)
    return (lambda: dpr_vectors.retriever(models.dual_encoder)), reranker, \
        QueryClassifier(models.classifier)


def eval_sets(split: SeenUnseenSplit, subset_queries: int | None, dev_queries: int | None, seed: int = 0
              ) -> dict[str, RetrievalDataset]:
    """dev + the six mirror subsets, each a seeded sample (None = all)."""
    from .splits import SUBSETS
    out = {"dev": split.dev.sample(dev_queries, seed=seed)}
    for name in SUBSETS:
        out[name] = split.subset(name, subset_queries, seed=seed)
    return out


TRANSFER_GROUPS = ["g1-instruction", "g2-instruction", "g3-instruction", "g1-tool", "g1-category", "g2-category"]


def transfer_sets(n_per_group: int | None, corpus: str = "pool", seed: int = 0, sample_pools_only: bool = False
                  ) -> dict[str, RetrievalDataset]:
    """The six StableToolBench groups (``toolbench-<group>``), each a seeded sample (None = all).

    corpus ``pool``: the APIs of all the group's candidate pools (api_lists); ``library``: all 16k
    APIs. ``sample_pools_only`` keeps only the pools of the sampled queries (smoke runs)."""
    from toolkit.data import load_dataset
    from toolkit.data.sources import data_file
    from toolkit.data.toolbench import INSTRUCTION_FILES, instruction_queries, read_instruction_file
    out = {}
    for g in TRANSFER_GROUPS:
        ds = load_dataset(f"toolbench-{g}", corpus=corpus).sample(n_per_group, seed=seed)
        if sample_pools_only:
            group = {x.lower().replace("_", "-"): x for x in STABLE_GROUPS}[g]
            _, _, pools = instruction_queries(read_instruction_file(data_file(INSTRUCTION_FILES[f"stable/{group}"])),
                                              group)
            keep = {d for q in ds.queries for d in pools[q]}
            ds = RetrievalDataset(ds.name, {d: doc for d, doc in ds.corpus.items() if d in keep}, ds.queries,
                                  ds.qrels, ds.description + "; corpus = the sampled queries' pools")
        out[f"toolbench-{g}"] = ds
    return out


def prescore(datasets: dict[str, RetrievalDataset], models: Models, setup: Setup, depth: int = 50, chunk: int = 20,
             log=print, tag: str = "") -> dict[str, float]:
    """Retrieve top-``depth`` with the trained DPR and have the reranker score them, saving the scores
    every ``chunk`` queries (so the notebook's later run, or a killed one, scores nothing twice)."""
    texts = {}
    for ds in datasets.values():
        texts.update({d: doc.text for d, doc in ds.corpus.items()})
    make_retriever, reranker, _ = load_models(models, texts, setup)
    memo = Path(models.reranker).parent / f"scores{'-' + tag if tag else ''}.pkl"
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
