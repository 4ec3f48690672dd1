"""Where things live: the repository, the raw data directory, the cache directory.

- data directory: ``$TOOLKIT_DATA``; else ``<repo>/../shared/data`` when it exists; else ``<repo>/data/raw``.
- cache directory (joined model weights, embeddings): ``$TOOLKIT_CACHE``; else ``~/.cache/toolret-repro``.
"""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROJECT_DATA = REPO / "data"          # project-owned: SOURCES.json copy, paper numbers, LLM caches
RESULTS = REPO / "results"
FIGURES = REPO / "figures"
NOTEBOOKS = REPO / "notebooks"


def portable(path) -> str:
    """``path`` as recorded in committed files: relative to the repository when inside it, ``~/...`` when inside
    the home directory, else unchanged. A model name (``sentence-transformers/all-MiniLM-L6-v2``) is returned as
    is; an absolute ``/work/main/...`` would name one machine's clone."""
    p = Path(path)
    if not p.is_absolute():
        return str(path)
    for root, shown in ((REPO, ""), (Path.home(), "~/")):
        try:
            return shown + str(p.resolve().relative_to(root.resolve()))
        except ValueError:
            pass
    return str(path)


def results_dir() -> Path:
    """Where notebooks write ``<notebook>/<profile>.json``: ``$TOOLKIT_RESULTS`` or ``<repo>/results``."""
    return Path(os.environ.get("TOOLKIT_RESULTS", RESULTS)).expanduser()


def figures_dir() -> Path:
    """Where notebooks write figures: ``$TOOLKIT_FIGURES`` or ``<repo>/figures``."""
    return Path(os.environ.get("TOOLKIT_FIGURES", FIGURES)).expanduser()


def data_dir() -> Path:
    """Directory holding the raw public data files (never committed)."""
    env = os.environ.get("TOOLKIT_DATA")
    if env:
        return Path(env).expanduser().resolve()
    shared = REPO.parent / "shared" / "data"
    if shared.is_dir():
        return shared
    return PROJECT_DATA / "raw"


def cache_dir() -> Path:
    """Directory for derived, re-creatable artefacts (joined weights, embedding cache)."""
    env = os.environ.get("TOOLKIT_CACHE")
    path = Path(env or Path.home() / ".cache" / "toolret-repro").expanduser()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError, PermissionError) as e:
        what = f"TOOLKIT_CACHE={env!r}" if env else f"the cache directory {path}"
        raise NotADirectoryError(f"{what} cannot be used as a directory ({type(e).__name__}: {e}); "
                                 + ("point TOOLKIT_CACHE at a writable directory" if env else "unset it or fix it")) from None
    return path
