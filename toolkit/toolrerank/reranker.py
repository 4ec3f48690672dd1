"""The cross-encoder reranker (Nogueira & Cho 2019) as ToolRerank trains it.

Training pairs (§4.1): positives from the gold annotations of the training queries; hard
negatives sampled from the retriever's coarse-grained results (non-gold APIs among a query's
top ``depth`` candidates). The paper does not say how many; ``n_neg`` per query is a parameter.
Model: a fresh one-logit classification head on the base encoder's transformer (MiniLM on CPU,
bert-base-uncased in the paper), binary cross-entropy, score(q, d) = sigmoid(logit) in (0, 1)
as §2.3 describes — the thresholds tau_s of Table 2 live on that scale.
"""
from __future__ import annotations

import logging

import random
from pathlib import Path
from typing import Mapping

from toolkit.data.contract import RetrievalDataset

from toolkit.training import (batches_no_duplicates, epoch_batches, set_threads, train_loop, trained,
                              write_stats)

#: score_many shows sentence-transformers' progress bar from this many pairs (~15 s at the 38 pairs/s measured)
PROGRESS_FROM_PAIRS = 500

def sample_reranker_pairs(ds: RetrievalDataset, ranked: Mapping[str, list[str]], n_neg: int = 3, depth: int = 30,
                          seed: int = 0, n_pos: int = 0, per_positive: bool = False) -> list[tuple[str, str, float]]:
    """(query text, doc text, label): every gold API (label 1) — or a seeded sample of ``n_pos`` of
    them when ``n_pos`` > 0 — and ``n_neg`` non-gold APIs (``n_neg`` per kept gold API with
    ``per_positive``) drawn at random without replacement from the query's top ``depth`` retrieved
    candidates (label 0); fewer when the top ``depth`` holds fewer non-gold APIs."""
    rng = random.Random(seed)
    out = []
    for q in ds.qrels:
        gold = {d for d, r in ds.qrels[q].items() if r > 0}
        text = ds.queries[q].text
        pos = sorted(gold, key=list(ds.qrels[q]).index)
        if n_pos and len(pos) > n_pos:
            pos = rng.sample(pos, n_pos)
        out += [(text, ds.corpus[d].text, 1.0) for d in pos]
        negs = [d for d in ranked.get(q, [])[:depth] if d not in gold]
        want = n_neg * len(pos) if per_positive else n_neg
        out += [(text, ds.corpus[d].text, 0.0) for d in rng.sample(negs, min(want, len(negs)))]
    return out


def add_random_negatives(pairs: list[tuple[str, str, float]], pool: list[str], per_positive: int, seed: int = 0
                         ) -> list[tuple[str, str, float]]:
    """``pairs`` with ``per_positive`` documents drawn at random from ``pool`` (texts no training query has as a
    gold API) after each positive, labelled 0: easy negatives from a large library beside the hard ones, so the
    reranker does not learn that every document it has not been trained on is relevant."""
    if per_positive and len(pool) < per_positive:
        raise ValueError(f"add_random_negatives: the pool holds {len(pool)} documents, fewer than {per_positive}")
    rng, out = random.Random(seed), []
    for q, d, label in pairs:
        out.append((q, d, label))
        if label > 0:
            out += [(q, pool[i], 0.0) for i in rng.sample(range(len(pool)), per_positive)]
    return out


def load_base_cross_encoder(base: str, max_length: int = 256, device: str | None = None, seed: int = 0):
    """``base`` with a fresh one-logit head, initialised from ``seed`` (not from whatever the process drew before:
    unseeded, a reranker trained after another model in the same process started from another head); on ``device``
    (default :func:`toolkit.devices.device`)."""
    from toolkit import devices
    device = devices.device(device)
    import torch
    from sentence_transformers import CrossEncoder

    from toolkit.retrieval.models import resolve_model
    target, _ = resolve_model(base)
    # a bi-encoder checkpoint with a fresh one-output head is the documented start (toolkit.toolrerank.variants questions it);
    # sentence-transformers says so on stderr ("Converting SentenceTransformer model ... to CrossEncoder"),
    # with the venv's absolute path, into every executed notebook: quiet it for this call only
    st_logger = logging.getLogger("sentence_transformers")
    level = st_logger.level
    st_logger.setLevel(logging.ERROR)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return CrossEncoder(target, num_labels=1, max_length=max_length, device=device)
    finally:
        st_logger.setLevel(level)


