"""No churn: the paired notebooks/*.ipynb never carry outputs into git, whatever an editor saves (a git clean
filter that `make env` installs, and JupyterLab's pre-save hook that `make lab` sets), and re-running an
unchanged notebook rewrites the same executed document (no random cell ids, no wall-clock metadata)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from toolkit import runner
from toolkit.notebook import pre_save_hook, strip_text
from toolkit.paths import REPO

FILTER = "strip-notebook-outputs"


def _with_outputs(text: str) -> str:
    nb = json.loads(text)
    for i, c in enumerate(nb["cells"]):
        if c["cell_type"] == "code":
            c["execution_count"] = i + 1
            c["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["4,300 lines of output\n"]}]
            c["metadata"]["execution"] = {"iopub.execute_input": "2026-01-01T00:00:00Z"}
    return json.dumps(nb, indent=1) + "\n"


def _git(cwd, *args, **kw):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, **kw).stdout


def test_makefile_installs_the_clean_filter_that_gitattributes_names():
    attrs = _git(REPO, "check-attr", "filter", "notebooks/01_baselines.ipynb")
    assert attrs.strip().endswith(f"filter: {FILTER}")
    make = (REPO / "Makefile").read_text()
    assert f'config filter.{FILTER}.clean "$(PY) -m toolkit strip-notebooks --stdin"' in make
    assert "env: $(STAMP) git-filter" in make
    assert "--ContentsManager.pre_save_hook=toolkit.notebook.pre_save_hook" in make


def test_outputs_saved_into_a_tracked_notebook_never_reach_git(tmp_path):
    """A scratch repository with this .gitattributes and the filter `make env` installs: a notebook saved with
    outputs (a Run All in Lab) leaves `git status` clean and the stored blob without outputs."""
    repo = tmp_path / "clone"
    (repo / "notebooks").mkdir(parents=True)
    shutil.copy(REPO / ".gitattributes", repo / ".gitattributes")
    src = (REPO / "notebooks" / "01_baselines.ipynb").read_text()
    nb = repo / "notebooks" / "01_baselines.ipynb"
    nb.write_text(src)
    env = {**os.environ, "PYTHONPATH": str(REPO), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    _git(repo, "init", "-q", env=env)
    _git(repo, "config", f"filter.{FILTER}.clean", f"{sys.executable} -m toolkit strip-notebooks --stdin", env=env)
    _git(repo, "add", ".", env=env)
    _git(repo, "commit", "-qm", "stripped", env=env)
    nb.write_text(_with_outputs(src))
    os.utime(nb, (1, 1))                                   # a new mtime: git must look at the content
    assert _git(repo, "diff", env=env) == ""               # nothing to review, nothing to commit
    _git(repo, "add", ".", env=env)                        # (git status lists the file until its stat is refreshed)
    assert _git(repo, "status", "--porcelain", env=env) == ""
    stored = json.loads(_git(repo, "show", ":notebooks/01_baselines.ipynb", env=env))
    assert all(c.get("outputs", []) == [] and c.get("execution_count") is None for c in stored["cells"])
    assert stored == json.loads(src)


def test_strip_text_is_idempotent_on_the_tracked_notebooks():
    for p in sorted((REPO / "notebooks").glob("[0-9]*.ipynb")):
        text = p.read_text()
        assert strip_text(text) == text, f"{p.name} carries outputs or run metadata: python -m toolkit strip-notebooks"
        assert strip_text(_with_outputs(text)) == text


def test_lab_pre_save_hook_strips_notebooks_only():
    model = {"type": "notebook", "content": json.loads(_with_outputs(
        (REPO / "notebooks" / "01_baselines.ipynb").read_text()))}
    pre_save_hook(model, "notebooks/01_baselines.ipynb")
    cells = [c for c in model["content"]["cells"] if c["cell_type"] == "code"]
    assert cells and all(c["outputs"] == [] and c["execution_count"] is None and "execution" not in c["metadata"]
                         for c in cells)
    other = {"type": "notebook", "content": {"cells": [{"cell_type": "code", "outputs": [1], "execution_count": 3,
                                                          "metadata": {}}]}}
    pre_save_hook(other, "results/01_baselines/smoke.ipynb")
    assert other["content"]["cells"][0]["outputs"] == [1]


@pytest.fixture()
def tiny(tmp_path, monkeypatch):
    nbs = tmp_path / "notebooks"
    nbs.mkdir()
    shutil.copy(REPO / "tests" / "fixtures" / "tiny_notebook.json", nbs / "90_tiny.ipynb")
    monkeypatch.setattr(runner, "NOTEBOOKS", nbs)
    monkeypatch.setenv("TOOLKIT_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("TOOLKIT_FIGURES", str(tmp_path / "figures"))
    return tmp_path


def test_rerunning_an_unchanged_notebook_rewrites_the_same_document(tiny):
    first = runner.run_notebook("90_tiny", "standard", {"n": 4}).read_text()
    second = runner.run_notebook("90_tiny", "standard", {"n": 4}).read_text()
    assert first == second
    nb = json.loads(first)
    assert "start_time" not in nb["metadata"]["papermill"] and "duration" not in nb["metadata"]["papermill"]
    injected = [c for c in nb["cells"] if "injected-parameters" in c["metadata"].get("tags", [])]
    assert [c["id"] for c in injected] == ["injected-parameters"]
    assert not any("execution" in c["metadata"] for c in nb["cells"])
