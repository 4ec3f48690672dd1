"""On-disk embedding cache keyed by (model, text), so every text is encoded once per model.

Layout: ``cache_dir()/embeddings/<namespace>/`` where the namespace names the model, the
normalize flag and ``max_seq_length`` (all three change the vectors). A registered model is named
by its hub id (its weights are pinned by package and checksum); a local model directory by the
sha256 of its weight files' content, so a model restored elsewhere or with new mtimes finds its vectors. Inside, append-only shards
``shard-*.npy`` (float32 vectors) + ``shard-*.keys.npy`` (sha256 digests of the UTF-8 texts, 32 bytes).
The keys file is renamed into place last, so a shard without keys (an interrupted write) is
ignored; an interrupted ``encode`` keeps every shard it finished. Lookups are vectorised
(``np.searchsorted`` over the sorted digests), so loading 20k cached vectors takes milliseconds.

Vectors are kept in float16 (``VECTOR_DTYPE``) and returned as float32: every vector a caller sees
is the float16 rounding of the encoder's output, whether it was encoded just now, read from this
machine's cache or from the committed one. That is what lets a fresh clone replay the standard
profile from committed vectors with bit-identical results (a cosine moves by about 1e-4).

Committed layer: ``data/embeddings/<namespace>/`` holds, read-only, the vectors the standard profile
needs (``python -m toolkit embeddings commit``), each file's sha256 in ``data/embeddings/MANIFEST.json``
and checked when first read. ``encode`` looks in this machine's cache, then in the committed layer,
and encodes only what neither holds. ``TOOLKIT_COMMITTED_EMBEDDINGS=0`` ignores the committed layer
(to measure a cold encode); ``TOOLKIT_EMBEDDING_LOG=<dir>`` records every text key a run looks up,
which is what ``embeddings commit --log <dir>`` exports.

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

from toolkit.paths import PROJECT_DATA, cache_dir, portable
from toolkit.retrieval.models import MODEL_CARDS, load_encoder, registered_id, resolve_model, weights_sha256

SHOW_PROGRESS_FROM = 256  # show a tqdm bar when at least this many texts must be encoded
VECTOR_DTYPE = np.float16  # stored precision; vectors are returned as float32 of these values
COMMITTED = PROJECT_DATA / "embeddings"
MANIFEST = "MANIFEST.json"


def text_keys(texts: list[str]) -> np.ndarray:
    """sha256 digests of the texts, as a ``S32`` array."""
    for t in texts:
        if not isinstance(t, str):
            raise TypeError(f"texts must be str, got {type(t).__name__}: {t!r:.80}")
    return np.array([hashlib.sha256(t.encode("utf-8")).digest() for t in texts], dtype="S32")


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
            extra = {"weights_sha256": weights_sha256(target)}
        else:  # unregistered hub model: ask the loaded encoder
            max_len = load_encoder(model_name).max_seq_length
    desc = {"model_id": model_id, "normalize": bool(normalize), "max_seq_length": max_len, **extra}
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id.rsplit("/", 1)[-1])[:60]
    # a local model is its content: the path (in model_id, kept for the reader) is not part of the key
    key = {k: v for k, v in desc.items() if not (extra and k == "model_id")}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:10]
    return f"{base}-{'norm' if normalize else 'raw'}-L{desc['max_seq_length']}-{digest}", desc


class ShardStore:
    """Append-only shards of (keys, vectors) in one directory, memoised in-process."""

    def __init__(self, directory: Path, desc: dict | None = None, read_only: bool = False,
                 checksums: dict[str, str] | None = None):
        self.dir, self.desc, self.read_only = Path(directory), desc or {}, read_only
        self.checksums = checksums  # {file name: sha256}: every shard must be listed and match
        if not read_only:
            self.dir.mkdir(parents=True, exist_ok=True)
        self._shards: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._index = None  # (sorted keys, row order, all vectors)

    def refresh(self) -> "ShardStore":
        for kpath in sorted(self.dir.glob("shard-*.keys.npy")):
            name = kpath.name[: -len(".keys.npy")]
            if name not in self._shards:
                if self.checksums is not None:
                    self._verify(name)
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

    def _verify(self, name: str) -> None:
        from toolkit.provenance import sha256

        for f in (self.dir / f"{name}.npy", self.dir / f"{name}.keys.npy"):
            want = self.checksums.get(f.name)
            got = sha256(f) if f.is_file() else None
            if want is None or got != want:
                raise ValueError(f"committed embedding file {portable(f)}: "
                                 f"{'not in ' + MANIFEST if want is None else 'missing' if got is None else 'sha256 ' + got[:12] + '... does not match ' + MANIFEST}"
                                 f". Restore it with `git checkout -- {portable(self.dir)}`, or set "
                                 "TOOLKIT_COMMITTED_EMBEDDINGS=0 to encode without the committed vectors")

    def __len__(self) -> int:
        return sum(len(k) for k, _ in self._shards.values())

    def _build(self):
        if self._index is None:
            if not self._shards:
                self._index = (np.empty(0, "S32"), np.empty(0, np.int64), None)
            else:
                keys = np.concatenate([k for k, _ in self._shards.values()])
                # float32 of the stored float16 values (older float32 shards are rounded the same way)
                vecs = np.concatenate([v for _, v in self._shards.values()]).astype(VECTOR_DTYPE).astype(np.float32)
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
        if self.read_only:
            raise PermissionError(f"embedding store {portable(self.dir)} is read-only (the committed layer)")
        name = f"shard-{time.time_ns()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        vecs = np.ascontiguousarray(vecs, dtype=VECTOR_DTYPE)
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


def manifest_files(root: Path) -> dict[str, str]:
    """``{"<namespace>/<shard file>": sha256}`` from ``root/MANIFEST.json``; a missing or unreadable one is an error."""
    manifest = Path(root) / MANIFEST
    try:
        return dict(json.loads(manifest.read_text())["files"])
    except (FileNotFoundError, json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{portable(manifest)} is missing or unreadable ({type(err).__name__}: {err}); restore it "
                         f"with `git checkout -- {portable(root)}`") from err


def committed_store(model_name: str, normalize: bool = True) -> ShardStore | None:
    """The committed, read-only layer of this model's vectors (None if none is committed, or when
    ``TOOLKIT_COMMITTED_EMBEDDINGS=0``). Every shard is checked against ``MANIFEST.json`` when read."""
    if os.environ.get("TOOLKIT_COMMITTED_EMBEDDINGS", "1").strip().lower() in {"0", "false", "no", "off"}:
        return None
    name, desc = namespace(model_name, normalize)
    directory = COMMITTED / name
    if not directory.is_dir():
        return None
    if directory not in _STORES:
        sums = manifest_files(COMMITTED)
        _STORES[directory] = ShardStore(directory, desc, read_only=True,
                                        checksums={k.split("/", 1)[1]: v for k, v in sums.items()
                                                   if k.split("/", 1)[0] == name})
    return _STORES[directory].refresh()


def _log_lookup(namespace_name: str, keys: np.ndarray) -> None:
    """Append the looked-up keys to ``$TOOLKIT_EMBEDDING_LOG/<namespace>/`` (what ``embeddings commit`` exports)."""
    log = os.environ.get("TOOLKIT_EMBEDDING_LOG")
    if log:
        d = Path(log) / namespace_name
        d.mkdir(parents=True, exist_ok=True)
        np.save(d / f"{time.time_ns()}-{os.getpid()}-{uuid.uuid4().hex[:6]}.npy", np.unique(keys))


def encode(model_name: str, texts: list[str], batch_size: int = 64, normalize: bool = True,
           show_progress: bool | None = None, shard_size: int = 1024, device: str | None = None,
           root: Path | None = None) -> np.ndarray:
    """Embeddings (float32 of float16 values, one row per text, in order) through the cache.

    Looks in this machine's cache, then (with the default ``root``) in the committed layer. Only
    texts neither holds are encoded — deduplicated, longest first (as sentence-transformers does,
    to limit padding), ``batch_size`` texts per model call — and saved every ``shard_size`` texts.
    """
    texts = list(texts)
    if not texts:
        dim = resolve_model(model_name)[1].get("dim") or load_encoder(model_name, device).get_embedding_dimension()
        return np.zeros((0, dim), np.float32)
    keys = text_keys(texts)
    store = store_for(model_name, normalize, root)
    _log_lookup(store.dir.name, keys)
    layers = [store] + [c for c in [committed_store(model_name, normalize) if root is None else None] if c]
    hit, _ = store.lookup(keys)
    committed_hit = np.zeros(len(keys), bool)
    for layer in layers[1:]:
        committed_hit |= layer.lookup(keys)[0]
    hit |= committed_hit
    if root is None:
        # what a fresh clone would have to encode (this machine's cache may hold it): a standard replay records 0
        from toolkit import provenance
        provenance.record_uncommitted_vectors(store.dir.name, len(np.unique(keys[~committed_hit])))
    if not hit.all():
        _, first = np.unique(keys[~hit], return_index=True)
        todo = [texts[i] for i in np.flatnonzero(~hit)[np.sort(first)]]
        todo.sort(key=len, reverse=True)
        _encode_into(store, model_name, todo, batch_size, normalize, show_progress, shard_size, device)
    out, done = _gather(layers, keys)
    assert done.all()
    return out


def _gather(layers: list[ShardStore], keys: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """(float32 vectors, found mask) for ``keys``, each from the first layer that holds it (None: no layer holds any)."""
    out, done = None, np.zeros(len(keys), bool)
    for layer in layers:
        hit, rows = layer.lookup(keys)
        take = hit & ~done
        if take.any():
            vecs = layer.vectors
            out = np.empty((len(keys), vecs.shape[1]), np.float32) if out is None else out
            out[take] = vecs[rows[take]]
            done |= take
    return out, done


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


def verify_committed_embeddings(root: Path | None = None) -> dict[str, str]:
    """``{file: "ok" | what is wrong}`` for the committed layer against its ``MANIFEST.json``."""
    from toolkit.provenance import sha256

    root = Path(root or COMMITTED)
    if not (root / MANIFEST).is_file():
        return {}
    try:
        files = manifest_files(root)
    except ValueError as err:
        return {portable(root / MANIFEST): str(err)}
    out = {}
    for rel, want in sorted(files.items()):
        f = root / rel
        out[portable(f)] = ("missing" if not f.is_file() else "ok" if sha256(f) == want
                            else "sha256 does not match MANIFEST.json")
    listed = {root / rel for rel in files}
    for f in sorted(root.glob("*/shard-*.npy")):
        if f not in listed:
            out[portable(f)] = "not in MANIFEST.json"
    return out


def commit_logged(log_dir: Path, dest: Path | None = None, root: Path | None = None,
                  partial: bool = False) -> dict[str, int]:
    """Add the vectors a logged run looked up (``TOOLKIT_EMBEDDING_LOG``) to the committed layer.

    For each logged namespace, the keys the committed layer lacks are read from this machine's cache
    (``root``) and written to ``dest/<namespace>/`` as one new float16 shard (keys sorted), beside
    ``namespace.json``. Existing shards are never rewritten, so the repository grows by the new
    vectors only. ``dest/MANIFEST.json`` then lists every file's sha256. A logged key that no cache
    holds is an error (the run must have encoded it), unless ``partial``: then the vectors a run still
    encoding has finished are committed, and the rest is left for a later commit (a long encoding is
    committed as it grows, like the LLM caches). Returns ``{namespace: vectors added}``.
    """
    from toolkit.provenance import sha256

    log_dir, dest = Path(log_dir), Path(dest or COMMITTED)
    machine = Path(root or cache_dir() / "embeddings")
    spaces = sorted(p for p in log_dir.iterdir() if p.is_dir()) if log_dir.is_dir() else []
    if not spaces:
        raise FileNotFoundError(f"no logged lookups under {log_dir}; run the notebooks with "
                                f"TOOLKIT_EMBEDDING_LOG={log_dir} first")
    staged, added = {}, {}
    for space in spaces:
        keys = np.unique(np.concatenate([np.load(f) for f in sorted(space.glob("*.npy"))]))
        if (dest / space.name).is_dir():
            keys = keys[~ShardStore(dest / space.name, read_only=True).refresh().lookup(keys)[0]]
        added[space.name] = len(keys)
        if not len(keys):
            continue
        layers = [ShardStore(machine / space.name, read_only=True).refresh()] if (machine / space.name).is_dir() else []
        vecs, found = _gather(layers, keys)
        if partial and not found.all():
            keys, vecs = keys[found], (vecs[found] if vecs is not None else None)
            added[space.name] = len(keys)
            if not len(keys):
                continue
        elif not found.all():
            raise ValueError(f"{int((~found).sum())} logged texts of {space.name} are in no embedding cache ({machine}); "
                             "run the notebooks again (they encode them) before committing")
        staged[space.name] = (keys, vecs.astype(VECTOR_DTYPE), machine / space.name / "namespace.json")
    for name, (keys, vecs, meta) in staged.items():
        d = dest / name
        d.mkdir(parents=True, exist_ok=True)
        shard = f"shard-{time.strftime('%Y%m%d-%H%M%S')}-{len(keys)}"
        np.save(d / f"{shard}.npy", vecs)
        np.save(d / f"{shard}.keys.npy", keys)  # written last: marks the shard complete
        if meta.is_file() and not (d / "namespace.json").is_file():
            (d / "namespace.json").write_text(meta.read_text())
    dest.mkdir(parents=True, exist_ok=True)
    files = {f"{f.parent.name}/{f.name}": sha256(f) for f in sorted(dest.glob("*/shard-*.npy"))}
    (dest / MANIFEST).write_text(json.dumps({
        "about": "float16 embeddings the notebooks look up (toolkit.retrieval.embedding_cache); add a run's "
                 "with: TOOLKIT_EMBEDDING_LOG=<dir> make reproduce, then python -m toolkit embeddings commit --log <dir>",
        "files": files}, indent=1, sort_keys=True) + "\n")
    _STORES.clear()
    return added
