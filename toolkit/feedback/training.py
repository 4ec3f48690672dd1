"""Iteration-aware feedback training (Xu et al. 2024, §4.3, Eqs. 5-6).

Offline feedback (the loop of :mod:`toolkit.feedback.loop` run on training instructions with the
retriever of the current stage) gives each training instruction its refinements q^0 ... q^T and
the top-K list retrieved for each. Training examples are ("Iteration t: q^t", gold tool) pairs with
weight alpha^t and, with ``hard_negatives``, one incorrect tool sampled from that round's top-K;
the loss is Eq. 6 (in-batch negatives + the hard negatives, softmax over scaled cosine
similarities as sentence-transformers' MultipleNegativesRankingLoss) summed with the weights of
Eq. 5. The switches of :class:`IterationConfig` make Table 4's ablations configurations:
``warmup=False`` (start from the off-the-shelf encoder instead of the ToolRetriever fine-tuned on
original instructions), ``hard_negatives=False``, ``joint=False`` (only the last refinement of each
instruction, L_feedback = L(q^t)). ``embedding_size`` adds a projection layer (Table 7).
Training runs through the suite's one loop, :func:`toolkit.training.train_loop`.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from toolkit.feedback.loop import Trace, iteration_prefix
from toolkit.paths import portable

# a training checkpoint every 20 steps (the loop's default is 100-200): the warm-up and iteration-aware runs are
# 40-150 steps, and mpnet's take an hour or more on a CPU, so a stopped session resumes them instead of starting over
CHECKPOINT_EVERY = 20


@dataclass(frozen=True)
class IterationConfig:
    alpha: float = 1.0              # §5.1: alpha = 1
    rounds: int = 3                 # T = 3
    k: int = 10                     # hard negatives come from the top-K
    warmup: bool = True
    hard_negatives: bool = True
    joint: bool = True
    prefix: bool = True             # the "Iteration t" token
    embedding_size: int | None = None
    epochs: int = 1
    batch_size: int = 32            # paper: 64 on four GPUs
    lr: float = 2e-5                # §5.1
    warmup_steps: int = 500         # §5.1 (capped at a tenth of the steps)
    max_seq_length: int = 256
    seed: int = 0
    # batches under this many pairs are dropped (None: half the batch): ToolLens's popular APIs otherwise end each
    # epoch in ~1,000 tiny batches of their leftover pairs (toolkit.training.batches_no_duplicates)
    min_batch: int | None = None

    @property
    def min_batch_size(self) -> int:
        return max(2, self.min_batch if self.min_batch is not None else self.batch_size // 2)

    def __post_init__(self) -> None:
        if self.alpha <= 0:
            raise ValueError(f"IterationConfig.alpha must be > 0, got {self.alpha}")
        for name in ("rounds", "k", "epochs", "batch_size", "max_seq_length"):
            if getattr(self, name) < 1:
                raise ValueError(f"IterationConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.min_batch is not None and not 2 <= self.min_batch <= self.batch_size:
            raise ValueError(f"IterationConfig.min_batch must be between 2 and batch_size ({self.batch_size}) or None "
                             f"(half the batch), got {self.min_batch}")
        if self.embedding_size is not None and self.embedding_size < 1:
            raise ValueError(f"IterationConfig.embedding_size must be >= 1 or None, got {self.embedding_size}")


@dataclass(frozen=True)
class Example:
    query: str            # "Iteration t: q^t"
    positive: str         # a gold tool document
    negative: str | None  # a hard negative from round t's top-K
    weight: float         # alpha^t
    t: int


def feedback_examples(traces: Mapping[str, Trace], qrels: Mapping[str, Mapping[str, int]], corpus,
                      cfg: IterationConfig = IterationConfig()) -> list[Example]:
    """Training examples from offline feedback traces (see the module docstring)."""
    rng = random.Random(cfg.seed)
    out = []
    for qid, tr in traces.items():
        gold = [d for d, r in qrels[qid].items() if r > 0]
        steps = range(min(len(tr.instructions), cfg.rounds + 1))
        if not cfg.joint:
            steps = [len(tr.instructions) - 1]
        for t in steps:
            text = iteration_prefix(tr.instructions[t], t, cfg.prefix)
            wrong = [d for d in tr.top(t, cfg.k) if d not in qrels[qid]] if tr.runs else []
            for d in gold:
                neg = corpus[rng.choice(wrong)].text if (cfg.hard_negatives and wrong) else None
                out.append(Example(text, corpus[d].text, neg, cfg.alpha ** t, t))
    return out


def weighted_contrastive_loss(model, batch: list[Example], scale: float = 20.0):
    """Eq. 6 per example (in-batch negatives + the batch's hard negatives), weighted by alpha^t (Eq. 5):
    sum_i w_i * CE_i / B, CE over cos-similarity x ``scale`` as MultipleNegativesRankingLoss."""
    import torch
    import torch.nn.functional as F

    def embed(texts):
        from sentence_transformers.util import batch_to_device
        prep = getattr(model, "preprocess", None) or model.tokenize
        return F.normalize(model(batch_to_device(prep(texts), model.device))["sentence_embedding"], dim=-1)

    q = embed([e.query for e in batch])
    docs = [e.positive for e in batch] + [e.negative for e in batch if e.negative is not None]
    d = embed(docs)
    scores = q @ d.T * scale
    ce = F.cross_entropy(scores, torch.arange(len(batch), device=scores.device), reduction="none")
    w = torch.tensor([e.weight for e in batch], dtype=ce.dtype, device=ce.device)
    return (w * ce).sum() / len(batch)


def train_iteration_aware(examples: list[Example], out_dir: Path, base: str, cfg: IterationConfig = IterationConfig(),
                          log=print, max_steps: int | None = None) -> tuple[Path, dict]:
    """Fine-tune ``base`` (a registry name or a saved SentenceTransformer, e.g. the warm-up model) on
    ``examples``; batches never repeat a query or a positive (they would be false in-batch negatives)."""
    from toolkit.retrieval.dual_encoder import load_base_encoder
    from toolkit.training import batches_no_duplicates, train_loop, trained, write_stats
    out_dir = Path(out_dir)
    if done := trained(out_dir):
        return done
    model = load_base_encoder(base, cfg.max_seq_length)
    if cfg.embedding_size:
        import torch
        from sentence_transformers import models
        dim = (getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension)()
        # the projection's initial weights come from the seed: unseeded, each run of a Table 7 row trained a
        # different model (smoke: the dim=512 and dim=768 rows' NDCG@10 changed between two cold runs)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.seed)
            model.append(models.Dense(dim, cfg.embedding_size, activation_function=torch.nn.Identity()))
    batches = []
    for e in range(cfg.epochs):
        batches += batches_no_duplicates(examples, cfg.batch_size, cfg.seed + e,
                                         keys=lambda ex: (ex.query, ex.positive), min_size=cfg.min_batch_size)
    batches = batches[:max_steps]
    warm = min(cfg.warmup_steps, max(1, len(batches) // 10))
    stats = train_loop(model, lambda b: weighted_contrastive_loss(model, b), batches, out_dir, lr=cfg.lr,
                       warmup_steps=warm, save=lambda p: model.save(str(p)), log=log, seed=cfg.seed,
                       checkpoint_every=CHECKPOINT_EVERY)
    stats.update(examples=len(examples), base=portable(base), config=repr(cfg))
    write_stats(out_dir, stats)
    return out_dir / "final", stats
