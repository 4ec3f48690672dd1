"""On-disk embedding cache keyed by (model, text), so every text is encoded once per model.

Layout: ``cache_dir()/embeddings/<namespace>/`` where the namespace names the model id, the
normalize flag and ``max_seq_length`` (all three change the vectors). Inside, append-only shards
``shard-*.npy`` (float32 vectors) + ``shard-*.keys.npy`` (sha256 digests of the UTF-8 texts, 32 bytes).
The keys file is renamed into place last, so a shard without keys (an interrupted write) is
ignored; an interrupted ``encode`` keeps every shard it finished. Lookups are vectorised
(``np.searchsorted`` over the sorted digests), so loading 20k cached vectors takes milliseconds.

    vecs = encode("minilm", texts)            # encodes only the cache misses, deduplicated
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import time
import uuid
from pathlib import Path

import numpy as np

from toolkit.paths import cache_dir
from toolkit.retrieval.models import MODEL_CARDS, load_encoder, registered_id, resolve_model

SHOW_PROGRESS_FROM = 256  # show a tqdm bar when at least this many texts must be encoded


def text_keys(texts: list[str]) -> np.ndarray:
    """sha256 digests of the texts, as a ``S32`` array."""
    for t in texts:
        if not isinstance(t, str):
            raise TypeError(f"texts must be str, got {type(t).__name__}: {t!r:.80}")
    return np.array([hashlib.sha256(t.encode("utf-8")).digest() for t in texts], dtype="S32")


def _local_fingerprint(path: Path) -> str:
    """Cheap identity of a local model directory: names, sizes and mtimes of its weight files."""
    files = sorted(p for p in path.rglob("*") if p.suffix in {".safetensors", ".bin", ".pt"} and p.is_file())
    desc = [(str(p.relative_to(path)), p.stat().st_size, p.stat().st_mtime_ns) for p in files]
    return hashlib.sha256(json.dumps(desc).encode()).hexdigest()[:16]


def namespace(model_name: str, normalize: bool = True) -> tuple[str, dict]:
    """(directory name, descriptor) of the cache for this model and normalize flag."""
    hub_id = registered_id(model_name) if not Path(model_name).expanduser().is_dir() else None
    extra = {}
    if hub_id:  # registered: named without locating (or joining) the weights
        model_id, max_len = hub_id, MODEL_CARDS[hub_id]["max_seq_length"]
    else:
        target, info = resolve_model(model_name)
        model_id = info["model_id"]
        if Path(target).is_dir():  # local directory
            cfg = Path(target) / "sentence_bert_config.json"
            max_len = json.loads(cfg.read_text()).get("max_seq_length") if cfg.is_file() else None
            extra = {"fingerprint": _local_fingerprint(Path(target))}
        else:  # unregistered hub model: ask the loaded encoder
            max_len = load_encoder(model_name).max_seq_length
    desc = {"model_id": model_id, "normalize": bool(normalize), "max_seq_length": max_len, **extra}
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id.rsplit("/", 1)[-1])[:60]
    digest = hashlib.sha256(json.dumps(desc, sort_keys=True).encode()).hexdigest()[:10]
    return f"{base}-{'norm' if normalize else 'raw'}-L{desc['max_seq_length']}-{digest}", desc


class ShardStore:
    """Append-only shards of (keys, vectors) in one directory, memoised in-process."""

    def __init__(self, directory: Path, desc: dict | None = None):
        self.dir, self.desc = Path(directory), desc or {}
        self.dir.mkdir(parents=True, exist_ok=True)
        self._shards: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._index = None  # (sorted keys, row order, all vectors)

    def refresh(self) -> "ShardStore":
        for kpath in sorted(self.dir.glob("shard-*.keys.npy")):
            name = kpath.name[: -len(".keys.npy")]
            if name not in self._shards:
                try:
                    keys, vecs = np.load(kpath), np.load(self.dir / f"{name}.npy")
                except FileNotFoundError:  # removed by a concurrent compact(); its merged shard is listed too
                    continue
                if len(keys) != len(vecs):
                    raise ValueError(f"corrupt embedding shard {self.dir / name}: {len(keys)} keys, "
                                     f"{len(vecs)} vectors; delete both files")
                self._shards[name] = (keys, vecs)
                self._index = None
        return self

    def __len__(self) -> int:
        return sum(len(k) for k, _ in self._shards.values())

    def _build(self):
        if self._index is None:
            if not self._shards:
                self._index = (np.empty(0, "S32"), np.empty(0, np.int64), None)
            else:
                keys = np.concatenate([k for k, _ in self._shards.values()])
                vecs = np.concatenate([v for _, v in self._shards.values()]).astype(np.float32, copy=False)
                order = np.argsort(keys, kind="stable")
                self._index = (keys[order], order, vecs)
        return self._index

    def lookup(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(hit mask, row of each hit in ``vectors``) — vectorised."""
        sorted_keys, order, _ = self._build()
        if len(sorted_keys) == 0:
            return np.zeros(len(keys), bool), np.zeros(len(keys), np.int64)
        pos = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
        return sorted_keys[pos] == keys, order[pos]

    @property
    def vectors(self) -> np.ndarray:
        return self._build()[2]

    def append(self, keys: np.ndarray, vecs: np.ndarray) -> None:
        """Write one shard atomically: vectors first, keys last (the keys file marks it complete)."""
        name = f"shard-{time.time_ns()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        vecs = np.ascontiguousarray(vecs, dtype=np.float32)
        for suffix, arr in ((".npy", vecs), (".keys.npy", np.asarray(keys, dtype="S32"))):
            tmp = self.dir / f".{name}{suffix}.tmp"
            with open(tmp, "wb") as f:
                np.save(f, arr)
            os.replace(tmp, self.dir / f"{name}{suffix}")
        self._shards[name] = (np.asarray(keys, dtype="S32"), vecs)
        self._index = None

    def compact(self) -> None:
        """Merge all shards into one (write the merged shard, then delete the old ones)."""
        self.refresh()
        if len(self._shards) > 1:
            old, (sorted_keys, order, vecs) = list(self._shards), self._build()
            uniq, first = np.unique(sorted_keys, return_index=True)
            self.append(uniq, vecs[order[first]])
            for name in old:
                (self.dir / f"{name}.keys.npy").unlink(missing_ok=True)
                (self.dir / f"{name}.npy").unlink(missing_ok=True)
                self._shards.pop(name)
            self._index = None


