"""Are the committed replayable inputs whole? ``python -m toolkit verify`` checks them as it checks the raw data.

What the standard profile replays instead of recomputing must be readable record by record:

- LLM response caches ``data/llm_cache/<namespace>/<model>.jsonl``: every line a record (no cut or damaged line),
  the header's model the file's;
- feedback traces ``data/feedback_traces/*.jsonl``: one well-formed line per instruction (no qid twice), a readable
  ``.meta.json`` (itself listed: its ``wall_s`` and sizes are replayed), and as many lines as the meta says when it
  calls the trace complete;
- ToolRerank score caches ``data/score_cache/toolrerank/*.json.gz``: a gzip JSON with its sets; the reranker-alone
  files (``*-alone*-<key>.json.gz``, :mod:`toolkit.toolrerank.alone`'s own format) readable by ``alone.load``;
- query-generation histories and training logs ``data/llm_cache/querygen_*/*.json``: JSON objects;
- every such file git tracks must exist (``git ls-files``): a deleted committed file is "missing", not unseen.
- checkpoints ``data/checkpoints/<name>/``: each MANIFEST.json against its files (:func:`toolkit.checkpoints.verify`);

    from toolkit.committed import verify_committed
    verify_committed()        # {"data/llm_cache/reinvoke_hyde/...jsonl": "ok", ...}; anything else says what is wrong
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

from toolkit.paths import PROJECT_DATA
from toolkit.provenance import shown



def _llm_cache(p: Path) -> str:
    from toolkit.llm.cache import ResponseCache
    try:
        head = json.loads(p.open(encoding="utf-8").readline())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        return f"its first line is not a cache header ({e})"
    model = head.get("model") if isinstance(head, dict) else None
    if not model:
        return "its first line is not a cache header (no model)"
    c = ResponseCache(p.parent.parent, p.parent.name, model, readonly=True)
    if c.path.resolve() != p.resolve():
        return f"its header names model {model!r}, whose cache file is {c.path.name}"
    try:
        c.refresh()
    except Exception as e:       # a corrupt record the cache refuses to serve (CacheCorrupt) or an unreadable file
        return f"unreadable ({type(e).__name__}: {e})"
    if c.damaged:
        return f"{len(c.damaged)} damaged line(s), first {c.damaged[0]}"
    return "ok"


def _trace(p: Path) -> str:
    from toolkit.feedback.experiment import load_meta, load_traces
    try:
        traces = load_traces(p)
        meta = load_meta(p)
    except ValueError as e:
        return str(e)
    want = meta.get("instructions") if meta.get("complete") else None
    if want is not None and want != len(traces):
        return f"its meta calls it complete with {want} instructions, the file holds {len(traces)}"
    return "ok"


def _alone(p: Path) -> str:
    from toolkit.toolrerank import alone
    try:
        _ids, samples, scores, _meta = alone.load(p, record=False)
    except ValueError as e:
        return str(e).removeprefix(f"{p}: ")
    if not scores or not samples:
        return "holds no reranker-alone scores"
    return "ok"


def _meta(p: Path) -> str:
    shape = _json_object(p)
    if shape != "ok":
        return shape
    trace = p.with_name(p.name.removesuffix(".meta.json") + ".jsonl")
    return "ok" if trace.is_file() else f"the meta of a trace that is missing ({trace.name})"


def _score_cache(p: Path) -> str:
    if "-alone" in p.name:      # alone.path_for: <profile>-alone[-<role>]-<key>.json.gz, another format
        return _alone(p)
    try:
        with gzip.open(p, "rt") as f:
            data = json.load(f)
    except (OSError, EOFError, ValueError, UnicodeDecodeError) as e:
        return f"damaged ({type(e).__name__}: {e})"
    if not isinstance(data, dict) or not isinstance(data.get("sets"), dict) or not data["sets"]:
        return "holds no scored sets"
    return "ok"


def _json_object(p: Path) -> str:
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        return f"not JSON ({e})"
    return "ok" if isinstance(doc, dict) else f"not a JSON object ({type(doc).__name__})"


_PATTERNS = ("llm_cache/*/*.jsonl", "llm_cache/querygen_*/*.json", "feedback_traces/*.jsonl",
             "feedback_traces/*.meta.json", "score_cache/toolrerank/*.json.gz", "embeddings/*", "embeddings/*/*")


def tracked(root: Path) -> list[Path] | None:
    """The files git tracks under ``root`` (None: not a git checkout, or no ``git`` on PATH: a tarball)."""
    import subprocess
    try:
        r = subprocess.run(["git", "ls-files", "-z", "--", "."], cwd=root, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if r.returncode != 0:
        return None
    return [root / f for f in r.stdout.decode("utf-8", "replace").split("\0") if f]


def _replayable(rel: str) -> bool:
    from fnmatch import fnmatch
    name = rel.rsplit("/", 1)[-1]
    return not name.startswith("smoke-") and any(fnmatch(rel, pat) for pat in _PATTERNS)


def verify_committed(root: Path | None = None) -> dict[str, str]:
    """``{path: "ok" | what is wrong}`` for every committed replayable input under ``root`` (default ``data/``);
    a file git tracks that is gone from the work tree is ``"missing (restore it: git checkout -- <path>)"``."""
    root = Path(root or PROJECT_DATA)
    out: dict[str, str] = {}
    for p in tracked(root) or []:
        if not p.exists() and _replayable(p.relative_to(root).as_posix()):
            out[shown(p)] = f"missing: git tracks it, the work tree lacks it (restore it: git checkout -- {shown(p)})"
    for p in sorted((root / "llm_cache").glob("*/*.jsonl")):
        out[shown(p)] = _llm_cache(p)
    for p in sorted((root / "llm_cache").glob("querygen_*/*.json")):
        out[shown(p)] = _json_object(p)
    for p in sorted((root / "feedback_traces").glob("*.jsonl")):
        if not p.name.startswith("smoke-"):
            out[shown(p)] = _trace(p)
    for p in sorted((root / "feedback_traces").glob("*.meta.json")):
        if not p.name.startswith("smoke-"):
            out[shown(p)] = _meta(p)
    for p in sorted((root / "score_cache" / "toolrerank").glob("*.json.gz")):
        if not p.name.startswith("smoke-"):
            out[shown(p)] = _score_cache(p)
    from toolkit.retrieval.embedding_cache import verify_committed_embeddings
    out.update({k: v for k, v in verify_committed_embeddings(root / "embeddings").items() if k not in out})
    from toolkit.checkpoints import verify_store
    out.update({k: v for k, v in verify_store(root / "checkpoints").items() if k not in out})
    return dict(sorted(out.items()))
