"""Outside JupyterLab (nbconvert's HTML, GitHub's renderer) a hidden input shows: each notebook's reading cells
are one call into toolkit (``toolkit.report.reading_cell``), so the HTML shows no formatting code before a reading."""
from __future__ import annotations

import html
import re

import nbformat
import pytest

from toolkit.paths import REPO
from toolkit.runner import list_notebooks

# what the reading code looked like while it lived in the notebooks: none of it may reach the HTML
READING_CODE = ("R.format(", "Reading.from_cells", "Reading(", "R.missing", "bound_lines", "claims_reading(",
                "def _v(", "def span(", "def rng(", "verdicts = {")
MAX_READING_LINES = 4


def _hidden_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code" and "hide-input" in c.metadata.get("tags", [])]


def _judges_claims(source: str) -> bool:
    """The cell that computes a notebook's claims table (its verdicts are code under test elsewhere, not prose)."""
    return "claims" in source and ".claims(" in source


def _html_inputs(path) -> str:
    from nbconvert import HTMLExporter
    body, _ = HTMLExporter().from_filename(str(path))
    areas = re.findall(r'<div class="jp-InputArea jp-Cell-inputArea">(.*?)</div>\s*</div>\s*</div>', body, re.S)
    assert areas, f"{path}: no code input found in nbconvert's HTML (template changed?)"
    return html.unescape(re.sub(r"<[^>]+>", "", "\n".join(areas)))


def _check(path):
    nb = nbformat.read(path, as_version=4)
    hidden = _hidden_cells(nb)
    assert hidden, f"{path}: no reading cell (tagged hide-input)"
    for c in hidden:
        if _judges_claims(c.source):
            continue
        lines = [x for x in c.source.splitlines() if x.strip()]
        assert len(lines) <= MAX_READING_LINES, f"{path}: a reading cell has {len(lines)} lines of code:\n{c.source[:300]}"
    shown = _html_inputs(path)
    found = [s for s in READING_CODE if s in shown]
    assert not found, f"{path}: nbconvert's HTML shows reading code ({', '.join(found)})"


@pytest.mark.parametrize("nb", list_notebooks())
def test_notebook_source_shows_no_reading_code(nb):
    _check(REPO / "notebooks" / f"{nb}.ipynb")


@pytest.mark.parametrize("nb", list_notebooks())
def test_committed_standard_run_shows_no_reading_code_in_html(nb):
    path = REPO / "results" / nb / "standard.ipynb"
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `python -m toolkit run {nb} --profile standard`")
    _check(path)
