"""Build a notebook from cell sources kept in a script (so notebooks are reviewed as code).

    from notebook_builder import Builder
    nb = Builder()
    nb.md("# Title"); nb.code("profile = 'smoke'", tags=["parameters"])
    nb.write("10_toolrerank")
"""
from __future__ import annotations

from pathlib import Path

import nbformat as nbf

REPO = Path(__file__).resolve().parent.parent


class Builder:
    def __init__(self) -> None:
        self.cells: list = []

    def md(self, source: str) -> None:
        self.cells.append(nbf.v4.new_markdown_cell(source.strip("\n")))

    def code(self, source: str, tags: list[str] | None = None) -> None:
        cell = nbf.v4.new_code_cell(source.strip("\n"))
        if tags:
            cell.metadata["tags"] = tags
        self.cells.append(cell)

    def write(self, name: str) -> Path:
        nb = nbf.v4.new_notebook()
        nb.cells = self.cells
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        out = REPO / "notebooks" / f"{name}.ipynb"
        nbf.write(nb, out)
        print(f"wrote {out.relative_to(REPO)}")
        return out