_STORES: dict[Path, ShardStore] = {}


def store_for(model_name: str, normalize: bool = True, root: Path | None = None) -> ShardStore:
    """The (memoised, refreshed) shard store of a model; writes ``namespace.json`` beside the shards."""
    name, desc = namespace(model_name, normalize)
    directory = Path(root or cache_dir() / "embeddings") / name
    if directory not in _STORES:
        _STORES[directory] = ShardStore(directory, desc)
        meta = directory / "namespace.json"
        if not meta.exists():
            meta.write_text(json.dumps(desc, indent=1, sort_keys=True) + "\n")
    return _STORES[directory].refresh()


def encode(model_name: str, texts: list[str], batch_size: int = 64, normalize: bool = True,
           show_progress: bool | None = None, shard_size: int = 1024, device: str | None = None,
           root: Path | None = None) -> np.ndarray:
    """Embeddings (float32, one row per text, in order) through the cache.

    Only cache misses are encoded — deduplicated, longest first (as sentence-transformers does,
    to limit padding), ``batch_size`` texts per model call — and saved every ``shard_size`` texts.
    """
    texts = list(texts)
    if not texts:
        dim = resolve_model(model_name)[1].get("dim") or load_encoder(model_name, device).get_embedding_dimension()
        return np.zeros((0, dim), np.float32)
    keys = text_keys(texts)
    store = store_for(model_name, normalize, root)
    hit, _ = store.lookup(keys)
    if not hit.all():
        _, first = np.unique(keys[~hit], return_index=True)
        todo = [texts[i] for i in np.flatnonzero(~hit)[np.sort(first)]]
        todo.sort(key=len, reverse=True)
        _encode_into(store, model_name, todo, batch_size, normalize, show_progress, shard_size, device)
        hit, _ = store.lookup(keys)
        assert hit.all()
    return store.vectors[store.lookup(keys)[1]]


def _encode_into(store, model_name, todo, batch_size, normalize, show_progress, shard_size, device):
    from tqdm.auto import tqdm

    model = load_encoder(model_name, device)
    expected = store.desc.get("max_seq_length")
    if expected is not None and model.max_seq_length != expected:
        raise ValueError(f"encoder {model_name!r} has max_seq_length={model.max_seq_length}, the cache "
                         f"namespace says {expected}; do not change max_seq_length on the shared encoder")
    show = len(todo) >= SHOW_PROGRESS_FROM if show_progress is None else show_progress
    with tqdm(total=len(todo), desc=f"encode {model_name}", unit="text", disable=not show) as bar:
        for s in range(0, len(todo), shard_size):
            chunk, vecs = todo[s:s + shard_size], []
            for b in range(0, len(chunk), batch_size):
                batch = chunk[b:b + batch_size]
                vecs.append(np.asarray(model.encode(batch, batch_size=batch_size, normalize_embeddings=normalize,
                                                    convert_to_numpy=True, show_progress_bar=False), np.float32))
                bar.update(len(batch))
            store.append(text_keys(chunk), np.concatenate(vecs))


def compact(model_name: str, normalize: bool = True, root: Path | None = None) -> None:
    """Merge a model's shards into one file (many small ``encode`` calls leave many shards)."""
    store_for(model_name, normalize, root).compact()
