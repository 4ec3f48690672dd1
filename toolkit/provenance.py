"""What a run read: the committed inputs behind its numbers and the LLM backend of every LLM client it opened.

Every loader of a committed, replayable input (an LLM response cache, a feedback trace, a ToolRerank score cache, a
query-generation history) calls :func:`record_input` with the file and the number of records it used; every LLM
client calls :func:`record_llm`. :class:`toolkit.results.Recorder` writes both into
``results/<notebook>/<profile>.json`` (``inputs``, ``llm``), and ``python -m toolkit check`` verifies them: a
committed input whose sha256 changed, that is missing, or an LLM row answered by the echo backend named in the
environment fails the check, naming the file or the variable (a result names what it read).

    from toolkit import provenance
    provenance.record_input(path, records=150, kind="feedback trace")
    provenance.inputs()      # [{"path": "data/feedback_traces/...", "sha256": ..., "records": 150, "kind": ...}]
    provenance.problems(results_json["inputs"])   # ["data/...: changed since the run (sha256 ... -> ...)"]
    provenance.read_json_field("results/40_querygen/standard.json", "calibration.Zero-Shot.best", kind="notebook 40 run")

A field of another notebook's results (:func:`read_json_field`) is recorded with the digest of that field alone: the
other notebook's re-run changes its timings and revision every time, and only a change of what was read makes this
run stale.
"""
from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

_lock = threading.Lock()
_inputs: dict[str, dict] = {}
_llm: dict[tuple, dict] = {}
_uncommitted: dict[str, int] = {}      # embedding namespace -> texts looked up that no committed shard holds
_problems: dict[str, None] = {}          # what this run lacked (a replay cache the environment emptied), in order
_hashes: dict[tuple, str | None] = {}   # (path, size, mtime_ns[, field]) -> sha256: a file read many times is hashed once


def _repo() -> Path:
    from toolkit.paths import REPO
    return REPO.resolve()


def sha256(path: Path) -> str:
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _hashes:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _hashes[key] = h.hexdigest()
    return _hashes[key]


_MISSING = object()


def _field(doc, field: str):
    """``doc``'s value at the dotted ``field`` (``"calibration.Zero-Shot.best"``), or ``_MISSING``."""
    for key in field.split("."):
        if not isinstance(doc, dict) or key not in doc:
            return _MISSING
        doc = doc[key]
    return doc


