"""toolkit.verdicts (issue 84): the suite's verdicts at a glance, counts per paper, the forest plot; and the
feedback LLM-size figure."""
from __future__ import annotations

import json

import pytest

from toolkit import verdicts


def _write(root, nb, claims):
    (root / nb).mkdir(parents=True)
    (root / nb / "standard.json").write_text(json.dumps({"claims": claims, "cells": []}))


def _row(claim, here, ours=0.1, ci=(0.05, 0.15), paper_number=0.2, **kw):
    return {"claim": claim, "here": here, "paper": "held", "ours": ours, "ci": list(ci) if ci else None,
            "paper_number": paper_number, "p": "a vs b p=0.010", "explained_by": "" if here == "held" else
            "not explained", "condition": "LLM x (paper: y)", **kw}


def test_counts_per_paper_read_the_headline_rows(tmp_path):
    _write(tmp_path, "10_toolrerank", [_row("a", "held"), _row("b", "not held"), _row("c", "within noise")])
    _write(tmp_path, "30_feedback", [_row("a", "not held", setup="fair LLM", headline=True),
                                     _row("a", "held", setup="capped LLM", headline=False)])
    got = verdicts.verdict_counts(results_dir=tmp_path)
    assert got == {"ToolRerank": {"held": 1, "not held": 1, "within noise": 1, "pending": 0},
                   "Iterative feedback": {"held": 0, "not held": 1, "within noise": 0, "pending": 0}}
    md = verdicts.verdict_markdown(results_dir=tmp_path, figure="figures/claims/forest_standard.png")
    assert md.startswith("## Verdicts at a glance")
    assert "| ToolRerank | 1 | 1 | 1 | 0 | 3 |" in md and "(figures/claims/forest_standard.png)" in md
    assert "| a (capped LLM) | held |" in md                 # every setup in the table, the headline in the counts
    assert "+0.100 [+0.050, +0.150]" in md and "not explained" in md


def test_an_old_yes_no_verdict_is_an_error_naming_the_file(tmp_path):
    _write(tmp_path, "40_querygen", [{"claim": "a", "holds": "yes"}])
    with pytest.raises(ValueError, match="40_querygen/standard.json.*re-run it"):
        verdicts.load_claims(results_dir=tmp_path)
    # the summaries leave it out and name the command that re-runs it
    assert verdicts.verdict_counts(results_dir=tmp_path) == {}
    assert "not judged by the shared rule yet: `python -m toolkit run 40_querygen --profile standard`" in \
        verdicts.verdict_markdown(results_dir=tmp_path)


def test_forest_plot_draws_intervals_and_direction_only_points(tmp_path):
    _write(tmp_path, "20_reinvoke", [_row("a", "held"), _row("b", "not held", ours=-0.1, ci=None),
                                     _row("c", "pending", ours=None, paper_number=None)])
    rows = verdicts.forest_rows(results_dir=tmp_path)
    assert [r["claim"] for r in rows] == ["a", "b"]           # a claim with neither number is left out
    fig = verdicts.forest_plot(rows, tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 1000 and len(fig.axes[0].get_yticklabels()) == 2


def test_llm_size_figure_plots_each_llm_by_its_parameters_with_the_oracle_line(tmp_path):
    from toolkit.feedback import controls as C
    rec = [{"part": "oracle - ToolRetriever", "metric": "ndcg@5", "diff": 0.11, "p": 0.0001, "n": 60},
           {"part": "loop (qwen-0.5b) - ToolRetriever", "metric": "ndcg@5", "diff": -0.18, "p": 0.0001, "n": 60},
           {"part": "loop (qwen-1.5b) - ToolRetriever", "metric": "ndcg@5", "diff": -0.03, "p": 0.18, "n": 60}]
    fig = C.llm_size_figure(rec, ("smollm2", "qwen-0.5b", "qwen-1.5b"), tmp_path / "llm.png")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and "no row yet: smollm2" in ax.get_title()
    x, y = ax.lines[0].get_data()
    assert list(x) == [0.49e9, 1.54e9] and list(y) == [-0.18, -0.03]
    assert ax.lines[1].get_ydata()[0] == pytest.approx(0.11)          # the oracle line
    assert C.llm_size_figure(rec[:1], ("qwen-0.5b",)) is None


def test_readme_block_is_formatted_from_the_counts(tmp_path):
    _write(tmp_path, "20_reinvoke", [_row("a", "held"), _row("b", "within noise")])
    assert verdicts.readme_block(results_dir=tmp_path).splitlines()[0] == \
        "- **Re-Invoke**: 1 held, 0 not held, 1 within noise, 0 pending (2 claims)"
