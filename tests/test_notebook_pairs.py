"""Every notebook has one source: its jupytext ``py:percent`` pair (``notebooks/<nb>.py``), which must
agree with ``notebooks/<nb>.ipynb`` cell for cell (type, source, the ``parameters`` tag). Fix a
disagreement with ``jupytext --sync notebooks/<nb>.py``."""
from __future__ import annotations

import pytest

from toolkit.paths import NOTEBOOKS

jupytext = pytest.importorskip("jupytext")
NBS = sorted(NOTEBOOKS.glob("[0-9]*.ipynb"))


def _cells(nb):
    return [(c.cell_type, c.source.strip(), "parameters" in c.get("metadata", {}).get("tags", []))
            for c in nb.cells]


def test_every_notebook_is_paired():
    missing = [p.name for p in NBS if not p.with_suffix(".py").is_file()]
    assert not missing, f"notebooks without their py:percent source: {missing} (jupytext --set-formats ipynb,py:percent)"
    orphans = [p.name for p in NOTEBOOKS.glob("[0-9]*.py") if not p.with_suffix(".ipynb").is_file()]
    assert not orphans, f"py:percent files without their notebook: {orphans} (jupytext --sync)"


@pytest.mark.parametrize("ipynb", NBS, ids=[p.stem for p in NBS])
def test_pair_agrees_cell_for_cell(ipynb):
    a = _cells(jupytext.read(ipynb))
    b = _cells(jupytext.read(ipynb.with_suffix(".py")))
    assert len(a) == len(b), f"{ipynb.stem}: {len(a)} cells in the .ipynb, {len(b)} in the .py: jupytext --sync"
    for i, (x, y) in enumerate(zip(a, b)):
        assert x == y, f"{ipynb.stem}: cell {i} differs between .ipynb and .py: jupytext --sync notebooks/{ipynb.stem}.py"
    assert sum(t for _, _, t in a) == 1, f"{ipynb.stem}: exactly one cell must be tagged 'parameters'"
