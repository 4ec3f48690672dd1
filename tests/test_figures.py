"""No stale figure: every committed figure is one its notebook's current code writes and its last run made
(``results/<nb>/<profile>.json`` lists the figures the run wrote; :meth:`Recorder.sweep_figures` deletes the rest)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import time

import pytest

from toolkit.paths import NOTEBOOKS, REPO, RESULTS

FIGURE = re.compile(r"^(?P<stem>.+)_(?P<profile>smoke|standard|paper)\.(?P<ext>png|csv|svg|pdf)$")


def committed_figures() -> list[str]:
    out = subprocess.run(["git", "ls-files", "figures"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return [p for p in out.split() if p]


def _code(nb: str) -> str:
    """The notebook's source and the toolkit code it calls (a figure's name may be built in either)."""
    return (NOTEBOOKS / f"{nb}.py").read_text()


# figures of no one notebook: the cross-paper verdicts (python -m toolkit.verdicts --figure) and notebook 30's
# LLM-size trend, kept beside them: figure stem -> the file whose code writes it
CLAIMS_FIGURES = {"forest": "toolkit/verdicts.py", "llm_size_feedback": "notebooks/30_feedback.py"}


@pytest.mark.parametrize("path", committed_figures())
def test_every_committed_figure_is_made_by_the_current_code(path):
    _, nb, name = path.split("/")
    if nb == "claims":
        stem = re.sub(r"_(smoke|standard|paper)$", "", name.rsplit(".", 1)[0])
        assert stem in CLAIMS_FIGURES, f"{path}: no code writes a '{stem}' figure into figures/claims/; delete the file"
        assert f"{stem}_" in (REPO / CLAIMS_FIGURES[stem]).read_text() or stem in (REPO / CLAIMS_FIGURES[stem]).read_text()
        return
    m = FIGURE.match(name)
    assert m, f"{path}: a figure is named <what>_<profile>.<ext>"
    assert (NOTEBOOKS / f"{nb}.py").is_file(), f"{path}: no notebook {nb}"
    stem, profile = m["stem"], m["profile"]
    assert f'"{stem}_{{profile}}' in _code(nb) or f"f\"{stem}_{{profile}}" in _code(nb), (
        f"{path}: notebooks/{nb}.py writes no {stem}_<profile> figure any more; delete the file")
    made = json.loads((RESULTS / nb / f"{profile}.json").read_text()).get("figures")
    assert made is not None, f"results/{nb}/{profile}.json lists no figures: re-run the notebook ({profile})"
    assert name in made, f"{path}: the last {profile} run of {nb} did not make it (made: {made}); delete the file"


def test_a_rerun_deletes_the_figures_it_no_longer_makes(tmp_path, monkeypatch):
    from toolkit.results import Recorder
    monkeypatch.setenv("TOOLKIT_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("TOOLKIT_FIGURES", str(tmp_path / "figures"))
    d = tmp_path / "figures" / "99_demo"
    d.mkdir(parents=True)
    old = time.time() - 3600
    for name in ("curves_standard.png", "curves_smoke.png", "pareto_standard.png"):
        (d / name).write_text("x")
        os.utime(d / name, (old, old))
    rec = Recorder("99_demo", "standard")
    (rec.figure_dir() / "pareto_standard.png").write_text("new")          # this run makes the Pareto figure only
    rec.save()
    assert sorted(p.name for p in d.iterdir()) == ["curves_smoke.png", "pareto_standard.png"]   # smoke: untouched
    assert json.loads(rec.path.read_text())["figures"] == ["pareto_standard.png"]
