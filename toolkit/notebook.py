"""What every notebook calls right after its parameters cell.

Two ways to set a notebook's parameters reach the same checked configuration:

- ``python -m toolkit run 01_baselines -p dense_model=mpnet`` (the runner folds configuration fields
  into ``overrides`` before papermill starts);
- ``papermill notebooks/01_baselines.ipynb out.ipynb -p dense_model mpnet`` (papermill's own way):
  papermill injects ``dense_model = "mpnet"`` as a variable in a cell of its own, warns
  "Passed unknown parameter" and would otherwise leave it unused. :func:`parameters` reads that
  injected cell and folds its configuration fields into ``overrides``, so the notebook's
  ``config_for`` checks them; a name that is no parameter at all is an error naming the valid ones.

:func:`parameters` also sets the display: wide tables and long notes shown whole.
"""
from __future__ import annotations

import ast

# papermill's Python translator starts the cell it injects with this comment
INJECTED_HEADER = "# Parameters"


def injected_parameters(history: list[str]) -> dict[str, object]:
    """The assignments of the cell papermill injected, if it is the cell executed just before this
    one (``history`` is IPython's ``In``: ``In[-1]`` is the running cell)."""
    if len(history) < 2 or not history[-2].lstrip().startswith(INJECTED_HEADER):
        return {}
    return assignments(history[-2])


def assignments(source: str) -> dict[str, object]:
    """``name = <literal>`` lines of a parameters cell, parsed (never executed)."""
    out = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = ast.literal_eval(node.value)
    return out


def fold_injected(notebook: str, cell: dict[str, object], injected: dict[str, object],
                  overrides: dict | None) -> dict:
    """``overrides`` with every injected name that is not a parameter of the notebook's own cell
    (``cell``: name -> value after injection). A notebook without an ``overrides`` parameter has
    nothing to fold into: an unknown name is an error there."""
    extra = {k: v for k, v in injected.items() if k not in cell}
    if overrides is None:
        if extra:
            raise ValueError(f"{notebook} has no parameter {', '.join(map(repr, extra))}; "
                             f"its parameters: {', '.join(cell)}")
        return {}
    if not isinstance(overrides, dict):
        raise TypeError(f"{notebook}: parameter 'overrides' must be a dict of configuration fields, "
                        f"got {type(overrides).__name__} {overrides!r}")
    return {**overrides, **extra}


def display_options() -> None:
    """Tables shown whole: every column, and notes and claims not cut at 50 characters (counts as
    integers: ``toolkit.report.integral``)."""
    import pandas as pd
    pd.set_option("display.max_columns", None)
    pd.set_option("display.max_colwidth", None)
    pd.set_option("display.width", 200)
    pd.set_option("display.max_rows", 200)


def parameters(namespace: dict, notebook: str, names: tuple[str, ...]) -> dict:
    """Call as ``overrides = parameters(globals(), "01_baselines", ("profile", "overrides"))`` in the
    cell after the parameters cell (``names``: the parameters cell's own names). Returns the
    overrides with papermill's ``-p field value`` folded in; sets display options."""
    display_options()
    cell = {k: namespace.get(k) for k in names}
    injected = injected_parameters(list(namespace.get("In") or []))
    return fold_injected(notebook, cell, injected, cell.get("overrides") if "overrides" in names else None)


KERNELSPEC = {"display_name": "toolret-repro", "language": "python", "name": "toolret-repro"}


def strip_text(text: str) -> str:
    """A stored notebook's JSON without outputs, execution counts and run metadata, on the project's kernel."""
    import nbformat
    nb = nbformat.reads(text, as_version=4)
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None
        for key in ("execution", "papermill", "collapsed", "scrolled"):
            c.metadata.pop(key, None)
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    for key in ("papermill", "widgets"):
        nb.metadata.pop(key, None)
    return nbformat.writes(nb) + "\n"


def strip(path) -> bool:
    """Remove outputs and execution counts from a stored notebook and set the project's kernel
    (``make env`` installs it); the executed copies live in ``results/<nb>/<profile>.ipynb``.
    Returns whether the file changed. The same text is what git stores (the ``strip-notebook-outputs``
    clean filter of ``.gitattributes``, installed by ``make env``: ``python -m toolkit strip-notebooks --stdin``)
    and what JupyterLab saves (``make lab``'s :func:`pre_save_hook`)."""
    before = open(path, encoding="utf-8").read()
    after = strip_text(before)
    if after != before:
        open(path, "w", encoding="utf-8").write(after)
    return after != before


def pre_save_hook(model, path, **kwargs):
    """JupyterLab's ``ContentsManager.pre_save_hook`` (``make lab``): a notebook under ``notebooks/`` is saved
    without outputs, whatever Lab autosaves; the executed copies live in ``results/``."""
    if model.get("type") != "notebook" or not str(path).replace("\\", "/").lstrip("/").startswith("notebooks/"):
        return
    for c in model["content"].get("cells", []):
        if c.get("cell_type") == "code":
            c["outputs"], c["execution_count"] = [], None
        for key in ("execution", "papermill", "collapsed", "scrolled"):
            c.get("metadata", {}).pop(key, None)
