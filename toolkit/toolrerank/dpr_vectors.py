"""The trained DPR's vectors, committed, so that a run needing only its rankings replays without its weights.

Weights are never committed, and a fresh machine has none. Retraining the main split's DPR costs about an hour
(1,956 steps at 6.9 pairs/s). A reranker variant, or the main reranker retrained on more queries, does not need
the DPR's weights: it uses the DPR only through its vectors (hard-negative mining, the dev top 10, the candidates
and Algorithm 2's similarities).

:func:`export` writes the vectors of every ToolLens query and API text, keyed by the DPR's model root:
``data/score_cache/toolrerank/dpr-vectors-<root>.npz``. The file holds the sha256 text keys, the float16 vectors
(the embedding cache's precision, so rankings from the file equal those from the live model bit for bit), and a
JSON meta with the DPR's training stats and weight digest.

:func:`retriever` serves a :class:`~toolkit.retrieval.dense.DenseRetriever` from the live model when its weights are
on this machine, and from that file otherwise. A text the file lacks is an error that names the file and the fix.
"""
from __future__ import annotations

import functools

import json
from pathlib import Path

import numpy as np

from toolkit.paths import PROJECT_DATA
from toolkit.retrieval.dense import DenseRetriever
from toolkit.retrieval.embedding_cache import VECTOR_DTYPE, text_keys

DIR = PROJECT_DATA / "score_cache" / "toolrerank"
#: the datasets whose every query and API text an export covers (any split, sample or variant of ToolLens)
DATASETS = ("toollens-train", "toollens-test")


def path_for(root: Path) -> Path:
    """The vectors file of the DPR trained under model root ``root`` (``model_root(split, setup)``)."""
    return DIR / f"dpr-vectors-{Path(root).name}.npz"


def meta(root: Path) -> dict | None:
    """The export's meta (DPR training stats, weight digest, text count), or None when there is no export."""
    p = path_for(root)
    if not p.is_file():
        return None
    with np.load(p) as z:
        return json.loads(bytes(z["meta"]).decode())


class FrozenDense(DenseRetriever):
    """A DenseRetriever whose ``embed`` reads an exported vectors file instead of running the model."""

    def __init__(self, path: Path, batch_size: int = 64):
        super().__init__(model=str(path), batch_size=batch_size, cache=False)
        self.path = Path(path)
        self._keys, self._vecs = _vectors(str(self.path), self.path.stat().st_mtime_ns)
        if len(self._keys) != len(self._vecs) or not np.all(self._keys[:-1] < self._keys[1:]):
            raise ValueError(f"{self.path}: keys and vectors do not match or keys are not sorted and unique; "
                             f"re-export it (toolkit.toolrerank.dpr_vectors.export)")

    def __repr__(self) -> str:
        return f"FrozenDense({self.path.name}, {len(self._keys)} vectors, {len(self.doc_ids)} docs)"

    def embed(self, texts: list[str]) -> np.ndarray:
        keys = text_keys(list(texts))
        rows = np.searchsorted(self._keys, keys).clip(0, len(self._keys) - 1)
        missing = np.flatnonzero(self._keys[rows] != keys)
        if len(missing):
            raise KeyError(f"{self.path}: {len(missing)} of {len(keys)} texts have no DPR vector (first: "
                           f"{texts[missing[0]]!r:.80}); the export covers {', '.join(DATASETS)} only. Train the DPR "
                           f"(scripts/train_toolrerank.py --stages dual_encoder) so the live model serves them")
        return self._vecs[rows].astype(np.float32)


@functools.lru_cache(maxsize=4)
def _vectors(path: str, mtime_ns: int) -> tuple[np.ndarray, np.ndarray]:
    """(keys, vectors) of one export, read once per file version and process (one FrozenDense per corpus)."""
    with np.load(path) as z:
        return z["keys"], z["vectors"]


def retriever(de_path: Path, batch_size: int = 64) -> DenseRetriever:
    """The DPR whose weights are (or were) at ``de_path`` (``<root>/dual_encoder/final``): the live model if it is
    on this machine, else its exported vectors."""
    from toolkit.retrieval import build_retriever
    de_path = Path(de_path)
    if de_path.is_dir():
        return build_retriever(f"dense:{de_path}", batch_size=batch_size)
    p = path_for(de_path.parent.parent)
    if p.is_file():
        return FrozenDense(p, batch_size=batch_size)
    raise FileNotFoundError(f"the DPR {de_path} is not on this machine and has no exported vectors ({p}); train it "
                            f"with scripts/train_toolrerank.py --stages dual_encoder")


def all_texts() -> list[str]:
    """Every query and API text of :data:`DATASETS`, deduplicated, in a fixed order."""
    from toolkit.data import load_dataset
    texts: dict[str, None] = {}
    for name in DATASETS:
        ds = load_dataset(name)
        texts.update(dict.fromkeys(ds.query_texts().values()))
        texts.update(dict.fromkeys(ds.doc_texts()[1]))
    return list(texts)


def export(de_path: Path, texts: list[str] | None = None) -> Path:
    """Encode ``texts`` (default :func:`all_texts`) with the live DPR at ``de_path`` and write its vectors file."""
    from toolkit.retrieval import build_retriever
    from toolkit.retrieval.models import weights_sha256
    from toolkit.training import read_stats
    de_path = Path(de_path)
    if not de_path.is_dir():
        raise FileNotFoundError(f"export: no trained DPR at {de_path}")
    datasets = list(DATASETS) if texts is None else "given texts"
    texts = list(dict.fromkeys(all_texts() if texts is None else texts))
    vecs = build_retriever(f"dense:{de_path}", batch_size=64).embed(texts)
    keys = text_keys(texts)
    order = np.argsort(keys)
    info = {"model_root": de_path.parent.parent.name, "weights_sha256": weights_sha256(de_path),
            "texts": len(texts), "dim": int(vecs.shape[1]), "datasets": datasets,
            "training": read_stats(de_path.parent)}
    out = path_for(de_path.parent.parent)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, keys=keys[order], vectors=vecs[order].astype(VECTOR_DTYPE),
                        meta=np.frombuffer(json.dumps(info).encode(), dtype=np.uint8))
    tmp.replace(out)
    return out
