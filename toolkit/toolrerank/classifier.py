"""Single- vs multi-tool query classifier (ToolRerank §3.3).

"Trained on the training data of the retriever": label = 1 (single-tool) when a training
query's gold APIs all belong to one tool, else 0 (multi-tool). Model: a fresh 2-way
classification head on the base transformer (MiniLM on CPU, bert-base-uncased in the paper),
cross-entropy, the shared training loop. ``QueryClassifier.predict`` returns True for single-tool.
"""
from __future__ import annotations

from pathlib import Path

from toolkit.data.contract import RetrievalDataset

from .splits import is_single_tool
from toolkit.training import (batches_no_duplicates, epoch_batches, set_threads, train_loop, trained,
                              write_stats)


def classifier_examples(ds: RetrievalDataset) -> list[tuple[str, int]]:
    return [(ds.queries[q].text, int(is_single_tool(ds, q))) for q in ds.qrels]


def _base_path(base: str) -> str:
    from toolkit.retrieval.models import resolve_model
    return resolve_model(base)[0]


def train_classifier(examples: list[tuple[str, int]], out_dir: Path, base: str = "minilm", epochs: int = 1,
                     batch_size: int = 32, lr: float = 2e-5, warmup_ratio: float = 0.1, max_length: int = 128,
                     max_steps: int | None = None, seed: int = 0, threads: int | None = None,
                     checkpoint_every: int = 200, log=print, dev_eval=None) -> tuple[Path, dict]:
    """Fine-tune a single/multi-tool classifier on (query, 1 if single-tool) examples; ``dev_eval(predict)``
    scores it after every epoch (``predict(texts)`` -> 1/0 labels) and the best epoch is kept."""
    out_dir = Path(out_dir)
    if done := trained(out_dir):
        return done
    set_threads(threads)
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    path = _base_path(base)
    tok = AutoTokenizer.from_pretrained(path)
    with torch.random.fork_rng(devices=[]):      # the fresh head from the seed, not from the process's history
        torch.manual_seed(seed)
        model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=2)
    from toolkit import devices
    dev = devices.device()
    model.to(dev)
    batches, ends = epoch_batches(lambda e: batches_no_duplicates(examples, batch_size, seed + e, keys=lambda it: ()),
                                  epochs, max_steps)

    def loss_fn(batch):
        enc = tok([t for t, _ in batch], padding=True, truncation=True, max_length=max_length, return_tensors="pt")
        return model(**enc.to(dev), labels=torch.tensor([y for _, y in batch], device=dev)).loss

    def save(p: Path):
        model.save_pretrained(str(p))
        tok.save_pretrained(str(p))

    def predict(texts):
        out = []
        with torch.no_grad():
            for i in range(0, len(texts), 64):
                enc = tok(texts[i:i + 64], padding=True, truncation=True, max_length=max_length,
                          return_tensors="pt").to(dev)
                out += model(**enc).logits.argmax(-1).tolist()
        return out
    stats = train_loop(model, loss_fn, batches, out_dir, lr=lr, warmup_ratio=warmup_ratio,
                       checkpoint_every=checkpoint_every, save=save, log=log, seed=seed, epoch_ends=ends,
                       on_epoch=(lambda e: dev_eval(predict)) if dev_eval else None, keep_best=dev_eval is not None)
    stats.update(epochs=epochs, batch_size=batch_size, base=base, train_examples=len(examples),
                 single_share=round(sum(y for _, y in examples) / max(1, len(examples)), 4))
    write_stats(out_dir, stats)
    return out_dir / "final", stats


class QueryClassifier:
    def __init__(self, path: str | Path, max_length: int = 128, batch_size: int = 64):
        from transformers import AutoModelForSequenceClassification, AutoTokenizer
        self.tok = AutoTokenizer.from_pretrained(str(path))
        self.model = AutoModelForSequenceClassification.from_pretrained(str(path)).eval()
        self.max_length, self.batch_size = max_length, batch_size

    def prob_single(self, texts: list[str]) -> list[float]:
        import torch
        out = []
        with torch.inference_mode():
            for s in range(0, len(texts), self.batch_size):
                enc = self.tok(texts[s:s + self.batch_size], padding=True, truncation=True,
                               max_length=self.max_length, return_tensors="pt")
                out += torch.softmax(self.model(**enc).logits, -1)[:, 1].tolist()
        return out

    def predict(self, texts: list[str]) -> list[bool]:
        return [p > 0.5 for p in self.prob_single(texts)]