def train_cross_encoder(pairs: list[tuple[str, str, float]], out_dir: Path, base: str = "minilm", epochs: int = 1,
                        batch_size: int = 32, lr: float = 2e-5, warmup_ratio: float = 0.1, max_length: int = 256,
                        max_steps: int | None = None, seed: int = 0, threads: int | None = None,
                        checkpoint_every: int = 100, log=print, dev_eval=None) -> tuple[Path, dict]:
    """Fine-tune a cross-encoder on (query, API text, label) pairs; ``dev_eval(score)`` scores it after
    every epoch (``score(pairs)`` -> relevance scores) and the best epoch is kept."""
    out_dir = Path(out_dir)
    if done := trained(out_dir):
        return done
    set_threads(threads)
    import torch
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss
    model = load_base_cross_encoder(base, max_length, seed=seed)
    loss = BinaryCrossEntropyLoss(model)
    batches, ends = epoch_batches(lambda e: batches_no_duplicates(pairs, batch_size, seed + e, keys=lambda it: ()),
                                  epochs, max_steps)

    def loss_fn(batch):
        labels = torch.tensor([lab for _, _, lab in batch], dtype=torch.float32)
        return loss([[q for q, _, _ in batch], [d for _, d, _ in batch]], labels)

    def score(qd_pairs):
        return model.predict(qd_pairs, batch_size=64, show_progress_bar=False)
    stats = train_loop(loss, loss_fn, batches, out_dir, lr=lr, warmup_ratio=warmup_ratio,
                       checkpoint_every=checkpoint_every, save=lambda p: model.save(str(p)), log=log, seed=seed,
                       epoch_ends=ends, on_epoch=(lambda e: dev_eval(score)) if dev_eval else None,
                       keep_best=dev_eval is not None)
    stats.update(epochs=epochs, batch_size=batch_size, max_length=max_length, base=base, train_pairs=len(pairs),
                 positives=int(sum(lab for _, _, lab in pairs)))
    write_stats(out_dir, stats)
    return out_dir / "final", stats


class Reranker:
    """score(q, d) in (0, 1) from a trained cross-encoder, memoised per (query text, doc id)."""

    def __init__(self, path: str | Path, corpus_text: Mapping[str, str], batch_size: int = 64,
                 max_length: int = 256, device: str | None = None):
        from sentence_transformers import CrossEncoder

        from toolkit import devices
        device = devices.device(device)
        self.model = CrossEncoder(str(path), max_length=max_length, device=device)
        self.text, self.batch_size = corpus_text, batch_size
        self.memo: dict[tuple[str, str], float] = {}
        self.pairs_scored, self.seconds = 0, 0.0

    def score(self, query: str, doc_ids: list[str]) -> dict[str, float]:
        import time

        import torch
        todo = [d for d in dict.fromkeys(doc_ids) if (query, d) not in self.memo]
        if todo:
            t = time.perf_counter()
            vals = self.model.predict([(query, self.text[d]) for d in todo], batch_size=self.batch_size,
                                      activation_fn=torch.nn.Sigmoid(), show_progress_bar=False)
            self.seconds += time.perf_counter() - t
            self.pairs_scored += len(todo)
            for d, v in zip(todo, vals):
                self.memo[(query, d)] = float(v)
        return {d: self.memo[(query, d)] for d in doc_ids}

    def save_memo(self, path: str | Path) -> None:
        """Persist the scores (atomic write) so a rerun scores nothing twice."""
        import pickle
        path = Path(path)
        tmp = path.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            pickle.dump(self.memo, f)
        tmp.replace(path)

    def load_memo(self, path: str | Path) -> int:
        import pickle
        path = Path(path)
        if path.is_file():
            with open(path, "rb") as f:
                self.memo.update(pickle.load(f))
        return len(self.memo)

    def score_many(self, items: list[tuple[str, list[str]]]) -> None:
        """Score many (query, doc ids) at once (one predict call: better batching)."""
        import time

        import torch
        todo = list(dict.fromkeys((q, d) for q, ds in items for d in ds if (q, d) not in self.memo))
        if not todo:
            return
        t = time.perf_counter()
        todo.sort(key=lambda qd: len(qd[0]) + len(self.text[qd[1]]))
        vals = self.model.predict([(q, self.text[d]) for q, d in todo], batch_size=self.batch_size,
                                  activation_fn=torch.nn.Sigmoid(),
                                  show_progress_bar=len(todo) >= PROGRESS_FROM_PAIRS)
        self.seconds += time.perf_counter() - t
        self.pairs_scored += len(todo)
        for k, v in zip(todo, vals):
            self.memo[k] = float(v)
