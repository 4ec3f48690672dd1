"""The "DPR" retriever: a bi-encoder fine-tuned with in-batch negatives (ToolBench's recipe).

ToolBench trains its API retriever with sentence-transformers: ``bert-base-uncased`` + mean
pooling, ``MultipleNegativesRankingLoss`` (each query against its gold API and every other API of
the batch), lr 2e-5, 500 warm-up steps, max sequence length 256, batch size 32 (ToolLLM §2.3,
``toolbench/retrieval/train.py``). ToolRerank's DPR row is that retriever. Here the base is a
registry name or path (``minilm`` by default on CPU; ``bert-base-uncased`` for the paper profile,
which gets a fresh mean-pooling head); training pairs are (query, gold API document), one per
gold API, batched so that no query text and no document repeats within a batch.
"""
from __future__ import annotations

import random

from pathlib import Path

from toolkit.data.contract import RetrievalDataset
from toolkit.paths import portable
from toolkit.training import batches_no_duplicates, epoch_batches, set_threads, train_loop, trained, write_stats


def positive_pairs(ds: RetrievalDataset, per_query: int = 0, seed: int = 0) -> list[tuple[str, str]]:
    """(query text, document text) for every gold API of every query, in qrels order; ``per_query``
    > 0 keeps a seeded sample of that many gold APIs per query (every query still contributes)."""
    rng = random.Random(seed)
    out = []
    for q in ds.qrels:
        gold = [d for d, r in ds.qrels[q].items() if r > 0]
        if per_query and len(gold) > per_query:
            gold = rng.sample(gold, per_query)
        out += [(ds.queries[q].text, ds.corpus[d].text) for d in gold]
    return out


def load_base_encoder(base: str, max_seq_length: int = 256, device: str | None = None):
    """A SentenceTransformer to fine-tune: a registry model as is, any other transformer + mean pooling; on ``device``
    (default :func:`toolkit.devices.device`: cuda when torch sees a GPU, else cpu, ``$TOOLKIT_DEVICE`` overrides)."""
    from toolkit import devices
    device = devices.device(device)
    from sentence_transformers import SentenceTransformer, models

    from toolkit.retrieval.models import resolve_model
    target, _ = resolve_model(base)
    if (Path(target) / "modules.json").is_file():
        model = SentenceTransformer(target, device=device)
    else:
        word = models.Transformer(target, max_seq_length=max_seq_length)
        model = SentenceTransformer(modules=[word, models.Pooling(word.get_word_embedding_dimension(), "mean")],
                                    device=device)
    model.max_seq_length = max_seq_length
    return model


def _features(model, texts: list[str]):
    from sentence_transformers.util import batch_to_device
    prep = getattr(model, "preprocess", None) or model.tokenize
    return batch_to_device(prep(texts), model.device)


def train_dual_encoder(pairs: list[tuple[str, str]], out_dir: Path, base: str = "minilm", epochs: int = 1,
                       batch_size: int = 32, lr: float = 2e-5, warmup_steps: int | None = 500,
                       max_seq_length: int = 256, max_steps: int | None = None, seed: int = 0,
                       threads: int | None = None, checkpoint_every: int = 100, log=print,
                       dev_eval=None, min_batch: int = 2) -> tuple[Path, dict]:
    """Fine-tune ``base`` on ``pairs``; returns (directory of the saved SentenceTransformer, stats).
    ``max_steps`` caps the number of batches (smoke runs). ``dev_eval(encode)`` scores the model after
    every epoch (``encode(texts)`` -> normalised embeddings) and the best epoch is kept. Batches under
    ``min_batch`` pairs are dropped (:func:`toolkit.training.batches_no_duplicates`: the tail of a popular
    API's leftover pairs; 2 keeps every batch with an in-batch negative). Cached: a finished ``out_dir`` is
    reused -- its name must carry ``min_batch`` when it is not 2."""
    out_dir = Path(out_dir)
    min_batch = max(2, min_batch)
    if done := trained(out_dir):
        return done
    set_threads(threads)
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    model = load_base_encoder(base, max_seq_length)
    loss = MultipleNegativesRankingLoss(model)
    batches, ends = epoch_batches(lambda e: batches_no_duplicates(pairs, batch_size, seed + e, min_size=min_batch),
                                  epochs, max_steps)
    steps = len(batches)
    warm = min(warmup_steps, max(1, steps // 10)) if warmup_steps is not None else None

    def loss_fn(batch):
        return loss([_features(model, [q for q, _ in batch]), _features(model, [d for _, d in batch])], None)

    def encode(texts):
        return model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True,
                            show_progress_bar=False)
    stats = train_loop(loss, loss_fn, batches, out_dir, lr=lr, warmup_steps=warm, checkpoint_every=checkpoint_every,
                       save=lambda p: model.save(str(p)), log=log, seed=seed, epoch_ends=ends,
                       on_epoch=(lambda e: dev_eval(encode)) if dev_eval else None, keep_best=dev_eval is not None)
    stats.update(epochs=epochs, batch_size=batch_size, max_seq_length=max_seq_length, base=portable(base),
                 train_pairs=len(pairs), min_batch=min_batch)
    write_stats(out_dir, stats)
    return out_dir / "final", stats
