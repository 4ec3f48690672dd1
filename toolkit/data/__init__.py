"""Datasets by name, all in one contract (:mod:`toolkit.data.contract`).

>>> from toolkit.data import load_dataset, list_datasets
>>> ds = load_dataset("toole-multi")          # RetrievalDataset: corpus, queries, qrels
>>> ds = load_dataset("toolbench-g2-category", corpus="pool")
>>> ds = load_dataset("beir:/path/to/folder", split="test")   # your own data (toolkit.data.beir)

Raw files are read from the data directory (:func:`toolkit.paths.data_dir`) and checked against
``data/SOURCES.json``; ``python -m toolkit fetch`` downloads them.
"""
from __future__ import annotations

import inspect
from typing import Callable

from .beir import load_beir
from .contract import Document, Qrels, Query, RetrievalDataset, Run
from .sources import DataFileError, data_file, fetch, verify_all
from .standardize import api_key, change_name, standardize, standardize_category
from .toolbench import (STABLE_GROUPS, load_library, load_official_evalset, load_retrieval_dir,
                        load_tool_json_tree, load_toolbench)
from .toole import load_toole_multi, load_toole_single
from .toollens import load_toollens
from .ultratool import load_teval_corpus, load_ultratool


def _toolbench(files: list[str], name: str) -> Callable[..., RetrievalDataset]:
    def load(corpus: str = "library", enrich: bool = False, humanize_names: bool = True) -> RetrievalDataset:
        return load_toolbench(files, name, corpus=corpus, enrich=enrich, humanize_names=humanize_names)
    return load


DATASETS: dict[str, tuple[Callable[..., RetrievalDataset], str]] = {
    "toole-single": (load_toole_single, "ToolE single-tool queries over 199 tools (Re-Invoke Table 1)"),
    "toole-multi": (load_toole_multi, "ToolE multi-tool queries over 199 tools (Re-Invoke Table 1)"),
}
for _g in STABLE_GROUPS:
    _n = "toolbench-" + _g.lower().replace("_", "-")
    DATASETS[_n] = (_toolbench([f"stable/{_g}"], _n), f"StableToolBench solvable {_g} queries")
for _i, _groups in {"i1": list(STABLE_GROUPS[:3]), "i2": list(STABLE_GROUPS[3:5]), "i3": list(STABLE_GROUPS[5:])}.items():
    DATASETS[f"toolbench-{_i}"] = (_toolbench([f"stable/{g}" for g in _groups], f"toolbench-{_i}"),
                                   f"StableToolBench {'+'.join(_groups)} (Re-Invoke's {_i.upper()})")
DATASETS["toolbench-all"] = (_toolbench([f"stable/{g}" for g in STABLE_GROUPS], "toolbench-all"),
                              "All six StableToolBench groups (the feedback paper's 'All')")
for _src, _g in [("official", "G2_category"), ("official", "G3_instruction"),
                 ("draft", "G2_category"), ("draft", "G3_instruction")]:
    _n = f"toolbench-{_src}-{_g.lower().replace('_', '-')}"
    DATASETS[_n] = (_toolbench([f"{_src}/{_g}"], _n), f"{_src} {_g} queries with gold APIs")
DATASETS["toollens-train"] = (lambda: load_toollens("train"), "ToolLens training queries (464 APIs)")
DATASETS["toollens-test"] = (lambda: load_toollens("test"), "ToolLens test queries (464 APIs)")
DATASETS["ultratool"] = (load_ultratool, "UltraTool English test (feedback paper, out-of-domain)")


def list_datasets() -> dict[str, str]:
    return {k: v[1] for k, v in DATASETS.items()}


def load_dataset(name: str, **params) -> RetrievalDataset:
    """Load a named dataset, or ``beir:<folder>`` (a BEIR-format folder: :func:`toolkit.data.beir.load_beir`,
    parameter ``split``); unknown names or parameters raise an error listing the valid ones."""
    if name.startswith("beir:"):
        bad = set(params) - {"split"}
        if bad:
            raise TypeError(f"dataset {name!r} takes no parameter {sorted(bad)[0]!r}; its parameters: ['split']")
        return load_beir(name[len("beir:"):], **params)
    if name not in DATASETS:
        raise KeyError(f"unknown dataset {name!r}; known datasets: {', '.join(DATASETS)}, or beir:<folder>")
    loader = DATASETS[name][0]
    allowed = set(inspect.signature(loader).parameters)
    bad = set(params) - allowed
    if bad:
        raise TypeError(f"dataset {name!r} takes no parameter {sorted(bad)[0]!r}; "
                        f"its parameters: {sorted(allowed) or 'none'}")
    return loader(**params)


__all__ = ["Document", "Query", "RetrievalDataset", "Qrels", "Run", "DataFileError", "data_file", "fetch",
           "verify_all", "api_key", "change_name", "standardize", "standardize_category", "load_library",
           "load_official_evalset", "load_retrieval_dir", "load_tool_json_tree", "load_toolbench",
           "load_toole_single", "load_toole_multi", "load_toollens", "load_ultratool", "load_teval_corpus",
           "DATASETS", "list_datasets", "load_dataset", "load_beir", "STABLE_GROUPS"]
