"""Are the committed replayable inputs whole? ``python -m toolkit verify`` checks them as it checks the raw data.

What the standard profile replays instead of recomputing (DESIGN §8) must be readable record by record:

- LLM response caches ``data/llm_cache/<namespace>/<model>.jsonl``: every line a record (no cut or damaged line),
  the header's model the file's;
- feedback traces ``data/feedback_traces/*.jsonl``: one well-formed line per instruction (no qid twice), a readable
  ``.meta.json``, and as many lines as the meta says when it calls the trace complete;
- ToolRerank score caches ``data/score_cache/toolrerank/*.json.gz``: a gzip JSON with its sets;
- query-generation histories and training logs ``data/llm_cache/querygen_*/*.json``: JSON objects;
- checkpoints ``data/checkpoints/<name>/``: each MANIFEST.json against its files (:func:`toolkit.checkpoints.verify`).

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


def _score_cache(p: Path) -> str:
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


def verify_committed(root: Path | None = None) -> dict[str, str]:
    """``{path: "ok" | what is wrong}`` for every committed replayable input under ``root`` (default ``data/``)."""
    root = Path(root or PROJECT_DATA)
    out: dict[str, str] = {}
    for p in sorted((root / "llm_cache").glob("*/*.jsonl")):
        out[shown(p)] = _llm_cache(p)
    for p in sorted((root / "llm_cache").glob("querygen_*/*.json")):
        out[shown(p)] = _json_object(p)
    for p in sorted((root / "feedback_traces").glob("*.jsonl")):
        if not p.name.startswith("smoke-"):
            out[shown(p)] = _trace(p)
    for p in sorted((root / "score_cache" / "toolrerank").glob("*.json.gz")):
        if not p.name.startswith("smoke-"):
            out[shown(p)] = _score_cache(p)
    from toolkit.retrieval.embedding_cache import verify_committed_embeddings
    out.update(verify_committed_embeddings(root / "embeddings"))
    from toolkit.checkpoints import verify_store
    out.update(verify_store(root / "checkpoints"))
    return out
