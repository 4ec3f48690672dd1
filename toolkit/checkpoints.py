"""One store for trained state that must outlive a session: ``data/checkpoints/<name>/``.

A checkpoint is what a trainer needs to continue exactly where it stopped, or what a later session re-scores from:

- the trainable tensors (``weights-0000i-of-0000n.safetensors``, shards of at most :data:`MAX_FILE_BYTES`):
  ``kind="lora"`` an adapter (every tensor name holds ``lora_``; the base model is never stored), or
  ``kind="full"`` the whole weights of a MiniLM-class model (at most :data:`MAX_FULL_PARAMS` parameters), in float32
  (an exact resume) or float16 (IEEE binary16, round to nearest even; half the bytes, a resume from rounded weights);
- ``optimizer.pt`` (the optimizer's and scheduler's state) when it fits one file of at most the limit; otherwise it is
  not stored and the manifest says the optimizer restarts (Adam's moments from zero at the next step);
- ``state.json``: the python / numpy / torch RNG states and the trainer's own position (epoch, step in the epoch,
  early-stopping counters...), so a resumed run draws the same data order, dropout masks and samples;
- ``MANIFEST.json``: base model name and sha256, training-data sha256, config, seed, steps done, loss and dev curves,
  the command that continues it, whether optimizer state is stored, and every file's bytes and sha256.

    from toolkit import checkpoints as C
    C.save("toolrerank-strong-s0", model.state_dict(), kind="full", base="all-MiniLM-L6-v2", base_sha256=...,
           data_sha256=..., config={...}, seed=0, steps_done=400, command="python scripts/... --resume",
           optimizer=opt_and_sched_state, state={"epoch": 1, "step_in_epoch": 12})
    ck = C.load("toolrerank-strong-s0")      # verified first; recorded as an input of this run (kind="checkpoint")
    C.set_rng_state(ck.state["rng"])

Writes go through ``<name>.tmp`` and a rename: a run killed while saving leaves the previous checkpoint whole.
:func:`verify` checks a manifest against its files (sizes, sha256, the 50 MB limit) and names the file that fails;
``python -m toolkit verify --committed`` calls :func:`verify_store`. Retiring a checkpoint = :func:`retire` (deleting
its folder; commit the deletion): :func:`restore_from_history` gives it back from the commit before it left the tree.
"""
from __future__ import annotations

import io
import json
import random
import shutil
from dataclasses import dataclass
from pathlib import Path

from toolkit.paths import PROJECT_DATA

STORE = PROJECT_DATA / "checkpoints"
MANIFEST = "MANIFEST.json"
STATE = "state.json"
OPTIMIZER = "optimizer.pt"
MAX_FILE_BYTES = 50_000_000          # per file: every version stays in every clone's history
MAX_FULL_PARAMS = 40_000_000         # MiniLM-class: all-MiniLM-L6-v2 has 22.7 M parameters, -L12 33.4 M
STORE_BUDGET_BYTES = 200_000_000     # the whole store in the tree (every version stays in every clone's history)
KINDS = ("lora", "full")
DTYPES = ("float32", "float16")


class CheckpointError(ValueError):
    """A checkpoint that may not be stored, or whose files do not match its manifest."""


def rng_state() -> dict:
    """The python, numpy and torch (CPU) generators' states as JSON."""
    import numpy as np
    import torch
    py = random.getstate()
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    return {"python": [py[0], list(py[1]), py[2]],
            "numpy": [kind, keys.tolist(), int(pos), int(has_gauss), float(gauss)],
            "torch": torch.get_rng_state().tolist()}


