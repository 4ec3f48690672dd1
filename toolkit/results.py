"""What a notebook records: ``results/<notebook>/<profile>.json``.

>>> rec = Recorder("01_baselines", profile="smoke", parameters={...})
>>> rec.add(paper="reinvoke", table="1", dataset="toole-single", method="BM25", metric="ndcg@5",
...         value=0.3712, n_queries=20550)
>>> rec.save()

Each cell is keyed by (paper, table, dataset, method, metric) — the same key as the transcribed
paper numbers in ``data/paper_numbers/`` — so ``python -m toolkit compare`` can join them.
"""
from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from . import devices, provenance
from .paths import REPO, figures_dir, results_dir

PROFILES = ("smoke", "standard", "paper")
_VERSIONED = ("torch", "sentence-transformers", "transformers", "bm25s", "rank-bm25", "faiss-cpu",
              "numpy", "papermill", "xllamacpp")


def check_profile(profile: str) -> str:
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
    return profile


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in _VERSIONED:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def git_revision() -> str:
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True,
                             timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return rev + ("-dirty" if dirty else "") if rev else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


# environment variables that change which LLM answers a run replays (recorded with the results when set; the raw
# data directory, TOOLKIT_DATA, is not: its files are sha256-checked against data/SOURCES.json wherever they are)
_ENVIRONMENT = ("TOOLKIT_LLM_CACHE", "TOOLKIT_LLM_BACKEND")


def strict_json(obj):
    """``obj`` with every non-finite float (NaN: a value the run could not compute, e.g. a mean over no
    instruction; +-inf) replaced by None, written as ``null``: strict JSON, which :func:`toolkit.check.results_doc`
    reads back as NaN for a cell's value."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: strict_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict_json(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):     # numpy scalars
        try:
            return strict_json(obj.item())
        except (TypeError, ValueError):
            return obj
    return obj


@dataclass
class Recorder:
    notebook: str
    profile: str
    parameters: dict = field(default_factory=dict)
    cells: list[dict] = field(default_factory=list)
    extra: dict = field(default_factory=dict)
    started: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        check_profile(self.profile)
        from . import runs
        runs.activate(self)          # the runs the evaluation points hand to toolkit.runs.keep are saved with us

    def add(self, *, paper: str, table: str, dataset: str, method: str, metric: str, value: float,
            n_queries: int | None = None, note: str = "", ours_only: bool = False, timing: bool | None = None) -> None:
        """One result cell under the paper's key. ``ours_only``: a row the paper has no counterpart for
        (e.g. our second LLM backbone in a table of backbones); ``compare`` lists it apart from naming slips.
        ``timing``: the value is a wall-clock measurement of this run (``check`` only asks it to be finite and >= 0),
        or, False, a number replayed from a committed input that merely counts seconds (checked like any result);
        None: a metric named ``*seconds*`` is a timing (:func:`toolkit.check.is_timing`)."""
        key = (paper, str(table), dataset, method, metric)
        if any((c["paper"], c["table"], c["dataset"], c["method"], c["metric"]) == key for c in self.cells):
            raise ValueError(f"cell {key} recorded twice")
        self.cells.append({"paper": paper, "table": str(table), "dataset": dataset, "method": method,
                           "metric": metric, "value": float(value), "n_queries": n_queries, "note": note})
        if ours_only:
            self.cells[-1]["ours_only"] = True
        if timing is not None:
            self.cells[-1]["timing"] = bool(timing)

    @property
    def path(self) -> Path:
        return results_dir() / self.notebook / f"{self.profile}.json"

    def figure_dir(self) -> Path:
        d = figures_dir() / self.notebook
        d.mkdir(parents=True, exist_ok=True)
        return d

    def sweep_figures(self) -> list[str]:
        """The figure files of this profile this run wrote (``figures/<notebook>/*_<profile>.*``, modified since the
        Recorder was created), in name order; this profile's other figure files are stale (an earlier run made
        them, this one does not) and are deleted, so every figure in the tree is one the current code makes."""
        d = figures_dir() / self.notebook
        made = []
        for f in sorted(d.glob(f"*_{self.profile}.*")) if d.is_dir() else []:
            if f.stat().st_mtime >= self.started - 1:
                made.append(f.name)
            else:
                f.unlink()
        return made

    def save(self) -> Path:
        bad = provenance.run_problems()
        if bad:
            # numbers from a damaged input or a fake LLM are not results: keep the last good results file
            raise ValueError(f"{self.notebook} ({self.profile}): results not saved, the run read damaged or wrong "
                             "inputs:\n  " + "\n  ".join(bad))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.extra["figures"] = self.sweep_figures()
        payload = {"notebook": self.notebook, "profile": self.profile, "parameters": self.parameters,
                   "versions": versions(), "device": devices.describe(), "git_revision": git_revision(),
                   "seconds": round(time.time() - self.started, 1), "cells": self.cells, **self.extra,
                   # what the numbers rest on: committed inputs with their sha256, and the LLM backends (check verifies)
                   "inputs": provenance.inputs(), "llm": provenance.llm_clients(),
                   # texts whose vectors no committed shard holds (a fresh clone encodes them): 0 under standard
                   "embeddings_not_committed": provenance.uncommitted_vectors()}
        env = {k: os.environ[k] for k in _ENVIRONMENT if os.environ.get(k)}
        if env:     # a variable that moved what the run read or wrote: the results say so
            payload["environment"] = env
        stand_ins = os.environ.get("TOOLKIT_STAND_INS")          # set by `python -m toolkit paper-dry` (toolkit.paper)
        if stand_ins:
            payload["stand_ins"] = json.loads(stand_ins)
        tmp = self.path.with_suffix(".tmp")
        # strict JSON (RFC 8259 has no NaN/Infinity; jq, browsers and json.loads(parse_constant=...) reject them)
        tmp.write_text(json.dumps(strict_json(payload), indent=1, sort_keys=False, allow_nan=False) + "\n")
        tmp.replace(self.path)
        from . import runs
        runs.write(self)             # results/<notebook>/runs/<profile>/: TREC runs and per-query metrics
        return self.path
