"""Our own numbers are guarded (issue 18.4): the committed standard runs match their expected values
in ``data/expected/`` cell for cell, and the check fails on a changed value, a lost cell or a new one."""
from __future__ import annotations

import json
import shutil

import pytest

from toolkit import check as C

STANDARD = C.notebooks_with_expected("standard")


@pytest.mark.parametrize("notebook", STANDARD)
def test_committed_standard_results_match_their_expected_values(notebook):
    rows = C.check(notebook, "standard")
    bad = [r for r in rows if r[0] != "OK"]
    assert rows and not bad, f"{notebook}: {len(bad)} cells drifted, e.g. {bad[:3]}"


def test_check_fails_on_a_changed_value_a_lost_cell_and_a_new_cell(tmp_path):
    from toolkit.paths import RESULTS
    nb = STANDARD[0]
    shutil.copytree(RESULTS / nb, tmp_path / nb)
    path = tmp_path / nb / "standard.json"
    doc = json.loads(path.read_text())
    doc["cells"][0]["value"] += 0.01                      # a drift
    lost = doc["cells"].pop(1)                            # a cell that disappeared
    doc["cells"].append({**lost, "method": "Something new"})
    path.write_text(json.dumps(doc))
    status = [s for s, *_ in C.check(nb, "standard", root=tmp_path)]
    assert status.count("FAIL") == 1 and status.count("MISSING") == 1 and status.count("NEW") == 1


def test_check_command_exits_non_zero_on_drift(tmp_path, monkeypatch, capsys):
    from toolkit.paths import RESULTS
    nb = STANDARD[0]
    shutil.copytree(RESULTS / nb, tmp_path / nb)
    monkeypatch.setenv("TOOLKIT_RESULTS", str(tmp_path))
    assert C.main(["--profile", "standard", "--notebook", nb]) == 0
    path = tmp_path / nb / "standard.json"
    doc = json.loads(path.read_text())
    doc["cells"][0]["value"] *= 1.5
    path.write_text(json.dumps(doc))
    assert C.main(["--profile", "standard", "--notebook", nb]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_a_timing_is_checked_for_a_sane_value_not_against_the_expected_number(tmp_path, monkeypatch):
    nb = "99_toy"
    (tmp_path / nb).mkdir()
    cells = [{"paper": "p", "table": "5", "dataset": "d", "method": "m", "metric": "seconds_per_instruction",
              "value": 6.1}, {"paper": "p", "table": "5", "dataset": "d", "method": "m", "metric": "ndcg@5",
                              "value": 0.5}]
    (tmp_path / nb / "smoke.json").write_text(json.dumps({"cells": cells, "inputs": []}))
    monkeypatch.setattr(C, "EXPECTED", tmp_path / "expected")
    C.write_expected(nb, "smoke", root=tmp_path)
    cells[0]["value"] = 9.7                                 # another machine, another load: still OK
    (tmp_path / nb / "smoke.json").write_text(json.dumps({"cells": cells, "inputs": []}))
    assert [s for s, *_ in C.check(nb, "smoke", root=tmp_path)] == ["OK", "OK"]
    cells[0]["value"] = float("nan")                        # not a measurement
    cells[1]["value"] = 0.6
    (tmp_path / nb / "smoke.json").write_text(json.dumps({"cells": cells, "inputs": []}))
    assert [s for s, *_ in C.check(nb, "smoke", root=tmp_path)] == ["FAIL", "FAIL"]
