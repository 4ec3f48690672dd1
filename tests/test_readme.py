"""The front page: README.md is short, has the sections a new user looks for, its verdict counts are generated
from the results (``python -m toolkit compare --readme``), and each paper's long-job commands live beside its code."""
from __future__ import annotations

import json
import re

import pytest

from toolkit import compare
from toolkit.paths import REPO

README = (REPO / "README.md").read_text()
SECTIONS = ["## Verdicts at a glance", "## What each notebook reproduces", "## Stepping through the notebooks",
            "## Add your method", "## Bring your own data", "## Where the rest lives", "## On a GPU, with an LLM server"]


def test_readme_is_a_front_page():
    assert len(README.splitlines()) <= 150
    assert "make reproduce" in README.split("##")[0] and "make test" in README.split("##")[0]
    positions = [README.index(s) for s in SECTIONS]
    assert positions == sorted(positions)
    gpu = README[README.index("## On a GPU, with an LLM server"):]
    assert "<!-- gpu-section -->" in gpu and "<!-- /gpu-section -->" in gpu
    for var in ("TOOLKIT_LLM_BACKEND", "TOOLKIT_LLM_BASE_URL", "TOOLKIT_LLM_MODEL", "TOOLKIT_LLM_API_KEY"):
        assert var in gpu and var in (REPO / "toolkit" / "llm" / "README.md").read_text()
    assert "examples/word_overlap.py" in README and 'load_dataset("beir:' in README
    assert "python -m toolkit runs" in README


def test_readme_verdicts_are_the_results_counts():
    block = README.split("<!-- verdicts -->\n", 1)[1].split("\n<!-- /verdicts -->", 1)[0]
    assert block == compare.verdicts_markdown("standard"), "python -m toolkit compare --readme"


def test_verdict_counts_name_every_verdict(tmp_path):
    (tmp_path / "70_x").mkdir()
    claims = [{"here": "held"}, {"here": "within noise"}, {"holds": "no"}, {"here": "yes"}, {"here": "mixed"}]
    (tmp_path / "70_x" / "standard.json").write_text(json.dumps({"claims": claims}))
    assert compare.verdict_counts("standard", tmp_path) == {
        "70_x": {"held": 2, "within noise": 1, "not held": 1, "mixed": 1}}
    md = compare.verdicts_markdown("standard", tmp_path)
    assert "| `70_x` | 5 | 2 | 1 | 1 | 0 | 1 |" in md and "mixed" in md.splitlines()[0]
    readme = tmp_path / "README.md"
    readme.write_text("# x\n<!-- verdicts -->\nold\n<!-- /verdicts -->\ntail\n")
    compare.update_readme(readme, "standard", tmp_path)
    assert "old" not in readme.read_text() and readme.read_text().endswith("<!-- /verdicts -->\ntail\n")
    readme.write_text("no markers")
    with pytest.raises(ValueError, match="no '<!-- verdicts -->'"):
        compare.update_readme(readme, "standard", tmp_path)


@pytest.mark.parametrize("package, command", [
    ("toolrerank", "scripts/train_toolrerank.py"), ("reinvoke", "python -m toolkit.reinvoke"),
    ("feedback", "python -m toolkit.feedback all"), ("querygen", "python -m toolkit.querygen sft"),
    ("methods", "encode_missing=True")])
def test_each_papers_long_jobs_live_beside_its_code(package, command):
    text = (REPO / "toolkit" / package / "README.md").read_text()
    assert command in text
    assert f"toolkit/{package}/README.md" in README
    if package != "methods":
        assert re.search(r"arXiv:\d{4}\.\d{5}", text)


def test_readme_paper_work_table_is_the_plan():
    """The GPU section's work table is what ``python -m toolkit paper-plan --markdown`` counts now."""
    from toolkit.paper_plan import plan, render
    block = README.split("<!-- paper-plan -->\n", 1)[1].split("\n<!-- /paper-plan -->", 1)[0]
    assert block == render(plan(), markdown=True), "python -m toolkit paper-plan --markdown"
