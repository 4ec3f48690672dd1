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


@pytest.mark.parametrize("ipynb", NBS, ids=[p.stem for p in NBS])
def test_stored_notebook_has_no_outputs_and_the_project_kernel(ipynb):
    """The README promises notebooks without outputs (saving in JupyterLab must not dirty them with a
    run's numbers; executed copies live in results/<nb>/<profile>.ipynb), opening on the project's kernel.
    Strip with: python -m toolkit strip-notebooks."""
    import nbformat
    nb = nbformat.read(ipynb, as_version=4)
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert not dirty, f"{ipynb.name}: cells {dirty} carry outputs; run python -m toolkit strip-notebooks"
    assert nb.metadata.get("kernelspec", {}).get("name") == "toolret-repro", \
        f"{ipynb.name}: kernelspec {nb.metadata.get('kernelspec')}; run python -m toolkit strip-notebooks"


@pytest.mark.parametrize("ipynb", NBS, ids=[p.stem for p in NBS])
def test_reading_cells_show_prose_not_code(ipynb):
    """A cell that formats a reading (Markdown(... .format(...))) of more than a few lines is hidden in
    JupyterLab (jupyter.source_hidden) and tagged hide-input for nbconvert."""
    import nbformat
    nb = nbformat.read(ipynb, as_version=4)
    for i, c in enumerate(nb.cells):
        if c.cell_type == "code" and "Markdown(" in c.source and len(c.source.splitlines()) > 30:
            assert c.metadata.get("jupyter", {}).get("source_hidden") is True, f"{ipynb.stem} cell {i}: long reading shown as code"
            assert "hide-input" in c.metadata.get("tags", []), f"{ipynb.stem} cell {i}: tag hide-input missing"


# the profiles' executed notebooks (results/10_toolrerank/weak_setup_pool_*.ipynb are archived runs of an
# earlier training setup, kept as they were executed; notebook 10 reads their JSON, not their outputs)
EXECUTED = sorted(p for p in (NOTEBOOKS.parent / "results").glob("*/*.ipynb") if p.stem in ("smoke", "standard", "paper"))


@pytest.mark.parametrize("executed", EXECUTED, ids=[f"{p.parent.name}/{p.stem}" for p in EXECUTED])
def test_executed_notebook_is_clean(executed):
    """What a reader opens in results/: no error, no stderr output (progress bars, warnings), no
    absolute path of the machine that ran it."""
    import sys

    import nbformat
    nb = nbformat.read(executed, as_version=4)
    outs = [(i, o) for i, c in enumerate(nb.cells) if c.cell_type == "code" for o in c.get("outputs", [])]
    stderr = [i for i, o in outs if o.get("name") == "stderr"]
    errors = [i for i, o in outs if o.get("output_type") == "error"]
    assert not errors, f"{executed}: error outputs in cells {errors}"
    assert not stderr, f"{executed}: stderr outputs in cells {sorted(set(stderr))}"
    text = executed.read_text()
    for path in {sys.prefix, str(NOTEBOOKS.parent)}:
        assert path not in text, f"{executed}: holds the absolute path {path}"


SMOKE = sorted((NOTEBOOKS.parent / "results").glob("*/smoke.ipynb"))


def _code(nb):
    return [c.source.strip() for c in nb.cells if c.cell_type == "code"
            and "injected-parameters" not in c.get("metadata", {}).get("tags", [])]


@pytest.mark.parametrize("smoke", SMOKE, ids=[p.parent.name for p in SMOKE])
def test_committed_smoke_run_is_of_the_current_notebook(smoke):
    """`make test` re-executes results/<nb>/smoke.ipynb under nbval (its NBVAL_CHECK_OUTPUT cells must
    reproduce): that copy must be the current notebook's code, or CI would test stale code."""
    import nbformat
    current = NOTEBOOKS / f"{smoke.parent.name}.ipynb"
    assert _code(nbformat.read(smoke, as_version=4)) == _code(nbformat.read(current, as_version=4)), \
        f"{smoke} was executed from an older {current.name}: python -m toolkit run {smoke.parent.name} --profile smoke"


def test_every_notebook_has_a_committed_smoke_run():
    missing = [p.stem for p in NBS if not (NOTEBOOKS.parent / "results" / p.stem / "smoke.ipynb").is_file()]
    assert not missing, f"no results/<nb>/smoke.ipynb for {missing}: python -m toolkit run <nb> --profile smoke"
