"""Notebook 00's reading: prose whose numbers are looked up in the run (moved out of the notebook, so the
notebook shows one call and its prose, in Lab and in any renderer)."""
from __future__ import annotations


def reading(*, summary) -> str:
    """The reading of notebook 00 (markdown): the instruction lengths and the term overlap with the tools' documents. Each parameter is the notebook variable of that name
    (``toolkit.report.reading_cell``)."""
    def rng(col, names, scale=1, fmt=".0f"):
        v = summary.loc[[n for n in names if n in summary.index], col] * scale
        return f"{v.min():{fmt}}–{v.max():{fmt}}" if len(v) else "n/a"


    tb, short = ["toolbench-i1", "toolbench-i2", "toolbench-i3"], ["toole-single", "toole-multi", "toollens-test"]
    ratio = summary.loc[tb, "words_mean"].mean() / summary.loc[short, "words_mean"].mean()
    longer = ratio > 1.5
    return (
        f"ToolBench instructions average {rng('words_mean', tb)} words against {rng('words_mean', short)} for ToolE and "
        f"ToolLens ({ratio:.1f}×){', the first half of the paper’s argument' if longer else ''}. The overlap half: ToolE and "
        f"UltraTool instructions share {rng('overlap_mean', ['toole-single', 'toole-multi', 'ultratool'], 100)} % of their "
        f"content terms with their tools' name-and-description documents, ToolBench instructions "
        f"{rng('overlap_mean', tb, 100)} % with theirs — ToolBench documents are long (parameter lists, descriptions) and "
        f"instructions often quote parameter values and API names, so the overlap does not come out lower for all sets "
        f"as the paper's figure suggests. Whether tool instructions are longer or overlap less than *document-retrieval* "
        f"queries cannot be checked here: we have no document-retrieval set.")