def set_rng_state(state: dict) -> None:
    """Put back the generators' states saved by :func:`rng_state`."""
    import numpy as np
    import torch
    v, internal, gauss = state["python"]
    random.setstate((v, tuple(internal), gauss))
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, np.array(keys, dtype=np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(torch.tensor(state["torch"], dtype=torch.uint8))


def _sha256(path: Path) -> str:
    from toolkit.provenance import sha256
    return sha256(path)


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def _check_kind(name: str, tensors: dict, kind: str) -> None:
    if kind not in KINDS:
        raise CheckpointError(f"checkpoint {name}: kind must be one of {KINDS}, got {kind!r}")
    if kind == "lora":
        other = [k for k in tensors if "lora_" not in k]
        if other:
            raise CheckpointError(f"checkpoint {name}: kind='lora' holds adapter tensors only, but {len(other)} "
                                  f"tensor(s) are not LoRA's (e.g. {other[0]!r}); the base model is never stored: "
                                  f"pass peft's get_peft_model_state_dict(model)")
    params = sum(t.numel() for t in tensors.values())
    if params > MAX_FULL_PARAMS:
        raise CheckpointError(f"checkpoint {name}: {params / 1e6:.1f} M parameters, more than a MiniLM-class model "
                              f"({MAX_FULL_PARAMS / 1e6:.0f} M); store a LoRA adapter of a larger model, never its "
                              f"weights")


def _shards(name: str, tensors: dict, limit: int) -> list[list[str]]:
    shards, size = [[]], 0
    for k in sorted(tensors):
        t = tensors[k]
        n = t.numel() * t.element_size()
        if n > limit:
            raise CheckpointError(f"checkpoint {name}: tensor {k!r} alone is {_mb(n)}, over the {_mb(limit)} "
                                  f"per-file limit; store a LoRA adapter or float16 weights instead")
        if shards[-1] and size + n > limit:
            shards.append([])
            size = 0
        shards[-1].append(k)
        size += n
    return shards


def save(name: str, tensors: dict, *, kind: str, base: str, base_sha256: str, data_sha256: str, config: dict,
         seed: int, steps_done: int, command: str, curves: dict | None = None, optimizer: dict | None = None,
         state: dict | None = None, dtype: str = "float32", root: Path | None = None,
         max_file_bytes: int = MAX_FILE_BYTES) -> dict:
    """Write checkpoint ``name`` (replacing the previous one atomically) and return its manifest. ``tensors``: a
    state dict of the trainable tensors; ``optimizer``: the optimizer's (and scheduler's) state, stored when its
    serialized bytes fit ``max_file_bytes``; ``state``: the trainer's JSON position, to which the RNG states are
    added. Refuses (:class:`CheckpointError`, nothing written) a kind, dtype or size the store does not hold."""
    import torch
    from safetensors.torch import save_file
    if dtype not in DTYPES:
        raise CheckpointError(f"checkpoint {name}: dtype must be one of {DTYPES}, got {dtype!r}")
    if max_file_bytes > MAX_FILE_BYTES:
        raise CheckpointError(f"checkpoint {name}: max_file_bytes may not exceed {MAX_FILE_BYTES} bytes (the store's per-file limit)")
    _check_kind(name, tensors, kind)
    target = getattr(torch, dtype)
    out = {k: (t.detach().to(target) if t.is_floating_point() else t.detach()).contiguous().cpu()
           for k, t in tensors.items()}
    shards = _shards(name, out, max_file_bytes)
    opt_bytes = None
    if optimizer is not None:
        buf = io.BytesIO()
        torch.save(optimizer, buf)
        opt_bytes = buf.getvalue()
    root = Path(root or STORE)
    final, tmp = root / name, root / f"{name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for i, keys in enumerate(shards, 1):
        save_file({k: out[k] for k in keys}, str(tmp / f"weights-{i:05d}-of-{len(shards):05d}.safetensors"),
                  metadata={"format": "pt"})
    if opt_bytes is None:
        opt_note = "not stored (the trainer has none)"
    elif len(opt_bytes) <= max_file_bytes:
        (tmp / OPTIMIZER).write_bytes(opt_bytes)
        opt_note = "stored"
    else:
        opt_note = (f"not stored: {_mb(len(opt_bytes))} over the {_mb(max_file_bytes)} per-file limit; the optimizer "
                    f"restarts at resume (its moments from zero, the learning-rate schedule at step {steps_done})")
    (tmp / STATE).write_text(json.dumps({**(state or {}), "rng": rng_state()}) + "\n")
    files = {p.name: {"bytes": p.stat().st_size, "sha256": _sha256(p)} for p in sorted(tmp.iterdir())}
    manifest = {"name": name, "kind": kind, "dtype": dtype, "base": {"name": base, "sha256": base_sha256},
                "training_data_sha256": data_sha256, "config": config, "seed": seed, "steps_done": steps_done,
                "curves": curves or {}, "command": command, "optimizer": opt_note,
                "exact_resume": dtype == "float32" and opt_note == "stored",
                "parameters": int(sum(t.numel() for t in out.values())), "files": files,
                "bytes": sum(f["bytes"] for f in files.values())}
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    shutil.rmtree(final, ignore_errors=True)
    tmp.replace(final)
    return manifest


@dataclass
class Checkpoint:
    path: Path
    manifest: dict
    tensors: dict          # float32 (a float16 checkpoint is widened)
    optimizer: dict | None
    state: dict            # the trainer's position and "rng"


def verify(directory: Path) -> list[str]:
    """What is wrong with the checkpoint in ``directory`` ([] when nothing): each problem names the file -- a file the
    manifest lists that is missing, has other bytes or another sha256, a file over the limit, a file not listed."""
    directory = Path(directory)
    mf = directory / MANIFEST
    try:
        manifest = json.loads(mf.read_text(encoding="utf-8"))
        files = manifest["files"]
    except FileNotFoundError:
        return [f"{mf}: missing"]
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as e:
        return [f"{mf}: not a checkpoint manifest ({type(e).__name__}: {e})"]
    problems = []
    for fname, want in sorted(files.items()):
        p = directory / fname
        if not p.is_file():
            problems.append(f"{p}: listed in {MANIFEST} but missing")
            continue
        size = p.stat().st_size
        if size > MAX_FILE_BYTES:
            problems.append(f"{p}: {_mb(size)}, over the {_mb(MAX_FILE_BYTES)} per-file limit")
        if size != want.get("bytes"):
            problems.append(f"{p}: {size} bytes, the manifest says {want.get('bytes')}")
        elif _sha256(p) != want.get("sha256"):
            problems.append(f"{p}: sha256 differs from the manifest's (edited or damaged)")
    for p in sorted(directory.iterdir()):
        if p.name != MANIFEST and p.name not in files:
            problems.append(f"{p}: not listed in {MANIFEST} (remove it, or save the checkpoint again)")
    return problems


def load(name: str, root: Path | None = None, record: bool = True) -> Checkpoint:
    """Checkpoint ``name``, verified first (:class:`CheckpointError` naming the file otherwise) and recorded as an
    input of this run (``toolkit.provenance.record_input(..., kind="checkpoint")``: its sha256 goes to the results)."""
    import torch
    from safetensors.torch import load_file
    directory = Path(root or STORE) / name
    if not (directory / MANIFEST).is_file():
        raise CheckpointError(f"checkpoint {name}: no {directory / MANIFEST}; train it, or restore it from the git "
                              f"history (toolkit.checkpoints.restore_from_history({name!r}))")
    problems = verify(directory)
    if problems:
        raise CheckpointError(f"checkpoint {name} fails verification: " + "; ".join(problems))
    manifest = json.loads((directory / MANIFEST).read_text())
    tensors = {}
    for fname in sorted(manifest["files"]):
        if fname.startswith("weights-"):
            tensors.update({k: t.float() if t.is_floating_point() else t
                            for k, t in load_file(str(directory / fname)).items()})
    opt = torch.load(directory / OPTIMIZER, weights_only=True) if (directory / OPTIMIZER).is_file() else None
    state = json.loads((directory / STATE).read_text())
    if record:
        from toolkit.provenance import record_input
        for fname in [MANIFEST, *sorted(manifest["files"])]:
            record_input(directory / fname, kind="checkpoint")
    return Checkpoint(directory, manifest, tensors, opt, state)


def exists(name: str, root: Path | None = None) -> bool:
    return (Path(root or STORE) / name / MANIFEST).is_file()


def verify_store(root: Path | None = None) -> dict[str, str]:
    """``{manifest path: "ok" | its problems}`` for every checkpoint of the store, plus the store itself when it
    is over :data:`STORE_BUDGET_BYTES` (retire checkpoints no later work needs)."""
    from toolkit.provenance import shown
    root = Path(root or STORE)
    out, total = {}, 0
    for d in sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []:
        if d.name.endswith(".tmp"):
            out[shown(d)] = "an unfinished save (a killed run): delete it"
            continue
        problems = verify(d)
        out[shown(d / MANIFEST)] = "; ".join(problems) or "ok"
        total += sum(p.stat().st_size for p in d.iterdir() if p.is_file())
    if total > STORE_BUDGET_BYTES:
        out[shown(root)] = f"{_mb(total)} in the tree, over the {_mb(STORE_BUDGET_BYTES)} budget: retire checkpoints"
    return out


def retire(name: str, root: Path | None = None) -> None:
    """Delete checkpoint ``name`` from the tree (commit the deletion; :func:`restore_from_history` gives it back)."""
    directory = Path(root or STORE) / name
    if not (directory / MANIFEST).is_file():
        raise CheckpointError(f"checkpoint {name}: no {directory / MANIFEST} to retire")
    shutil.rmtree(directory)


def restore_from_history(name: str, root: Path | None = None) -> Path | None:
    """Put retired checkpoint ``name`` back into the store from the commit before the one that deleted it
    (:func:`toolkit.feedback.stages.extract_from_history`), verified; None when the history never held it."""
    from toolkit.feedback.stages import extract_from_history
    root = Path(root or STORE)
    got = extract_from_history(root, name, root)
    if got is None:
        return None
    problems = verify(got[0])
    if problems:
        raise CheckpointError(f"checkpoint {name} restored from {got[1][:10]}^ fails verification: "
                              + "; ".join(problems))
    return got[0]


def tensors_sha256(tensors: dict) -> str:
    """sha256 over a state dict's names, dtypes, shapes and bytes, in name order: the identity of a base model's
    weights (or of any tensors) independent of how they are filed."""
    import hashlib
    h = hashlib.sha256()
    for k in sorted(tensors):
        t = tensors[k].detach().contiguous().cpu()
        h.update(f"{k}\0{t.dtype}\0{tuple(t.shape)}\n".encode())
        h.update(t.view(-1).view(__import__("torch").uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def data_sha256(records) -> str:
    """sha256 of training data given as JSON-serialisable records, in their order."""
    import hashlib
    h = hashlib.sha256()
    for r in records:
        h.update(json.dumps(r, sort_keys=True, ensure_ascii=False).encode() + b"\n")
    return h.hexdigest()
