"""The papermill runner: parameter checks before execution, results JSON, progress lines, CLI."""
import io
import json
import os
import shutil

import pytest

from toolkit import runner
from toolkit.__main__ import main


@pytest.fixture()
def nbdir(tmp_path, monkeypatch, repo):
    nbs = tmp_path / "notebooks"
    nbs.mkdir()
    # stored as .json so that nbval does not collect it as a notebook to check
    shutil.copy(repo / "tests" / "fixtures" / "tiny_notebook.json", nbs / "90_tiny.ipynb")
    monkeypatch.setattr(runner, "NOTEBOOKS", nbs)
    monkeypatch.setenv("TOOLKIT_RESULTS", str(tmp_path / "results"))  # read by the kernel too
    monkeypatch.setenv("TOOLKIT_FIGURES", str(tmp_path / "figures"))
    return tmp_path


def test_parameters_are_checked_before_running(nbdir):
    path = runner.notebook_path("90")
    assert runner.notebook_parameters(path) == {"profile": "smoke", "n": 3, "scale": 1.5, "name": "x", "flag": False}
    with pytest.raises(ValueError, match="no parameter 'm'; its parameters: profile, n, scale, name, flag"):
        runner.check_parameters(path, {"m": 1})
    with pytest.raises(TypeError, match="parameter 'n' must be int"):
        runner.check_parameters(path, {"n": "three"})
    with pytest.raises(TypeError, match="parameter 'flag' must be bool"):
        runner.check_parameters(path, {"flag": 1})
    runner.check_parameters(path, {"scale": 2})  # an int where a float is expected is fine
    with pytest.raises(ValueError, match="profile must be one of"):
        runner.run_notebook("90", profile="huge")
    with pytest.raises(FileNotFoundError, match="notebooks: 90_tiny"):
        runner.notebook_path("77")


def test_parse_param():
    assert runner.parse_param("n=5") == ("n", 5)
    assert runner.parse_param("name=minilm") == ("name", "minilm")
    assert runner.parse_param("xs=[1, 2]") == ("xs", [1, 2])
    with pytest.raises(ValueError, match="name=value"):
        runner.parse_param("n5")


@pytest.mark.notebook
def test_run_writes_results_and_progress(nbdir):
    out = io.StringIO()
    failed = runner.run(["90_tiny"], "standard", {"n": 4}, stream=out)
    assert failed == 0
    assert out.getvalue().startswith("[1/1] 90_tiny (standard) ... ok in ")
    res = json.loads((nbdir / "results" / "tiny" / "standard.json").read_text())
    assert res["profile"] == "standard" and res["parameters"]["n"] == 4
    assert res["cells"][0]["value"] == 6.0 and "python" in res["versions"] and res["git_revision"]
    assert (nbdir / "results" / "90_tiny" / "standard.ipynb").is_file()
    out = io.StringIO()
    assert runner.run(["90_tiny"], "smoke", {"flag": True}, stream=out) == 1
    assert "FAILED" in out.getvalue() and "asked to fail" in out.getvalue()


def test_cli_errors_are_clear(capsys):
    assert main(["evaluate", "--dataset", "nope", "--retriever", "bm25"]) == 2
    assert "unknown dataset 'nope'" in capsys.readouterr().err
    assert main(["run", "00_datasets", "-p", "nonsense=1"]) == 2
    assert "no parameter 'nonsense'" in capsys.readouterr().err


def test_cli_evaluate_json(capsys):
    assert main(["evaluate", "--dataset", "toole-multi", "--retriever", "bm25", "--metrics", "ndcg@5,recall@5",
                 "--json"]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert set(scores) == {"ndcg@5", "recall@5"} and 0.1 < scores["ndcg@5"] < 0.6


def test_cli_datasets_lists_counts(capsys):
    assert main(["datasets", "--json"]) == 0
    rows = {r["dataset"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["toole-single"]["queries"] == 20550 and rows["toolbench-g1-tool"]["documents"] == 16427


def test_recorder_rejects_duplicates_and_bad_profile():
    from toolkit.results import Recorder
    rec = Recorder("x", "smoke")
    rec.add(paper="p", table="1", dataset="d", method="m", metric="ndcg@5", value=0.5)
    with pytest.raises(ValueError, match="recorded twice"):
        rec.add(paper="p", table="1", dataset="d", method="m", metric="ndcg@5", value=0.6)
    with pytest.raises(ValueError, match="profile must be one of"):
        Recorder("x", "fast")


def test_names_outside_the_parameters_cell_go_to_a_configured_notebooks_overrides():
    path = runner.notebook_path("40_querygen")
    assert runner.fold_overrides(path, {"test_requests": 50}, "standard") == {"overrides": {"test_requests": 50}}
    assert runner.fold_overrides(path, {}, "standard") == {}
    with pytest.raises(ValueError, match="40_querygen has no parameter 'test_request'"):
        runner.fold_overrides(path, {"test_request": 50}, "standard")          # checked by its config, before running
    with pytest.raises(TypeError, match="'test_requests' must be int"):
        runner.fold_overrides(path, {"test_requests": "many"}, "standard")
    plain = runner.notebook_path("00_datasets")                                # a notebook without overrides
    assert runner.fold_overrides(plain, {"stopwords": False}) == {"stopwords": False}


def test_kernel_env_puts_this_clone_first_and_keeps_what_was_set(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    monkeypatch.setenv("PYTHONWARNINGS", "error::DeprecationWarning")
    runner.prepare_kernel_env()
    runner.prepare_kernel_env()                         # twice: nothing repeated
    assert os.environ["PYTHONPATH"].split(os.pathsep) == [str(runner.REPO), "/elsewhere"]
    assert os.environ["PYTHONWARNINGS"] == "ignore:IProgress not found,error::DeprecationWarning"


def test_executed_notebook_is_stored_without_widget_state(tmp_path, repo):
    import nbformat
    nb = nbformat.v4.new_notebook()
    bar = nbformat.v4.new_output("display_data", data={runner.WIDGET_VIEW: {"model_id": "m1"}, "text/plain": "0%|"})
    table = nbformat.v4.new_output("display_data", data={"text/plain": "a table"})
    nb.cells = [nbformat.v4.new_code_cell("x", outputs=[bar, table])]
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {"m1": {}}}}
    nb.metadata["papermill"] = {"input_path": "/abs/in.ipynb", "output_path": "/abs/out.ipynb"}
    path = tmp_path / "run.ipynb"
    nbformat.write(nb, path)
    runner._as_document(path, repo / "notebooks" / "00_datasets.ipynb", repo / "results" / "00_datasets" / "smoke.ipynb")
    stored = nbformat.read(path, as_version=4)
    assert "widgets" not in stored.metadata
    assert [o["data"]["text/plain"] for o in stored.cells[0].outputs] == ["a table"]
    assert stored.metadata["papermill"]["output_path"] == "results/00_datasets/smoke.ipynb"
