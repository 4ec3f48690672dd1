"""Persistent, append-only, replayable cache of LLM answers.

Key: (model id, full prompt, sampling parameters, sample index). A cache is a directory; answers of
one model for one *namespace* (a task such as ``reinvoke_intents``) live in one JSONL file::

    <root>/<namespace>/<model id>.jsonl

Each line is one JSON object, one of three record types (``t``):

``{"t": "p", "id": <prompt hash>, "kind": "chat"|"completion", "prompt": <text or messages>}``
    a prompt, stored once per file however many answers refer to it;
``{"t": "c", "id": <config hash>, "model": <model id>, "sampling": {...}}``
    a model + sampling configuration, stored once per file;
``{"t": "a", "p": <prompt hash>, "c": <config hash>, "i": <sample index>, "text": <answer>, ...}``
    one answer, plus optional metadata: ``fin`` (finish reason), ``ntok`` (completion tokens),
    ``ms`` (wall time of the call in milliseconds).

Records needed by an answer are written together with it in a single ``write`` on a file opened in
append mode, under an exclusive ``flock``, and flushed to disk before the next answer is accepted.
A run killed at any moment therefore loses at most the answers in flight; a partly written last
line is ignored when the file is read back (and the next append starts on a fresh line). Hashes
are the first 16 hex digits of the sha256 of the record's canonical JSON.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

FORMAT = "toolkit.llm.cache/1"


def canonical(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def short_hash(obj: Any) -> str:
    data = obj if isinstance(obj, str) else canonical(obj)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:16]


def prompt_id(kind: str, prompt: Any) -> str:
    return short_hash({"kind": kind, "prompt": prompt})


def config_id(model: str, sampling: dict) -> str:
    return short_hash({"model": model, "sampling": sampling})


def safe_name(name: str) -> str:
    """A file-name-safe version of a model id or namespace (``/`` and odd characters -> ``__``/``_``)."""
    name = name.replace("/", "__").replace(":", "_")
    return re.sub(r"[^A-Za-z0-9._+=-]", "_", name) or "_"


@dataclass
class CachedAnswer:
    text: str
    meta: dict


class CacheCorrupt(RuntimeError):
    pass


class ResponseCache:
    """The answers of one model in one namespace: ``<root>/<namespace>/<model>.jsonl``.

    ``get``/``put`` are thread-safe; several processes may append to the same file (``flock``).
    ``readonly=True`` never creates or writes a file (replay).
    """

    def __init__(self, root: str | Path, namespace: str, model_id: str, readonly: bool = False):
        self.root = Path(root)
        self.namespace = namespace
        self.model_id = model_id
        self.readonly = readonly
        self.path = self.root / safe_name(namespace) / (safe_name(model_id) + ".jsonl")
        self._lock = threading.Lock()
        self._answers: dict[tuple[str, str, int], CachedAnswer] = {}
        self._prompts: dict[str, Any] = {}
        self._configs: dict[str, dict] = {}
        self._offset = 0
        self.skipped_lines = 0
        self.refresh()

    # -- reading ---------------------------------------------------------------------------
    def refresh(self) -> None:
        """Read records appended since the last read (by this or another process)."""
        with self._lock:
            self._read_new()

    def _read_new(self) -> None:
        if not self.path.is_file():
            return
        with open(self.path, "rb") as f:
            f.seek(self._offset)
            data = f.read()
        if not data:
            return
        end = data.rfind(b"\n") + 1       # only complete lines; a partial tail is re-read later
        for raw in data[:end].splitlines():
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw)
            except json.JSONDecodeError:
                self.skipped_lines += 1    # a line cut by a killed writer, followed by a repair newline
                continue
            self._ingest(rec)
        self._offset += end

    def _ingest(self, rec: dict) -> None:
        t = rec.get("t")
        if t == "a":
            key = (rec["c"], rec["p"], int(rec["i"]))
            if key not in self._answers:           # first answer wins (a raced duplicate is ignored)
                meta = {k: v for k, v in rec.items() if k not in ("t", "p", "c", "i", "text")}
                self._answers[key] = CachedAnswer(rec["text"], meta)
        elif t == "p":
            self._prompts[rec["id"]] = (rec.get("kind", "chat"), rec["prompt"])
        elif t == "c":
            self._configs[rec["id"]] = rec
        elif t == "h":
            if rec.get("format") != FORMAT:
                raise CacheCorrupt(f"{self.path}: unknown cache format {rec.get('format')!r}")

    def get(self, kind: str, prompt: Any, sampling: dict, index: int) -> CachedAnswer | None:
        key = (config_id(self.model_id, sampling), prompt_id(kind, prompt), index)
        with self._lock:
            return self._answers.get(key)

    def __contains__(self, item: tuple) -> bool:
        kind, prompt, sampling, index = item
        return self.get(kind, prompt, sampling, index) is not None

    def __len__(self) -> int:
        return len(self._answers)

    def answers(self) -> Iterator[dict]:
        """Every stored answer with its prompt and sampling (for inspection and tests)."""
        with self._lock:
            items = list(self._answers.items())
        for (cid, pid, i), ans in items:
            kind, prompt = self._prompts.get(pid, (None, None))
            cfg = self._configs.get(cid, {})
            yield {"kind": kind, "prompt": prompt, "model": cfg.get("model"), "sampling": cfg.get("sampling"),
                   "index": i, "text": ans.text, **ans.meta}

    def stats(self) -> dict:
        size = self.path.stat().st_size if self.path.is_file() else 0
        ms = [a.meta.get("ms", 0) for a in self._answers.values()]
        return {"file": str(self.path), "bytes": size, "answers": len(self._answers),
                "prompts": len(self._prompts), "configs": len(self._configs),
                "generation_seconds": round(sum(ms) / 1000.0, 1)}

    # -- writing ---------------------------------------------------------------------------
    def put(self, kind: str, prompt: Any, sampling: dict, index: int, text: str, **meta: Any) -> None:
        if self.readonly:
            raise PermissionError(f"cache {self.path} is read-only (replay)")
        if not isinstance(text, str):
            raise TypeError(f"answer must be str, got {type(text).__name__}")
        pid, cid = prompt_id(kind, prompt), config_id(self.model_id, sampling)
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                self._read_new()                   # pick up what other writers appended
                key = (cid, pid, index)
                if key in self._answers:
                    return
                lines = []
                size = os.fstat(fd).st_size
                if size == 0:
                    lines.append({"t": "h", "format": FORMAT, "namespace": self.namespace, "model": self.model_id})
                if pid not in self._prompts:
                    lines.append({"t": "p", "id": pid, "kind": kind, "prompt": prompt})
                if cid not in self._configs:
                    lines.append({"t": "c", "id": cid, "model": self.model_id, "sampling": sampling})
                rec = {"t": "a", "p": pid, "c": cid, "i": index, "text": text}
                rec.update({k: v for k, v in meta.items() if v is not None})
                lines.append(rec)
                blob = "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in lines)
                if size and not self._ends_with_newline(fd, size):
                    blob = "\n" + blob             # repair a line cut by a killed writer
                os.write(fd, blob.encode("utf-8"))
                os.fsync(fd)
                for r in lines:
                    self._ingest(r)
                self._offset = os.fstat(fd).st_size
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)

    @staticmethod
    def _ends_with_newline(fd: int, size: int) -> bool:
        return os.pread(fd, 1, size - 1) == b"\n"
