"""Raw data files: resolution in the data directory, checksum verification, download.

The manifest is ``data/SOURCES.json`` (a copy of ``shared/data/SOURCES.json``): for every file
its local path, public URL at a pinned commit, sha256 and size. ``python -m toolkit fetch``
downloads what is missing into ``data/raw/`` (or ``$TOOLKIT_DATA``) and verifies it.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import urllib.error
import urllib.request
from functools import lru_cache
from pathlib import Path

from ..paths import PROJECT_DATA, data_dir

MANIFEST = PROJECT_DATA / "SOURCES.json"


class DataFileError(FileNotFoundError):
    """A raw data file is missing or corrupt; the message says how to get it."""


@lru_cache(maxsize=1)
def manifest() -> dict[str, dict]:
    with open(MANIFEST, encoding="utf-8") as f:
        return json.load(f)


def _by_local_path() -> dict[str, dict]:
    return {e["local_path"]: {"name": n, **e} for n, e in manifest().items()}


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


@lru_cache(maxsize=None)
def _verified(path: str, expected: str) -> bool:
    return sha256_file(Path(path)) == expected


def how_to_get(entry: dict | None) -> str:
    """The advice for one manifest entry: fetch it, or (derived files have no URL) copy it."""
    if entry and entry.get("url"):
        return f"run `python -m toolkit fetch --only {entry['name']}`"
    return ("copy it from the shared data folder: it is derived from other files and has no download URL "
            "(see shared/data/README.md)")


def data_file(local_path: str, verify: bool = True) -> Path:
    """Absolute path of a raw data file, e.g. ``data_file("toole/plugin_des.json")``.

    Raises :class:`DataFileError` naming the file and the command that fetches it when the file
    is missing or its sha256 differs from the manifest (checked once per process).
    """
    root = data_dir()
    path = root / local_path
    entry = _by_local_path().get(local_path)
    if not path.is_file():
        raise DataFileError(f"data file {path} is missing (data directory {root}; set TOOLKIT_DATA "
                            f"to point elsewhere). To get it: {how_to_get(entry)}.")
    if verify and entry is not None and not _verified(str(path), entry["sha256"]):
        raise DataFileError(f"data file {path} is corrupt: its sha256 differs from {MANIFEST.name} "
                            f"({entry['sha256'][:12]}…). Delete it, then {how_to_get(entry)}.")
    return path


def verify_all() -> dict[str, str]:
    """{name: 'ok' | 'missing' | 'corrupt'} for every manifest entry."""
    out = {}
    for name, e in manifest().items():
        p = data_dir() / e["local_path"]
        out[name] = "missing" if not p.is_file() else ("ok" if sha256_file(p) == e["sha256"] else "corrupt")
    return out


def fetch(only: list[str] | None = None, dest: Path | None = None, force: bool = False,
          skipped: list[str] | None = None) -> list[Path]:
    """Download manifest files from their public URLs into ``dest`` (default: the data directory)
    and verify their sha256. Files already present and valid are left alone. Derived files (no URL)
    are an error when named in ``only``; otherwise they are listed in ``skipped`` with the advice.
    A failed download leaves nothing behind and names the file, the URL and the cause."""
    dest = Path(dest or data_dir())
    names = only or list(manifest())
    unknown = [n for n in names if n not in manifest()]
    if unknown:
        raise KeyError(f"unknown data file {unknown[0]!r}; names are the keys of {MANIFEST}")
    done = []
    for name in names:
        e = manifest()[name]
        target = dest / e["local_path"]
        if target.is_file() and not force and sha256_file(target) == e["sha256"]:
            done.append(target)
            continue
        if not e.get("url"):
            msg = f"{name} ({e['local_path']}): {how_to_get(e)}"
            if only:
                raise DataFileError(msg)
            if skipped is not None:
                skipped.append(msg)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}.", suffix=".part",
                                               delete=False).name)
        try:
            try:
                with urllib.request.urlopen(e["url"], timeout=60) as r, open(tmp, "wb") as out:
                    shutil.copyfileobj(r, out)
            except (urllib.error.URLError, OSError) as err:
                reason = getattr(err, "reason", err)
                raise DataFileError(f"could not download {name} from {e['url']} ({reason}). Without a network, "
                                    f"copy {e['local_path']} from the shared data folder into {dest} or set "
                                    f"TOOLKIT_DATA to a directory that has it.") from None
            got = sha256_file(tmp)
            if got != e["sha256"]:
                raise DataFileError(f"download of {name} from {e['url']} has sha256 {got}, expected {e['sha256']}")
            tmp.replace(target)
        finally:
            tmp.unlink(missing_ok=True)          # no debris: the partial file never stays behind
        done.append(target)
    return done