def field_sha256(path: Path, field: str) -> str | None:
    """sha256 of the canonical JSON of ``path``'s ``field``; None when the file is not JSON or lacks the field.
    Cached as :func:`sha256` is (a results file is parsed once per version, not at every save and check)."""
    try:
        st = Path(path).stat()
        key = (str(path), st.st_size, st.st_mtime_ns, field)
        if key not in _hashes:
            value = _field(json.loads(Path(path).read_text()), field)
            _hashes[key] = None if value is _MISSING else hashlib.sha256(
                json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    except (OSError, json.JSONDecodeError):
        return None
    return _hashes[key]


def _digest(path: Path, field: str | None) -> str | None:
    return field_sha256(path, field) if field else sha256(path)


def relative(path: str | Path) -> str | None:
    """``path`` relative to the repository, or None when it lies outside (a scratch cache is not an input to
    verify: a fresh clone does not have it)."""
    p = Path(path).resolve()
    try:
        return p.relative_to(_repo()).as_posix()
    except ValueError:
        return None


def shown(path: str | Path) -> str:
    """``path`` as a message or a stored file shows it: relative to the repository, else as given."""
    return relative(path) or str(path)


def record_input(path: str | Path, records: int | None = None, kind: str = "", damaged: list[str] | None = None,
                 field: str | None = None) -> None:
    """Note that this run read ``path`` (``records``: how many of its records it used; ``damaged``: "file:line: why"
    of each record that could not be read and was skipped; ``field``: the run read only this dotted field of a JSON
    file, and only its change makes the run stale). Files outside the repository are not recorded."""
    rel = relative(path)
    if rel is None or not Path(path).is_file():
        return
    key = f"{rel}#{field}" if field else rel
    with _lock:
        prev = _inputs.get(key)
        n = records if prev is None or prev.get("records") is None or records is None else max(prev["records"], records)
        _inputs[key] = {"path": rel, "records": n, "kind": kind or (prev or {}).get("kind", "")}
        if field:
            _inputs[key]["field"] = field
        bad = list(damaged or (prev or {}).get("damaged") or [])
        if bad:
            _inputs[key]["damaged"] = bad


def read_json_field(path: str | Path, field: str, kind: str = "", fix: str = ""):
    """The value at the dotted ``field`` of the committed JSON file ``path``, recorded as an input of this run with
    that field's digest (another notebook's results: its re-run changes its timings, not necessarily what we read).
    A missing file, a file that is not JSON or a missing field raises, naming the file, the field and ``fix``."""
    from toolkit.paths import portable
    p = Path(path) if Path(path).is_absolute() else _repo() / path
    hint = f": {fix}" if fix else ""
    if not p.is_file():
        raise FileNotFoundError(f"{portable(p)} is missing ({kind or 'input'} field {field!r}){hint}")
    try:
        doc = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{portable(p)}: not JSON ({e}){hint}") from e
    value = _field(doc, field)
    if value is _MISSING:
        raise ValueError(f"{portable(p)}: no field {field!r} ({kind or 'input'}){hint}")
    record_input(p, kind=kind, field=field)
    return value


def record_problem(message: str) -> None:
    """Note something this run lacked that makes its numbers no results (e.g. the replayed LLM answers of a cache
    directory ``TOOLKIT_LLM_CACHE`` points at, which does not hold the file): :func:`run_problems` lists it, so
    :meth:`toolkit.results.Recorder.save` refuses to save, and the message names the file or variable and the fix."""
    with _lock:
        _problems[message] = None


def run_problems() -> list[str]:
    """What makes this run's numbers untrustworthy as it stands: an input with skipped damaged records, an LLM client
    the environment switched to echo. :class:`toolkit.results.Recorder` refuses to save results while any holds."""
    with _lock:
        ins, llm = [dict(v) for v in _inputs.values()], [dict(v) for v in _llm.values()]
    out = [f"{r['path']}: {len(r['damaged'])} damaged record(s) skipped (first: {r['damaged'][0]}); restore the file "
           f"(git checkout -- {r['path']}) or regenerate the damaged records" for r in ins if r.get("damaged")]
    with _lock:
        lacked = list(_problems)
    return out + lacked + [m for m in problems([], llm)]


def record_llm(namespace: str, model: str, backend: str, mode: str, from_env: bool) -> None:
    """Note an LLM client: which backend answered ``namespace`` for ``model``, and whether the backend was chosen by
    the ``TOOLKIT_LLM_BACKEND`` environment variable rather than by the code or the configuration."""
    with _lock:
        _llm[(namespace, model, backend)] = {"namespace": namespace, "model": model, "backend": backend, "mode": mode,
                                              "from_env": bool(from_env)}


def record_uncommitted_vectors(namespace: str, n: int) -> None:
    """Note ``n`` distinct texts whose vectors (embedding namespace ``namespace``) this run looked up and the
    committed layer does not hold: on a fresh clone each would be encoded, so a standard replay must record none."""
    with _lock:
        _uncommitted[namespace] = _uncommitted.get(namespace, 0) + int(n)


def uncommitted_vectors() -> dict[str, int]:
    """{embedding namespace: texts looked up that no committed shard holds} for this run (every namespace looked up
    is listed, 0 when all were committed)."""
    with _lock:
        return dict(sorted(_uncommitted.items()))


def inputs() -> list[dict]:
    """Every input recorded so far with its sha256 as the file is now (a run that appended to a cache it read, a
    live generation, records the file it leaves behind)."""
    with _lock:
        rows = [dict(v) for _, v in sorted(_inputs.items())]
    root = _repo()
    for r in rows:
        p = root / r["path"]
        r["sha256"] = _digest(p, r.get("field")) if p.is_file() else None
    return rows


def llm_clients() -> list[dict]:
    with _lock:
        return [dict(v) for _, v in sorted(_llm.items())]


def reset() -> None:
    with _lock:
        _inputs.clear()
        _llm.clear()
        _uncommitted.clear()
        _problems.clear()


def problems(recorded: list[dict] | None, llm: list[dict] | None = None, root: Path | None = None) -> list[str]:
    """What is wrong with a run's recorded inputs now: a committed input that changed, is missing, or an LLM client
    the environment switched to the echo backend (fixed fake answers). Each message names the file or variable."""
    root = (root or _repo())
    out = []
    for r in recorded or []:
        p = root / r["path"]
        what = r.get("kind") or "input"
        if r.get("field"):
            what += f" (field {r['field']!r})"
        now = _digest(p, r.get("field")) if p.is_file() else None
        if r.get("damaged"):
            out.append(f"{r['path']}: the run skipped {len(r['damaged'])} damaged record(s) of this "
                       f"{what} (first: {r['damaged'][0]})")
        if r.get("sha256") is None:
            out.append(f"{r['path']}: the run read this {what} but it was gone when the results "
                       "were saved; re-run the notebook")
        elif not p.is_file():
            out.append(f"{r['path']}: the run read this {what}, and it is missing now "
                       f"(restore it: git checkout -- {r['path']})")
        elif now != r["sha256"]:
            out.append(f"{r['path']}: this {what} changed since the run (sha256 "
                       f"{r['sha256'][:12]} -> {(now or 'none')[:12]}); if the change is wanted, re-run the notebook, "
                       f"else restore it: git checkout -- {r['path']}")
    for c in llm or []:
        if c.get("backend") == "echo" and c.get("from_env"):
            out.append(f"LLM namespace {c['namespace']!r} was answered by the echo backend (TOOLKIT_LLM_BACKEND=echo): "
                       "its numbers are not results; unset TOOLKIT_LLM_BACKEND and re-run")
    return out
