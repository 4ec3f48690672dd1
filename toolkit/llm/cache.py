"""Persistent, append-only, replayable cache of LLM answers.

Key: (model id, full prompt, sampling parameters, sample index). A cache is a directory; answers of
one model for one *namespace* (a task such as ``reinvoke_intents``) live in one JSONL file::

    <root>/<namespace>/<model id>.jsonl

Each line is one JSON object, one of three record types (``t``):

``{"t": "p", "id": <prompt hash>, "kind": "chat"|"completion", "prompt": <text or messages>}``
    a prompt, stored once per file however many answers refer to it; or, when it starts with a
    stored prefix, ``{"t": "p", "id": ..., "kind": ..., "x": <prefix id>, "rest": <JSON suffix>}``
    (the prompt is ``json.loads(prefix text + rest)``);
or, for a chat that continues a stored chat (the same messages, then more turns: a multi-turn
    conversation's later calls), ``{"t": "p", "id": ..., "kind": "chat", "up": <stored prompt id>,
    "add": [<messages after it>]}`` (the prompt is the stored one's messages + ``add``), so each call
    of a conversation stores only its new turns;
``{"t": "x", "id": <prefix hash>, "text": <JSON-encoded prompt prefix>}``
    a shared prompt prefix (the fixed head of a template), stored once per file. It is created
    when two consecutive new prompts share at least 256 characters (cut at a line break), so a
    template's instructions and examples are not repeated in every prompt record;
``{"t": "c", "id": <config hash>, "model": <model id>, "sampling": {...}}``
    a model + sampling configuration, stored once per file;
``{"t": "a", "p": <prompt hash>, "c": <config hash>, "i": <sample index>, "text": <answer>, ...}``
    one answer, plus optional metadata: ``fin`` (finish reason), ``ntok`` (completion tokens), ``ptok`` /
    ``ctok`` (prompt tokens / of them already in the server's KV cache),
    ``ms`` (wall time of the call in milliseconds).

Records needed by an answer are written together with it in a single ``write`` on a file opened in
append mode, under an exclusive ``flock``, and flushed to disk before the next answer is accepted.
A run killed at any moment therefore loses at most the answers in flight; a partly written last
line is ignored when a writer reads the file back (and the next append starts on a fresh line). A replay
(``readonly``) reads under a shared lock, so a last line without its newline is a cut file: a damaged record, which
``verify`` reports and a results file refuses (:func:`toolkit.provenance.run_problems`). Hashes
are the first 16 hex digits of the sha256 of the record's canonical JSON.
"""
from __future__ import annotations

import fcntl
import logging
import hashlib
import json
import os
import re
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

log = logging.getLogger("toolkit.llm")

FORMAT = "toolkit.llm.cache/1"
MIN_PREFIX = 256


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


