"""A trained model kept in the repository at half its size, and restored to float32 before use.

:func:`store_float16` rounds the float32 weights of a saved model (``model.safetensors``) to float16 -- IEEE binary16,
round to nearest even: a relative error of at most 2**-11 for values above 6.1e-5, an absolute one of at most 2**-25
below -- and writes them as shards under ``SHARD_BYTES`` in transformers' sharded layout (``model-0000i-of-0000n
.safetensors`` + ``model.safetensors.index.json``), beside a manifest (:data:`MANIFEST`) with the largest rounding
error. :func:`restore_float32` turns them back into one float32 ``model.safetensors`` in a directory of its own, so
every computation still runs in float32, on the rounded weights.

Why: a fine-tuned mpnet is 438 MB in float32, more than one submission of this project may add (256 MiB of diffs);
in float16 it is 219 MB, in shards under GitHub's 100 MB file limit. The rounded weights *are* the kept model: the
conversion is deterministic, so a trace made with a restored copy is reproduced by every later restore."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

MANIFEST = "stored_weights.json"
WEIGHTS = "model.safetensors"
INDEX = "model.safetensors.index.json"
SHARD_BYTES = 90_000_000


def _is_weights(name: str) -> bool:
    return name == WEIGHTS or name == INDEX or (name.startswith("model-") and name.endswith(".safetensors"))


def _copy_others(src: Path, dest: Path) -> None:
    """Every file of ``src`` but the weights and the manifest (tokenizer, configs, pooling modules, stats)."""
    for f in src.rglob("*"):
        rel = f.relative_to(src)
        if f.is_file() and not (len(rel.parts) == 1 and (_is_weights(f.name) or f.name == MANIFEST)):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dest / rel)


def store_float16(src: Path, dest: Path, shard_bytes: int = SHARD_BYTES) -> dict:
    """Write the model saved in ``src`` (one float32 ``model.safetensors``) to ``dest`` with its floating-point
    tensors rounded to float16, in shards of at most ``shard_bytes`` (a tensor is never split); other files are
    copied. Returns the manifest written to ``dest/MANIFEST``."""
    import torch
    from safetensors.torch import load_file, save_file
    src, dest = Path(src), Path(dest)
    weights = src / WEIGHTS
    if not weights.is_file():
        raise FileNotFoundError(f"{weights}: no single {WEIGHTS} to store in float16 (already sharded or stored?)")
    tensors = load_file(str(weights))
    dtypes = {str(t.dtype) for t in tensors.values() if t.is_floating_point()}
    if dtypes != {"torch.float32"}:
        raise ValueError(f"{weights}: store_float16 rounds float32 weights, found {sorted(dtypes)}")
    half, max_abs, max_rel = {}, 0.0, 0.0
    for k, t in tensors.items():
        if not t.is_floating_point():
            half[k] = t
            continue
        h = t.to(torch.float16)
        if not torch.isfinite(h).all():
            raise ValueError(f"{weights}: tensor {k} overflows float16 (|x| > 65504); keep it in float32")
        err = (h.float() - t).abs()
        max_abs = max(max_abs, float(err.max()))
        normal = t.abs() >= 2 ** -14
        if normal.any():
            max_rel = max(max_rel, float((err[normal] / t.abs()[normal]).max()))
        half[k] = h.contiguous()
    nbytes = {k: t.numel() * t.element_size() for k, t in half.items()}
    shards, size = [[]], 0
    for k in sorted(half):
        if shards[-1] and size + nbytes[k] > shard_bytes:
            shards.append([])
            size = 0
        shards[-1].append(k)
        size += nbytes[k]
    dest.mkdir(parents=True, exist_ok=True)
    weight_map = {}
    for i, keys in enumerate(shards, 1):
        name = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        save_file({k: half[k] for k in keys}, str(dest / name), metadata={"format": "pt"})
        weight_map.update({k: name for k in keys})
    total = sum(nbytes.values())
    (dest / INDEX).write_text(json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=1) + "\n")
    _copy_others(src, dest)
    manifest = {"dtype": "float16", "from": "float32", "tensors": len(half), "shards": len(shards),
                "bytes": total, "max_abs_rounding_error": max_abs, "max_rel_rounding_error": max_rel}
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def is_stored_float16(directory: Path) -> bool:
    return (Path(directory) / MANIFEST).is_file()


def restore_float32(stored: Path, out: Path) -> Path:
    """The float32 copy of a model written by :func:`store_float16`, in ``out`` (made once; through a temporary
    directory, so a killed restore is never taken for a finished one). Returns ``out``."""
    import torch
    from safetensors.torch import load_file, save_file
    stored, out = Path(stored), Path(out)
    if (out / WEIGHTS).is_file():
        return out
    index = json.loads((stored / INDEX).read_text())
    tensors = {}
    for name in sorted(set(index["weight_map"].values())):
        for k, t in load_file(str(stored / name)).items():
            tensors[k] = t.to(torch.float32) if t.is_floating_point() else t
    missing = set(index["weight_map"]) - set(tensors)
    if missing:
        raise ValueError(f"{stored}: {len(missing)} tensors of {INDEX} are in no shard, e.g. {sorted(missing)[0]}")
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save_file(tensors, str(tmp / WEIGHTS), metadata={"format": "pt"})
    _copy_others(stored, tmp)
    shutil.rmtree(out, ignore_errors=True)
    tmp.replace(out)
    return out
