"""What a notebook records: ``results/<notebook>/<profile>.json`` (DESIGN §8).

>>> rec = Recorder("01_baselines", profile="smoke", parameters={...})
>>> rec.add(paper="reinvoke", table="1", dataset="toole-single", method="BM25", metric="ndcg@5",
...         value=0.3712, n_queries=20550)
>>> rec.save()

Each cell is keyed by (paper, table, dataset, method, metric) — the same key as the transcribed
paper numbers in ``data/paper_numbers/`` — so ``python -m toolkit compare`` can join them.
"""
from __future__ import annotations

import json
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

    def add(self, *, paper: str, table: str, dataset: str, method: str, metric: str, value: float,
            n_queries: int | None = None, note: str = "", ours_only: bool = False) -> None:
        """One result cell under the paper's key. ``ours_only``: a row the paper has no counterpart for
        (e.g. our second LLM backbone in a table of backbones); ``compare`` lists it apart from naming slips."""
        key = (paper, str(table), dataset, method, metric)
        if any((c["paper"], c["table"], c["dataset"], c["method"], c["metric"]) == key for c in self.cells):
            raise ValueError(f"cell {key} recorded twice")
        self.cells.append({"paper": paper, "table": str(table), "dataset": dataset, "method": method,
                           "metric": metric, "value": float(value), "n_queries": n_queries, "note": note})
        if ours_only:
            self.cells[-1]["ours_only"] = True

    @property
    def path(self) -> Path:
        return results_dir() / self.notebook / f"{self.profile}.json"

    def figure_dir(self) -> Path:
        d = figures_dir() / self.notebook
        d.mkdir(parents=True, exist_ok=True)
        return d

    def save(self) -> Path:
        bad = provenance.run_problems()
        if bad:
            # numbers from a damaged input or a fake LLM are not results: keep the last good results file
            raise ValueError(f"{self.notebook} ({self.profile}): results not saved, the run read damaged or wrong "
                             "inputs:\n  " + "\n  ".join(bad))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        payload = {"notebook": self.notebook, "profile": self.profile, "parameters": self.parameters,
                   "versions": versions(), "device": devices.describe(), "git_revision": git_revision(),
                   "seconds": round(time.time() - self.started, 1), "cells": self.cells, **self.extra,
                   # what the numbers rest on: committed inputs with their sha256, and the LLM backends (check verifies)
                   "inputs": provenance.inputs(), "llm": provenance.llm_clients()}
        stand_ins = os.environ.get("TOOLKIT_STAND_INS")          # set by `python -m toolkit paper-dry` (toolkit.paper)
        if stand_ins:
            payload["stand_ins"] = json.loads(stand_ins)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(payload, indent=1, sort_keys=False) + "\n")
        tmp.replace(self.path)
        return self.path