def prompt_user_text(prompt: Any) -> str:
    """A cached record's prompt as text: the string itself, or a chat's user turns joined by newlines
    (what a reader filters cached answers by, e.g. the prompt template's head)."""
    if isinstance(prompt, str):
        return prompt
    return "\n".join(m.get("content", "") for m in prompt or [] if isinstance(m, dict) and m.get("role") == "user")


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

    @staticmethod
    def path_for(root: str | Path, namespace: str, model_id: str) -> Path:
        """The file of ``model_id``'s answers in ``namespace`` (without reading it)."""
        return Path(root) / safe_name(namespace) / (safe_name(model_id) + ".jsonl")

    def __init__(self, root: str | Path, namespace: str, model_id: str, readonly: bool = False):
        self.root = Path(root)
        self.namespace = namespace
        self.model_id = model_id
        self.readonly = readonly
        for what, value in (("namespace", namespace), ("model id", model_id)):
            if not value or safe_name(value).startswith("."):
                raise ValueError(f"LLM cache {what} {value!r} must be a plain name (no leading '.', not '..'): "
                                 f"it becomes a directory or file under {self.root}")
        self.path = self.path_for(self.root, namespace, model_id)
        self._lock = threading.Lock()
        self._answers: dict[tuple[str, str, int], CachedAnswer] = {}
        self._prompts: dict[str, Any] = {}
        self._configs: dict[str, dict] = {}
        self._prefixes: dict[str, str] = {}
        self._last_encoded: str | None = None
        self._offset = 0
        self._line = 0
        self.skipped_lines = 0
        self.damaged: list[str] = []          # "file:line: why" for every record that could not be read
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
            if self.readonly:
                # writers append whole records under LOCK_EX: under LOCK_SH a line without its newline is not one
                # in flight but a cut one (a truncated committed file), damage to report, not a tail to re-read
                fcntl.flock(f.fileno(), fcntl.LOCK_SH)
            f.seek(self._offset)
            data = f.read()
        if not data:
            return
        end = data.rfind(b"\n") + 1       # only complete lines; a writer's partial tail is re-read later
        lines = data[:end].split(b"\n")[:-1]
        if self.readonly and end < len(data):
            lines.append(data[end:])
            end = len(data)
        for raw in lines:
            self._line += 1
            if not raw.strip():
                continue
            try:
                self._ingest(json.loads(raw))
            except CacheCorrupt:
                raise
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
                # a line cut by a killed writer, or a damaged record: skip it, say where, serve the rest
                self.skipped_lines += 1
                why = "not JSON" if isinstance(e, json.JSONDecodeError) else f"bad record ({type(e).__name__}: {e})"
                if not raw.endswith(b"}") and raw is lines[-1] and self.readonly:
                    why = "its last line is cut (no newline at the end of the file)"
                self.damaged.append(f"{self.path}:{self._line}: {why}")
                log.warning("LLM cache %s:%d: skipped a damaged line (%s)", self.path, self._line, why)
        self._offset += end
        from toolkit import provenance
        provenance.record_input(self.path, records=len(self._answers), kind="LLM response cache", damaged=self.damaged)

    def _ingest(self, rec: dict) -> None:
        if not isinstance(rec, dict):
            raise TypeError(f"a record must be a JSON object, got {type(rec).__name__}")
        t = rec.get("t")
        if t == "a":
            key = (rec["c"], rec["p"], int(rec["i"]))
            if key not in self._answers:           # first answer wins (a raced duplicate is ignored)
                meta = {k: v for k, v in rec.items() if k not in ("t", "p", "c", "i", "text")}
                self._answers[key] = CachedAnswer(rec["text"], meta)
        elif t == "p":
            if "up" in rec:
                if rec["up"] not in self._prompts:
                    raise KeyError(f"prompt {rec.get('id')!r} continues prompt {rec['up']!r}, which no readable line defines")
                if not isinstance(rec["add"], list):
                    raise TypeError(f"prompt {rec.get('id')!r}: 'add' must be a list of messages")
                prompt = self._prompts[rec["up"]][1] + rec["add"]
                enc = _encode(prompt)
            elif "x" in rec:
                if rec["x"] not in self._prefixes:
                    raise KeyError(f"prompt {rec.get('id')!r} refers to prefix {rec['x']!r}, which no readable line defines")
                enc = self._prefixes[rec["x"]] + rec["rest"]
                prompt = json.loads(enc)
            else:
                prompt = rec["prompt"]
                enc = _encode(prompt)
            self._prompts[rec["id"]] = (rec.get("kind", "chat"), prompt)
            self._last_encoded = enc
        elif t == "x":
            self._prefixes[rec["id"]] = rec["text"]
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
                "generation_seconds": round(sum(ms) / 1000.0, 1), "damaged_lines": list(self.damaged)}

    # -- writing ---------------------------------------------------------------------------
    def put(self, kind: str, prompt: Any, sampling: dict, index: int, text: str, _sync: bool = True,
            **meta: Any) -> None:
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
                    lines += self._prompt_records(pid, kind, prompt)
                if cid not in self._configs:
                    lines.append({"t": "c", "id": cid, "model": self.model_id, "sampling": sampling})
                rec = {"t": "a", "p": pid, "c": cid, "i": index, "text": text}
                rec.update({k: v for k, v in meta.items() if v is not None})
                lines.append(rec)
                blob = "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in lines)
                repaired = bool(size) and not self._ends_with_newline(fd, size)
                if repaired:
                    blob = "\n" + blob             # repair a line cut by a killed writer
                os.write(fd, blob.encode("utf-8"))
                if _sync:
                    os.fsync(fd)
                for r in lines:
                    self._ingest(r)
                self._line += len(lines) + repaired
                self._offset = os.fstat(fd).st_size
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)

    def _prompt_records(self, pid: str, kind: str, prompt: Any) -> list[dict]:
        """The prompt record: a chat continuing a stored chat as its new messages, else prefix-compressed when
        possible (plus a new prefix record if needed)."""
        up = self._continued(kind, prompt)
        if up is not None:
            return [{"t": "p", "id": pid, "kind": kind, "up": up, "add": prompt[len(self._prompts[up][1]):]}]
        enc = _encode(prompt)
        best = max(((xid, t) for xid, t in self._prefixes.items() if enc.startswith(t)),
                   key=lambda kv: len(kv[1]), default=None)
        out: list[dict] = []
        if best is None and self._last_encoded is not None:
            n = _common_prefix_len(enc, self._last_encoded)
            cut = enc.rfind("\\n", 0, n)                 # end the prefix at an (escaped) line break
            n = cut + 2 if cut >= MIN_PREFIX else n
            if n >= MIN_PREFIX:
                text = enc[:n]
                best = (short_hash(text), text)
                out.append({"t": "x", "id": best[0], "text": text})
        if best is not None:
            out.append({"t": "p", "id": pid, "kind": kind, "x": best[0], "rest": enc[len(best[1]):]})
        else:
            out.append({"t": "p", "id": pid, "kind": kind, "prompt": prompt})
        return out

    def _continued(self, kind: str, prompt: Any) -> str | None:
        """The id of the longest stored chat whose messages start ``prompt`` (None: none, or not a chat)."""
        if kind != "chat" or not isinstance(prompt, list):
            return None
        for n in range(len(prompt) - 1, 0, -1):
            pid = prompt_id(kind, prompt[:n])
            if pid in self._prompts and self._prompts[pid][0] == kind:
                return pid
        return None

    def compact(self) -> dict:
        """Rewrite the file in the current format (prefix-compressed prompts, no cut lines,
        answers in their original order), atomically. Do not run while another process writes."""
        before = self.path.stat().st_size if self.path.is_file() else 0
        self.refresh()
        with self._lock:
            recs = list(self._answers.items())
            prompts, configs = dict(self._prompts), dict(self._configs)
        fd, tmp = tempfile.mkstemp(prefix=self.path.name + ".", suffix=".compact", dir=self.path.parent)
        os.close(fd)
        os.unlink(tmp)
        tmp_dir = Path(tmp)
        tmp_dir.mkdir()
        try:
            new = ResponseCache(tmp_dir, self.namespace, self.model_id)
            for (cid, pid, i), ans in recs:
                kind, prompt = prompts[pid]
                new.put(kind, prompt, configs[cid]["sampling"], i, ans.text, _sync=False, **ans.meta)
            with open(new.path, "rb") as f:
                os.fsync(f.fileno())
            os.replace(new.path, self.path)
        finally:
            for f in tmp_dir.rglob("*"):
                if f.is_file():
                    f.unlink()
            for d in sorted(tmp_dir.rglob("*"), reverse=True):
                d.rmdir()
            tmp_dir.rmdir()
        fresh = ResponseCache(self.root, self.namespace, self.model_id, readonly=self.readonly)
        self.__dict__.update(fresh.__dict__)
        return {"file": str(self.path), "bytes_before": before, "bytes_after": self.path.stat().st_size,
                "answers": len(self._answers)}

    @staticmethod
    def _ends_with_newline(fd: int, size: int) -> bool:
        return os.pread(fd, 1, size - 1) == b"\n"


def _encode(prompt: Any) -> str:
    return json.dumps(prompt, ensure_ascii=False, separators=(",", ":"))


def _common_prefix_len(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    step = 64
    while i < n and a[i:i + step] == b[i:i + step]:
        i += step
    while i < n and a[i] == b[i]:
        i += 1
    return min(i, n)
