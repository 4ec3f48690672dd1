"""Bad input, round three (issue 83, part B): the runner (relative paths, two runs at once, figures, interrupts,
full disk, non-finite parameters), the feedback stages without git or with a shallow clone, the method interface
of the head-to-head benchmark, and NaN in the significance tests. Each test fails on the code before the fix."""
import asyncio
import errno
import io
import json
import logging
import math
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from toolkit import runner
from toolkit.__main__ import main
from toolkit.data.contract import Document, Query, RetrievalDataset
from toolkit.methods import Cost, Fusion, Method, MethodPending, Pending
from toolkit.methods import benchmark as B
from toolkit.significance import macro_paired_randomization, p_label, paired_randomization, within_noise


# ---------------------------------------------------------------- runner: a notebook of our own in a tmp tree

def _notebook(path: Path, body: str) -> Path:
    """A notebook with a parameters cell (profile) and one code cell ``body``."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell('profile = "smoke"', metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell(body)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


FIGURE_THEN = """from toolkit.results import Recorder
rec = Recorder("91_fig", profile)
(rec.figure_dir() / "plot_smoke.png").write_text("new figure")
{then}
"""


@pytest.fixture()
def tree(tmp_path, monkeypatch, repo):
    """notebooks/ with the tiny notebook and a figure-writing one; results/ and figures/ under tmp_path."""
    nbs = tmp_path / "notebooks"
    nbs.mkdir()
    shutil.copy(repo / "tests" / "fixtures" / "tiny_notebook.json", nbs / "90_tiny.ipynb")
    monkeypatch.setattr(runner, "NOTEBOOKS", nbs)
    monkeypatch.setenv("TOOLKIT_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("TOOLKIT_FIGURES", str(tmp_path / "figures"))
    return tmp_path


def _committed_figure(tree: Path) -> Path:
    fig = tree / "figures" / "91_fig" / "plot_smoke.png"
    fig.parent.mkdir(parents=True)
    fig.write_text("committed figure")
    return fig


def test_relative_path_variables_are_made_absolute_for_the_kernel(tmp_path, monkeypatch):
    # bug 7: the kernel runs in notebooks/, so TOOLKIT_RESULTS=relres must mean <where the runner started>/relres
    monkeypatch.chdir(tmp_path)
    for var, value in (("TOOLKIT_RESULTS", "relres"), ("TOOLKIT_FIGURES", "relfig"), ("TOOLKIT_DATA", "../data"),
                       ("TOOLKIT_LLM_CACHE", "cache")):
        monkeypatch.setenv(var, value)
    runner.prepare_kernel_env()
    assert os.environ["TOOLKIT_RESULTS"] == str(tmp_path / "relres")
    assert os.environ["TOOLKIT_FIGURES"] == str(tmp_path / "relfig")
    assert Path(os.environ["TOOLKIT_DATA"]).resolve() == (tmp_path / ".." / "data").resolve()
    assert os.environ["TOOLKIT_LLM_CACHE"] == str(tmp_path / "cache")


@pytest.mark.notebook
def test_a_run_with_a_relative_results_directory_writes_the_json_beside_the_notebook(tree, monkeypatch):
    # bug 7, end to end: the executed notebook and the JSON the kernel writes land in the same relres/
    monkeypatch.chdir(tree)
    monkeypatch.setenv("TOOLKIT_RESULTS", "relres")
    assert runner.run(["90_tiny"], "smoke", {}, stream=io.StringIO()) == 0
    assert (tree / "relres" / "90_tiny" / "smoke.ipynb").is_file()
    assert json.loads((tree / "relres" / "tiny" / "smoke.json").read_text())["cells"][0]["value"] == 4.5
    assert not (tree / "notebooks" / "relres").exists()


def test_each_kernel_gets_its_own_socket_directory():
    # bug 8: jupyter_client's default names IPC sockets kernel-ipc-N in the working directory (notebooks/), where
    # two kernels starting at once take the same N
    km_class = runner.local_kernel_manager()
    a, b = km_class(kernel_name="python3"), km_class(kernel_name="python3")
    assert a.transport == "ipc"
    assert os.path.isabs(a.ip) and os.path.dirname(a.ip) != os.path.dirname(b.ip)
    assert not a.ip.startswith(str(runner.NOTEBOOKS))
    for km in (a, b):
        shutil.rmtree(km.ipc_dir, ignore_errors=True)


@pytest.mark.notebook
def test_a_kernel_leaves_no_socket_files_behind(tmp_path, monkeypatch):
    # bug 8: the private directory goes with the kernel; nothing kernel-ipc-* in the working directory
    monkeypatch.chdir(tmp_path)
    km = runner.local_kernel_manager()(kernel_name="python3")

    async def start_and_stop():
        await km.start_kernel()
        kc = km.client()
        kc.start_channels()
        try:
            await kc.wait_for_ready(timeout=60)
            assert list(Path(km.ipc_dir).glob("kernel-ipc-*"))     # the sockets are there while it runs
        finally:
            kc.stop_channels()
            await km.shutdown_kernel(now=True)
    asyncio.run(start_and_stop())
    assert not Path(km.ipc_dir).exists()
    assert not list(tmp_path.glob("kernel-ipc-*"))


@pytest.mark.slow
@pytest.mark.notebook
def test_two_runs_started_at_the_same_moment_both_succeed(tmp_path, repo):
    # bug 8: `toolkit run 00_datasets & toolkit run 01_baselines & wait` -- one or both "Kernel didn't respond"
    env = {**os.environ, "TOOLKIT_RESULTS": str(tmp_path / "results"), "TOOLKIT_FIGURES": str(tmp_path / "figures"),
           "PYTHONPATH": str(repo)}
    before = set((repo / "notebooks").glob("kernel-ipc-*"))
    procs = [subprocess.Popen([sys.executable, "-m", "toolkit", "run", nb, "--profile", "smoke"], cwd=repo, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for nb in ("00_datasets", "01_baselines")]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out
        # the kernel's own shutdown line may land between "..." and "ok in" (stderr is merged here)
        assert re.search(r"(^|\s)ok in [0-9.]+s", out), out
    for nb in ("00_datasets", "01_baselines"):
        assert (tmp_path / "results" / nb / "smoke.json").is_file()
    assert set((repo / "notebooks").glob("kernel-ipc-*")) == before


@pytest.mark.notebook
def test_a_failed_run_leaves_the_committed_figure(tree):
    # bug 10: a run that fails after writing a figure must not leave the new figure beside the old results
    fig = _committed_figure(tree)
    _notebook(tree / "notebooks" / "91_fig.ipynb", FIGURE_THEN.format(then='raise RuntimeError("after the figure")'))
    assert runner.run(["91_fig"], "smoke", {}, stream=io.StringIO()) == 1
    assert fig.read_text() == "committed figure"
    assert not [p for p in (tree / "figures").iterdir() if p.name.startswith(".running")]
    assert (tree / "results" / "91_fig" / "smoke.failed").is_file()


@pytest.mark.notebook
def test_a_successful_run_swaps_its_figures_in(tree):
    fig = _committed_figure(tree)
    _notebook(tree / "notebooks" / "91_fig.ipynb", FIGURE_THEN.format(then="print('done')"))
    assert runner.run(["91_fig"], "smoke", {}, stream=io.StringIO()) == 0
    assert fig.read_text() == "new figure"
    assert sorted(p.name for p in (tree / "figures").iterdir()) == ["91_fig"]


def _fake_execute(write_figure=True, running=False, tmp_json=False, exc=None):
    """papermill.execute_notebook stand-in: writes a figure where the kernel would (TOOLKIT_FIGURES), optionally
    the executed copy and a half-written results file, then raises ``exc``."""
    def execute(src, out, **kw):
        if write_figure:
            d = Path(os.environ["TOOLKIT_FIGURES"]) / "91_fig"
            d.mkdir(parents=True, exist_ok=True)
            (d / "plot_smoke.png").write_text("new figure")
        if running:
            shutil.copy(src, out)
        if tmp_json:
            p = Path(os.environ["TOOLKIT_RESULTS"]) / "91_fig" / "smoke.tmp"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text('{"cells": [')
        if exc is not None:
            raise exc
    return execute


def test_ctrl_c_keeps_the_figure_marks_the_run_and_prints_one_line(tree, monkeypatch, capsys):
    # bug 10 and the interrupt weak spot: Ctrl-C just after a figure is written
    import papermill
    fig = _committed_figure(tree)
    _notebook(tree / "notebooks" / "91_fig.ipynb", FIGURE_THEN.format(then=""))
    monkeypatch.setattr(papermill, "execute_notebook", _fake_execute(exc=KeyboardInterrupt()))
    assert main(["run", "91_fig", "--profile", "smoke"]) == 130
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert err.startswith("interrupted: 91_fig (smoke) interrupted") and "smoke.failed" in err
    assert fig.read_text() == "committed figure"
    marker = (tree / "results" / "91_fig" / "smoke.failed").read_text()
    assert "interrupted (Ctrl-C)" in marker


def test_a_killed_kernel_marker_names_no_copy_that_does_not_exist(tree, monkeypatch):
    # a kernel killed mid-run never saves the notebook: the marker must not point at a smoke.failed.ipynb
    import papermill
    _notebook(tree / "notebooks" / "91_fig.ipynb", FIGURE_THEN.format(then=""))
    monkeypatch.setattr(papermill, "execute_notebook", _fake_execute(exc=RuntimeError("Kernel died before replying")))
    with pytest.raises(RuntimeError):
        runner.run_notebook("91_fig", "smoke")
    marker = (tree / "results" / "91_fig" / "smoke.failed").read_text()
    assert "smoke.failed.ipynb" not in marker and "no executed copy" in marker
    assert not (tree / "results" / "91_fig" / "smoke.failed.ipynb").exists()


def test_a_failed_run_that_saved_its_copy_names_it(tree, monkeypatch):
    import papermill
    _notebook(tree / "notebooks" / "91_fig.ipynb", FIGURE_THEN.format(then=""))
    monkeypatch.setattr(papermill, "execute_notebook", _fake_execute(running=True, exc=RuntimeError("cell failed")))
    with pytest.raises(RuntimeError):
        runner.run_notebook("91_fig", "smoke")
    marker = (tree / "results" / "91_fig" / "smoke.failed").read_text()
    assert "executed copy: smoke.failed.ipynb" in marker
    assert (tree / "results" / "91_fig" / "smoke.failed.ipynb").is_file()


def test_a_full_disk_leaves_no_tmp_file_nor_an_empty_marker_and_names_the_path(tree, monkeypatch):
    import papermill
    _notebook(tree / "notebooks" / "91_fig.ipynb", FIGURE_THEN.format(then=""))
    full = OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(papermill, "execute_notebook", _fake_execute(tmp_json=True, exc=full))
    real_write = Path.write_text

    def write_text(self, *a, **kw):
        if self.suffix == ".failed":               # the disk is full: the file is created, nothing gets written
            self.open("w").close()
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(self, *a, **kw)
    monkeypatch.setattr(Path, "write_text", write_text)
    marker = tree / "results" / "91_fig" / "smoke.failed"
    with pytest.raises(OSError, match="smoke.failed") as e:
        runner.run_notebook("91_fig", "smoke")
    assert str(marker) in str(e.value) and "free space" in str(e.value)
    assert not marker.exists()
    assert not (tree / "results" / "91_fig" / "smoke.tmp").exists()


def test_a_full_disk_inside_the_kernel_names_where_the_run_writes(tree, monkeypatch):
    import papermill
    _notebook(tree / "notebooks" / "91_fig.ipynb", FIGURE_THEN.format(then=""))
    monkeypatch.setattr(papermill, "execute_notebook",
                        _fake_execute(exc=RuntimeError("OSError: [Errno 28] No space left on device")))
    out = io.StringIO()
    assert runner.run(["91_fig"], "smoke", {}, stream=out) == 1
    assert "disk is full" in out.getvalue() and str(tree / "results" / "91_fig") in out.getvalue()


@pytest.mark.parametrize("param", ["bm25_k1=1e999", "bm25_k1=float('nan')", "scale=-1e999"])
def test_non_finite_parameter_values_are_refused_before_a_kernel_starts(tree, repo, monkeypatch, capsys, param):
    import papermill

    def no_kernel(*a, **kw):
        raise AssertionError("a kernel was started for a non-finite parameter")
    monkeypatch.setattr(papermill, "execute_notebook", no_kernel)
    if param.startswith("bm25"):
        monkeypatch.setattr(runner, "NOTEBOOKS", repo / "notebooks")
        nb = "01_baselines"
    else:
        nb = "90_tiny"
    value = param.split("=", 1)[1]
    if "nan" in value:                       # papermill's `-p bm25_k1 nan` arrives as a float NaN
        with pytest.raises(ValueError, match="finite number"):
            runner.fold_overrides(runner.notebook_path(nb), {"bm25_k1": float("nan")}, "smoke")
        return
    assert main(["run", nb, "--profile", "smoke", "-p", param]) == 2
    err = capsys.readouterr().err
    assert "must be a finite number" in err and param.split("=")[0] in err


def test_a_notebook_configuration_refuses_nan_from_papermill():
    # papermill run directly (`papermill ... -p bm25_k1 nan`): the notebook's config_for refuses it, naming it
    from toolkit.baselines import config_for
    with pytest.raises(ValueError, match="'bm25_k1' must be a finite number, got nan"):
        config_for("smoke", bm25_k1=float("nan"))
    from toolkit.config import non_finite
    assert non_finite({"a": [1.0, (2, float("inf"))]}) == float("inf") and non_finite({"a": 1.5}) is None


# ---------------------------------------------------------------- feedback stages: no git, shallow clone

def _repo_with_history(root: Path) -> Path:
    """A git repository with a commit (nothing kept): enough to clone shallowly."""
    def git(*args):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                       env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                            "GIT_COMMITTER_EMAIL": "t@t"})
    (root / "data" / "models" / "feedback").mkdir(parents=True)
    (root / "README").write_text("one\n")
    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "one")
    (root / "README").write_text("two\n")
    git("commit", "-q", "-am", "two")
    return root


@pytest.fixture()
def shallow(tmp_path, monkeypatch):
    from toolkit import paths
    from toolkit.feedback import stages
    full = _repo_with_history(tmp_path / "full")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{full}", str(clone)], check=True,
                   capture_output=True)
    monkeypatch.setattr(paths, "REPO", clone)
    monkeypatch.setattr(stages, "KEPT_DIR", clone / "data" / "models" / "feedback")
    monkeypatch.setattr(stages, "models_dir", lambda: tmp_path / "cache" / "feedback")
    return clone


def test_a_shallow_clone_says_git_fetch_unshallow_instead_of_retraining(shallow):
    from toolkit.feedback import stages
    with pytest.raises(stages.HistoryUnavailable, match="git fetch --unshallow"):
        stages.restore_from_history("standard-minilm-warmup-0123456789")


def test_feedback_warmup_standard_in_a_shallow_clone_exits_2_without_training(shallow, monkeypatch, capsys):
    from toolkit.feedback.__main__ import main as feedback_main
    from toolkit.retrieval import dual_encoder

    def no_training(*a, **kw):
        raise AssertionError("an hours-long retrain started in a shallow clone")
    monkeypatch.setattr(dual_encoder, "train_dual_encoder", no_training)
    assert feedback_main(["warmup", "--profile", "standard"]) == 2
    err = capsys.readouterr().err
    assert "git fetch --unshallow" in err and "TOOLKIT_RETRAIN=1" in err and "Traceback" not in err


def test_retrain_on_request_or_for_smoke_is_said_in_a_log_line(shallow, monkeypatch, caplog):
    from toolkit.feedback import stages
    caplog.set_level(logging.INFO, logger="toolkit.feedback")
    assert stages.restore_from_history("smoke-minilm-warmup-0123456789") is None
    monkeypatch.setenv("TOOLKIT_RETRAIN", "1")
    assert stages.restore_from_history("standard-minilm-warmup-0123456789") is None
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2 and all("shallow" in m and "training it" in m for m in lines)


def test_restoring_a_model_the_history_never_kept_says_so(tmp_path, monkeypatch, caplog):
    from toolkit import paths
    from toolkit.feedback import stages
    full = _repo_with_history(tmp_path / "full")
    monkeypatch.setattr(paths, "REPO", full)
    monkeypatch.setattr(stages, "KEPT_DIR", full / "data" / "models" / "feedback")
    caplog.set_level(logging.INFO, logger="toolkit.feedback")
    assert stages.restore_from_history("standard-never-kept") is None
    assert any("never kept" in r.getMessage() for r in caplog.records)


def test_no_git_on_path_trains_a_smoke_model_and_stops_a_standard_one(tmp_path, monkeypatch):
    # bug 9: stages._git was unguarded: FileNotFoundError: 'git' in notebook 30's smoke profile
    from toolkit.feedback import stages
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert stages._git("status") is None
    assert stages.restore_from_history("smoke-minilm-warmup-0123456789") is None
    with pytest.raises(stages.HistoryUnavailable, match="no `git` is on PATH"):
        stages.restore_from_history("standard-minilm-warmup-0123456789")


# ---------------------------------------------------------------- the method interface

def _toy_sets() -> dict[str, RetrievalDataset]:
    def doc(d, text):
        return Document(d, "cat", "tool", d, text)
    lib = {d: doc(d, t) for d, t in [("weather", "weather forecast city"), ("stocks", "stock price quote"),
                                     ("music", "song lyrics artist"), ("news", "latest news headlines")]}
    other = {d: doc(d, t) for d, t in [("mail", "send email"), ("maps", "route map directions")]}

    def ds(name, corpus, qs):
        return RetrievalDataset(name, corpus, {q: Query(q, t) for q, (t, _) in qs.items()},
                                {q: {g: 1} for q, (_, g) in qs.items()})
    return {"I1": ds("I1", lib, {"q1": ("weather in paris", "weather"), "q2": ("stock price of acme", "stocks")}),
            "I2": ds("I2", lib, {"q3": ("lyrics of a song", "music")}),
            "I3": ds("I3", lib, {"q5": ("latest news", "news")}),
            "UltraTool": ds("UT", other, {"q4": ("send an email", "mail")})}


class Overlap(Method):
    name, cheap = "overlap", True

    def offline(self, corpus):
        self.words = {d: set(doc.text.split()) for d, doc in corpus.items()}

    def online(self, queries):
        return {q: {d: float(len(set(t.split()) & w)) for d, w in self.words.items()} for q, t in queries.items()}


def _variant(online, name="variant", base=Overlap):
    return type(f"V_{name.replace(' ', '_')}", (base,), {"name": name, "cheap": False, "online": online})


def test_a_method_that_raises_is_marked_failed_and_the_others_are_kept():
    def online(self, queries):
        raise RuntimeError("index out of range in my method")
    lines = []
    res = B.run_benchmark({"overlap": Overlap, "broken": _variant(online, "broken")}, _toy_sets(), log=lines.append)
    assert set(res.per_query["method"]) == {"overlap"}
    assert {(f["method"], f["set"]) for f in res.failed} == {("broken", s) for s in ("I1", "I2", "I3", "UltraTool")}
    board = B.leaderboard(res, n_permutations=100)
    assert board.loc["broken", "failed"].count("RuntimeError: index out of range in my method") == 1
    assert board.loc["overlap", "failed"] == "" and board.loc["overlap", "NDCG@5 I1"] == 100.0
    assert any("broken" in line and "FAILED: RuntimeError" in line for line in lines)


def test_a_clean_run_has_no_failed_column():
    res = B.run_benchmark({"overlap": Overlap}, _toy_sets(), log=None)
    assert res.failed == [] and "failed" not in B.leaderboard(res, n_permutations=10).columns


def test_nan_scores_name_the_method_the_set_and_the_query():
    def online(self, queries):
        return {q: {"weather": float("nan"), "stocks": 1.0} for q in queries}
    res = B.run_benchmark({"nan method": _variant(online, "nan method")}, _toy_sets(), log=None)
    err = res.failed[0]["error"]
    assert "ValueError" in err and "'nan method' on I1" in err and "query 'q1'" in err and "'weather'" in err


def test_dropped_queries_and_unknown_document_ids_are_counted_in_warnings():
    def online(self, queries):
        run = Overlap.online(self, queries)
        run.pop("q2", None)                                   # drops one of I1's two queries
        for r in run.values():
            r["no-such-api"] = 0.5
        return run
    lines = []
    res = B.run_benchmark({"sloppy": _variant(online, "sloppy")}, _toy_sets(), log=lines.append)
    assert any("'sloppy' on I1: 1 of 2 queries missing from the run, scored 0" in w for w in res.warnings)
    assert sum("1 document ids not in the corpus" in w for w in res.warnings) == 4
    assert any(line.startswith("  warning: method 'sloppy' on I1") for line in lines)
    assert res.scores("sloppy", "I1")["q2"] == 0.0       # still scored, as before, but no longer silently


@pytest.mark.parametrize("shape,expect", [
    (lambda queries: [("weather", 1.0)], "got list (a list of (doc_id, score) pairs?"),
    (lambda queries: {q: [("weather", 1.0)] for q in queries}, "must be {doc_id: score}, got list"),
    (lambda queries: {q: {"weather": "high"} for q in queries}, "the score must be a number, got str 'high'"),
])
def test_a_run_of_the_wrong_shape_gets_a_message_saying_what_is_expected(shape, expect):
    res = B.run_benchmark({"shape": _variant(lambda self, queries: shape(queries), "shape")}, _toy_sets(), log=None)
    assert res.failed and expect in res.failed[0]["error"] and "method 'shape' on I1" in res.failed[0]["error"]


def test_an_instance_instead_of_a_class_is_refused_before_anything_runs():
    with pytest.raises(TypeError, match=r"methods\['mine'\] is an instance of Overlap; give the class .*"
                                        r"\{'mine': Overlap\}"):
        B.run_benchmark({"BM25": Overlap, "mine": Overlap()}, _toy_sets(), log=None)
    with pytest.raises(TypeError, match="must be a Method class or a zero-argument factory, got str"):
        B.run_benchmark({"mine": "Overlap"}, _toy_sets(), log=None)


def test_method_pending_with_text_says_how_to_raise_it():
    with pytest.raises(TypeError, match=r"MethodPending takes a Pending record, got str 'no answers'.*"
                                        r"Pending\(reason='no answers', command="):
        MethodPending("no answers")
    assert MethodPending(Pending("r", "cmd")).pending.command == "cmd"


def test_each_method_gets_a_progress_line_before_it_runs():
    lines = []
    B.run_benchmark({"overlap": Overlap, "again": Overlap}, _toy_sets(), log=lines.append)
    starts = [line for line in lines if line.endswith(" ...")]
    assert starts == ["[1/4] overlap on I1/I2/I3 ...", "[2/4] overlap on UltraTool ...",
                      "[3/4] again on I1/I2/I3 ...", "[4/4] again on UltraTool ..."]


def test_a_method_slower_than_the_timeout_is_marked_failed():
    def online(self, queries):
        time.sleep(3)
        return Overlap.online(self, queries)
    t = time.time()
    res = B.run_benchmark({"slow": _variant(online, "slow"), "overlap": Overlap}, _toy_sets(), log=None,
                          timeout_s=0.3)
    assert time.time() - t < 3
    assert res.failed[0]["error"].startswith("MethodTimeout: method 'slow' on I1/I2/I3 took longer than timeout_s=0.3")
    assert set(res.per_query["method"]) == {"overlap"}
    with pytest.raises(ValueError, match="timeout_s must be > 0"):
        B.run_benchmark({"overlap": Overlap}, _toy_sets(), log=None, timeout_s=0)


def test_a_combination_costs_the_sum_of_its_parts_by_benchmark_key_not_name():
    # bug 13: a user method named "BM25" made "mine + BM25" cost 2 x the suite's BM25
    def slow_online(self, queries):
        time.sleep(0.05)
        return Overlap.online(self, queries)
    Fast = _variant(Overlap.online, "BM25")
    Mine = _variant(slow_online, "BM25")                    # the user's method, named like the suite's
    sets = {k: v for k, v in _toy_sets().items() if k != "UltraTool"}
    res = B.run_benchmark({"BM25": Fast, "mine": Mine, "mine + BM25": lambda: Fusion("mine + BM25", [Mine, Fast])},
                          sets, log=None)
    assert res.parts["mine + BM25"] == ["mine", "BM25"]
    fused = res.costs["mine + BM25"].ms_per_query
    assert fused == pytest.approx(res.costs["mine"].ms_per_query + res.costs["BM25"].ms_per_query)
    assert fused > 10 * res.costs["BM25"].ms_per_query          # the slow part counted, not BM25 twice


def test_a_combination_of_factories_finds_its_parts_by_type_and_name():
    dense_like = lambda: Overlap()                          # noqa: E731 (a fresh lambda per use, as dense("minilm"))
    sets = {k: v for k, v in _toy_sets().items() if k != "UltraTool"}
    res = B.run_benchmark({"overlap": lambda: Overlap(), "fused": lambda: Fusion("fused", [dense_like])}, sets,
                          log=None)
    assert res.parts["fused"] == ["overlap"]


# ---------------------------------------------------------------- significance: NaN

def test_a_nan_score_is_refused_by_the_randomization_test_naming_the_query():
    # bug 12: one NaN gave diff = nan and p = 9.999e-05, printed "p<0.001" beside "within noise"
    a = {"q1": 0.5, "q2": float("nan"), "q3": 0.2}
    b = {"q1": 0.4, "q2": 0.3, "q3": 0.2}
    with pytest.raises(ValueError, match=r"first system's score is not a finite number for 1 query \(e.g. 'q2': nan\)"):
        paired_randomization(a, b, n_permutations=100)
    with pytest.raises(ValueError, match=r"second system's .* in group 'g2'"):
        macro_paired_randomization({"g1": b, "g2": b}, {"g1": b, "g2": a}, n_permutations=100)


def test_a_p_that_is_not_a_number_is_not_labelled_significant():
    assert p_label(float("nan")) == "p=n/a" and p_label(None) == "p=n/a"
    assert p_label(0.0001) == "p<0.001" and p_label(0.0123) == "p=0.012"
    tests = [{"comparison": "A vs B", "p": float("nan")}, {"comparison": "C vs D", "p": 0.001}]
    assert [t["comparison"] for t in within_noise(tests)] == ["A vs B"]
