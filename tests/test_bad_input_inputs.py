"""Issue 53, second round of bad-input probes: a damaged, changed or wrong-backend input never becomes a successful
run. Each of the three bugs has a test that fails on the code before the fix (noted per test)."""
from __future__ import annotations

import gzip
import io
import json
import shutil

import pytest

from toolkit import provenance


# --- bug 1: a duplicated trace line changed a table silently --------------------------------------------------

def _trace_line(qid, text="find a tool"):
    return json.dumps({"qid": qid, "instructions": [text], "runs": [[["a/b/c", 0.9]]], "seconds": [], "answers": []})


def test_a_second_line_for_one_instruction_is_an_error_naming_the_file_and_both_lines(tmp_path):
    """Before: load_traces kept the last line for a qid, and a copied line with another query's qid changed 12 cells."""
    from toolkit.feedback.experiment import load_traces
    p = tmp_path / "standard-test-I1-x.jsonl"
    p.write_text(_trace_line("q1") + "\n" + _trace_line("q2") + "\n" + _trace_line("q2", "copied") + "\n")
    with pytest.raises(ValueError, match=r"standard-test-I1-x.jsonl:3: a second trace for instruction 'q2' \(the first "
                                         r"is on line 2\)"):
        load_traces(p)


def test_a_clean_trace_file_loads(tmp_path):
    from toolkit.feedback.experiment import load_traces
    p = tmp_path / "t.jsonl"
    p.write_text(_trace_line("q1") + "\n" + _trace_line("q2") + "\n")
    assert list(load_traces(p)) == ["q1", "q2"]


def test_a_committed_trace_changed_after_the_run_fails_the_check_naming_it(tmp_path):
    """The results JSON records each committed input with its sha256; an edit to one (a duplicated line) is found."""
    root = tmp_path
    trace = root / "data" / "feedback_traces" / "standard-test-I1-abc.jsonl"
    trace.parent.mkdir(parents=True)
    trace.write_text(_trace_line("q1") + "\n")
    recorded = [{"path": "data/feedback_traces/standard-test-I1-abc.jsonl", "records": 1, "kind": "feedback trace",
                 "sha256": provenance.sha256(trace)}]
    assert provenance.problems(recorded, root=root) == []
    with open(trace, "a") as f:
        f.write(_trace_line("q2") + "\n")
    (msg,) = provenance.problems(recorded, root=root)
    assert msg.startswith("data/feedback_traces/standard-test-I1-abc.jsonl: this feedback trace changed since the run")
    trace.unlink()
    (msg,) = provenance.problems(recorded, root=root)
    assert "is missing now" in msg and "git checkout -- data/feedback_traces/standard-test-I1-abc.jsonl" in msg


def test_check_exits_non_zero_and_names_a_changed_input(tmp_path, monkeypatch, repo):
    """`python -m toolkit check` reads the recorded inputs of every results JSON it checks."""
    from toolkit import check
    results = tmp_path / "results"
    (results / "99_probe").mkdir(parents=True)
    exp = tmp_path / "expected"
    (exp / "99_probe").mkdir(parents=True)
    target = repo / "data" / "paper_numbers" / "reinvoke.yaml"           # any committed file stands in for a trace
    doc = {"cells": [{"paper": "p", "table": "1", "dataset": "d", "method": "m", "metric": "ndcg@5", "value": 0.5}],
           "inputs": [{"path": "data/paper_numbers/reinvoke.yaml", "records": 1, "kind": "feedback trace",
                       "sha256": "0" * 64}], "llm": []}
    (results / "99_probe" / "standard.json").write_text(json.dumps(doc))
    (exp / "99_probe" / "standard.yaml").write_text(
        "cells:\n- {paper: p, table: '1', dataset: d, method: m, metric: ndcg@5, value: 0.5}\n")
    monkeypatch.setattr(check, "results_dir", lambda: results)
    monkeypatch.setattr(check, "EXPECTED", exp)
    out = io.StringIO()
    assert check.main(["--profile", "standard", "--notebook", "99_probe"], stream=out) == 1
    text = out.getvalue()
    assert "INPUT   99_probe: data/paper_numbers/reinvoke.yaml: this feedback trace changed since the run" in text
    assert target.is_file()
    doc["inputs"][0]["sha256"] = provenance.sha256(target)
    (results / "99_probe" / "standard.json").write_text(json.dumps(doc))
    assert check.main(["--profile", "standard", "--notebook", "99_probe"], stream=io.StringIO()) == 0


def test_the_recorder_writes_what_the_run_read(tmp_path, monkeypatch, repo):
    from toolkit.results import Recorder
    monkeypatch.setenv("TOOLKIT_RESULTS", str(tmp_path))
    provenance.reset()
    provenance.record_input(repo / "data" / "paper_numbers" / "reinvoke.yaml", records=3, kind="probe")
    provenance.record_input(tmp_path / "outside.json", records=1)            # outside the repository: not an input
    provenance.record_llm("ns", "m", "replay", "replay", from_env=False)
    rec = Recorder("probe", "smoke")
    doc = json.loads(rec.save().read_text())
    assert doc["inputs"] == [{"path": "data/paper_numbers/reinvoke.yaml", "records": 3, "kind": "probe",
                              "sha256": provenance.sha256(repo / "data" / "paper_numbers" / "reinvoke.yaml")}]
    assert doc["llm"] == [{"namespace": "ns", "model": "m", "backend": "replay", "mode": "replay", "from_env": False}]
    provenance.reset()


def test_reading_a_committed_llm_cache_records_it(repo):
    from toolkit.llm.cache import ResponseCache
    provenance.reset()
    c = ResponseCache(repo / "data" / "llm_cache", "reinvoke_hyde", "qwen2.5-coder-1.5b-instruct-q4_k_m", readonly=True)
    c.refresh()
    (row,) = provenance.inputs()
    assert row["path"] == "data/llm_cache/reinvoke_hyde/qwen2.5-coder-1.5b-instruct-q4_k_m.jsonl"
    assert row["records"] > 0 and row["kind"] == "LLM response cache" and len(row["sha256"]) == 64
    provenance.reset()


# --- bug 2: a killed ToolRerank smoke run broke the next one ---------------------------------------------------

def test_a_held_out_draw_never_writes_the_main_runs_score_cache():
    """Before: in smoke, draw seed 0 had the main run's setup and sizes, so both wrote smoke-<key>.json.gz, the draw
    first; a run killed between the two left a cache without the main run's sets (KeyError on the next run)."""
    from toolkit.toolrerank import score_cache
    from toolkit.toolrerank.config import config_for
    from toolkit.toolrerank.draws import draw_config
    from toolkit.toolrerank.experiment import toollens_split
    cfg = config_for("smoke")
    main_path = score_cache.cache_path(cfg, toollens_split(cfg.setup))
    for seed in cfg.draw_seeds:
        d = draw_config(cfg, seed)
        p = score_cache.cache_path(d, toollens_split(d.setup), draw=seed)
        assert p != main_path and p.name.startswith(f"smoke-draw{seed}-")


def test_the_committed_draw_caches_are_where_the_draws_look(repo):
    from toolkit.toolrerank import score_cache
    from toolkit.toolrerank.config import config_for
    from toolkit.toolrerank.draws import draw_config
    from toolkit.toolrerank.experiment import toollens_split
    from toolkit.toolrerank.config import first_run_config
    cfg = first_run_config()                       # the first standard runs: every draw trained and committed
    for seed in cfg.draw_seeds:
        d = draw_config(cfg, seed)
        assert score_cache.cache_path(d, toollens_split(d.setup), draw=seed).is_file(), seed
    # the fair standard profile: draw 0 is the main run's split and replays the committed main cache
    cfg = config_for("standard")
    d = draw_config(cfg, 0)
    assert score_cache.cache_path(d, toollens_split(d.setup)).is_file()


@pytest.mark.parametrize("damage", ["truncate", "bitflip", "not-gzip", "no-sets"])
def test_a_damaged_score_cache_is_an_error_naming_the_file_and_the_way_out(tmp_path, repo, damage):
    from toolkit.toolrerank import score_cache
    src = repo / "data" / "score_cache" / "toolrerank" / "standard-draw0-b50c3e58bb5a.json.gz"
    p = tmp_path / "standard-x.json.gz"
    data = src.read_bytes()
    if damage == "truncate":
        p.write_bytes(data[: len(data) // 2])
    elif damage == "bitflip":
        b = bytearray(data)
        b[len(b) // 2] ^= 0xFF
        p.write_bytes(bytes(b))
    elif damage == "not-gzip":
        p.write_text("{}")
    else:
        with gzip.open(p, "wt") as f:
            json.dump({"version": 2, "meta": {}}, f)
    with pytest.raises(ValueError, match=r"standard-x.json.gz: the score cache is damaged .*git checkout -- "):
        score_cache.load(p, {}, set())


# --- bug 3: a leftover TOOLKIT_LLM_BACKEND=echo wrote echo numbers as results -----------------------------------

def test_a_leftover_echo_backend_is_refused_by_the_replaying_profiles(monkeypatch, tmp_path):
    """Before: `TOOLKIT_LLM_BACKEND=echo python -m toolkit run 40_querygen --profile smoke` ended "ok"."""
    from toolkit.llm.base import LLMError
    from toolkit.querygen.generation import client as querygen_client
    monkeypatch.setenv("TOOLKIT_LLM_BACKEND", "echo")
    with pytest.raises(LLMError, match="TOOLKIT_LLM_BACKEND=echo is set, and the standard profile"):
        querygen_client("standard")


def test_an_echo_backend_chosen_by_the_environment_fails_the_check():
    llm = [{"namespace": "querygen_zeroshot", "model": "echo", "backend": "echo", "mode": "live", "from_env": True}]
    (msg,) = provenance.problems([], llm)
    assert "TOOLKIT_LLM_BACKEND=echo" in msg and "querygen_zeroshot" in msg
    # the feedback smoke profile's own echo LLM (its configuration, not the environment) is not a problem
    assert provenance.problems([], [{**llm[0], "from_env": False}]) == []


# --- a failed run never replaces a committed file ----------------------------------------------------------------

@pytest.mark.notebook
def test_a_failed_run_keeps_the_last_good_executed_notebook(tmp_path, monkeypatch, repo):
    from toolkit import runner
    nbs = tmp_path / "notebooks"
    nbs.mkdir()
    shutil.copy(repo / "tests" / "fixtures" / "tiny_notebook.json", nbs / "90_tiny.ipynb")
    monkeypatch.setattr(runner, "NOTEBOOKS", nbs)
    monkeypatch.setenv("TOOLKIT_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("TOOLKIT_FIGURES", str(tmp_path / "figures"))
    assert runner.run(["90_tiny"], "standard", {}, stream=io.StringIO()) == 0
    stored = tmp_path / "results" / "90_tiny" / "standard.ipynb"
    good = stored.read_bytes()
    assert runner.run(["90_tiny"], "standard", {"flag": True}, stream=io.StringIO()) == 1
    assert stored.read_bytes() == good                                 # before: replaced by the failed run
    assert (tmp_path / "results" / "90_tiny" / "standard.failed.ipynb").is_file()
    assert "standard.failed.ipynb" in (tmp_path / "results" / "90_tiny" / "standard.failed").read_text()
    assert runner.run(["90_tiny"], "standard", {}, stream=io.StringIO()) == 0
    assert not (tmp_path / "results" / "90_tiny" / "standard.failed.ipynb").exists()


# --- options and environment variables checked before work starts, each failure one clear line ----------------

@pytest.mark.parametrize("cmd", [["check"], ["compare"]])
@pytest.mark.parametrize("value", ["nan", "inf", "-1", "abc"])
def test_a_tolerance_that_is_not_a_finite_number_is_refused(cmd, value, capsys):
    from toolkit.__main__ import main
    with pytest.raises(SystemExit) as e:
        main([*cmd, "--profile", "standard", "--tolerance", value])
    assert e.value.code == 2
    assert "--tolerance" in capsys.readouterr().err


def test_check_refuses_a_notebook_name_that_is_a_path(capsys):
    from toolkit.__main__ import main
    assert main(["check", "--write", "--notebook", "../results/01_baselines"]) == 2
    assert "is not a notebook name" in capsys.readouterr().err


def test_check_reports_a_run_without_expected_values_and_a_failed_last_run(tmp_path, monkeypatch):
    """Before: a notebook without data/expected/<nb>/<profile>.yaml was skipped in silence, and a .failed marker
    (whose cells are the previous run's) passed."""
    from toolkit import check
    results, exp = tmp_path / "results", tmp_path / "expected"
    for nb in ("98_a", "99_b"):
        (results / nb).mkdir(parents=True)
        (results / nb / "standard.json").write_text(json.dumps({"cells": [], "inputs": [], "llm": []}))
    (exp / "98_a").mkdir(parents=True)
    (exp / "98_a" / "standard.yaml").write_text("cells: []\n")
    monkeypatch.setattr(check, "results_dir", lambda: results)
    monkeypatch.setattr(check, "EXPECTED", exp)
    out = io.StringIO()
    assert check.main(["--profile", "standard"], stream=out) == 1
    assert "NOEXPECT99_b: results/99_b/standard.json has no expected values" in out.getvalue()
    (exp / "99_b").mkdir()
    (exp / "99_b" / "standard.yaml").write_text("cells: []\n")
    assert check.main(["--profile", "standard"], stream=io.StringIO()) == 0
    (results / "98_a" / "standard.failed").write_text("2026-11-28 RuntimeError: boom\n")
    out = io.StringIO()
    assert check.main(["--profile", "standard"], stream=out) == 1
    assert "FAILED  98_a: the last standard run failed" in out.getvalue() and "boom" in out.getvalue()


def test_overrides_that_are_not_a_dict_name_the_parameter():
    from toolkit import runner
    with pytest.raises(TypeError, match="parameter 'overrides' must be a dict of configuration fields.*got int 5"):
        runner.fold_overrides(runner.notebook_path("20_reinvoke"), {"overrides": 5}, "standard")


def test_a_bad_thread_count_names_its_variable(monkeypatch):
    from toolkit.llm.backends import default_threads
    monkeypatch.setenv("TOOLKIT_LLM_THREADS", "abc")
    with pytest.raises(ValueError, match="TOOLKIT_LLM_THREADS must be a whole number of CPU threads, got 'abc'"):
        default_threads()
    monkeypatch.setenv("TOOLKIT_LLM_THREADS", "0")
    with pytest.raises(ValueError, match="TOOLKIT_LLM_THREADS must be >= 1"):
        default_threads()


def test_a_replay_cache_that_does_not_exist_names_the_variable(monkeypatch, tmp_path):
    """Before: TOOLKIT_LLM_CACHE=/nonexistent gave a run that ended "ok" with 120 cells missing."""
    from toolkit.llm.base import LLMError
    from toolkit.llm.client import client_for_profile
    monkeypatch.delenv("TOOLKIT_LLM_BACKEND", raising=False)
    monkeypatch.setenv("TOOLKIT_LLM_CACHE", str(tmp_path / "nonexistent"))
    with pytest.raises(LLMError, match=r"is not a directory \(TOOLKIT_LLM_CACHE=.*unset TOOLKIT_LLM_CACHE"):
        client_for_profile("standard", "qwen-1.5b", namespace="reinvoke_intents")


def test_check_piped_into_head_ends_without_a_traceback(repo):
    import subprocess
    import sys
    r = subprocess.run(f"{sys.executable} -m toolkit check --profile standard | head -1", shell=True, cwd=repo,
                       capture_output=True, text=True, timeout=300)
    assert "Traceback" not in r.stderr and "BrokenPipeError" not in r.stderr, r.stderr


def test_querygen_ablate_checks_every_table_before_the_first_row_runs(monkeypatch):
    """Before: `--tables 3,9` started four hours of Table 3 rows before it rejected table 9."""
    from toolkit.querygen import __main__ as qmain
    from toolkit.querygen import ablation
    ran = []
    monkeypatch.setattr(ablation, "in_own_process", lambda *a, **k: ran.append(a) or 0)
    with pytest.raises(SystemExit, match="unknown table '9'"):
        qmain.main(["ablate", "--tables", "3,9"])
    assert ran == []


def test_querygen_set_errors_are_one_line_with_exit_code_2(capsys):
    from toolkit.querygen import __main__ as qmain
    with pytest.raises(SystemExit) as e:
        qmain.main(["zeroshot", "--set", "bogus=1"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--set:" in err and "bogus" in err and "Traceback" not in err


@pytest.mark.parametrize("argv, message", [
    (["status", "--group", "I9"], "--group 'I9' is not a group"),
    (["test", "--group", "I9"], "--group 'I9' is not a group"),
    (["status", "--group", "I2"], "--group is for test and toolretriever, not status"),
    (["status", "--condition", "4:w/o warmup"], "is not a row of Tables 4, 6 or 7"),
])
def test_feedback_cli_refuses_a_misspelt_group_or_condition(argv, message, capsys):
    from toolkit.feedback.__main__ import main
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert message in (str(e.value.code) + capsys.readouterr().err)


@pytest.mark.parametrize("text, message", [
    ("cells: [\n  - {paper: p", "not valid YAML"),
    ("cells:\n- {paper: p, table: '1', dataset: d, method: m, metric: ndcg@5, value: abc}\n", "has value 'abc', not a number"),
    ("cells:\n- {paper: p, table: '1', dataset: d, method: m, metric: ndcg@5, value: null}\n", "has value None, not a number"),
    ("- just a list\n", "expected a mapping with a 'cells' list"),
])
def test_a_damaged_expected_file_names_the_file_and_the_cell(tmp_path, monkeypatch, text, message):
    from toolkit import check
    monkeypatch.setattr(check, "EXPECTED", tmp_path)
    (tmp_path / "01_x").mkdir()
    (tmp_path / "01_x" / "smoke.yaml").write_text(text)
    with pytest.raises(ValueError, match=message) as e:
        check.read_expected("01_x", "smoke")
    assert "01_x/smoke.yaml" in str(e.value)


def test_expected_nan_is_still_a_number(tmp_path, monkeypatch):
    from toolkit import check
    monkeypatch.setattr(check, "EXPECTED", tmp_path)
    (tmp_path / "01_x").mkdir()
    (tmp_path / "01_x" / "smoke.yaml").write_text(
        "cells:\n- {paper: p, table: '1', dataset: d, method: m, metric: ndcg@5, value: .nan}\n")
    (v,) = check.read_expected("01_x", "smoke").values()
    assert v != v


def test_a_truncated_trace_meta_file_names_itself(tmp_path):
    from toolkit.feedback.experiment import load_meta
    trace = tmp_path / "standard-test-I1-x.jsonl"
    trace.write_text(_trace_line("q1") + "\n")
    (tmp_path / "standard-test-I1-x.meta.json").write_text('{"model": "a", "seco')
    with pytest.raises(ValueError, match=r"standard-test-I1-x.meta.json: the trace's meta file is damaged"):
        load_meta(trace)


def test_a_truncated_alignment_history_names_itself(tmp_path):
    from toolkit.querygen.experiment import _read_history
    p = tmp_path / "querygen-align-x.history.json"
    p.write_text('{"history": [{"iteration": 1, ')
    with pytest.raises(ValueError, match=r"querygen-align-x.history.json: the alignment history is damaged"):
        _read_history(str(p), 1, 1)


@pytest.mark.parametrize("field", ["zero_shot_model", "generator_base"])
def test_querygen_refuses_a_model_the_replaying_profiles_have_no_answers_for(field):
    """Before: `-p zero_shot_model=nonexistent-model` ended "ok" with 24 cells pending."""
    from toolkit.querygen.config import config_for
    with pytest.raises(ValueError, match=f"{field} must be a local model under the standard profile"):
        config_for("standard", **{field: "nonexistent-model"})
    assert getattr(config_for("paper", **{field: "some/hub-model"}), field) == "some/hub-model"


def test_a_nested_setting_is_overridden_with_a_dict_and_checked_field_by_field():
    """Before: -p 'training={"rounds": 2}' said "must be IterationConfig"."""
    from toolkit.feedback.config import config_for
    cfg = config_for("standard", training={"rounds": 2})
    assert cfg.training.rounds == 2 and cfg.training.max_seq_length == 128      # the rest stays the profile's
    with pytest.raises(ValueError, match="30_feedback training has no parameter 'round'"):
        config_for("standard", training={"round": 2})
    with pytest.raises(TypeError, match="30_feedback training parameter 'rounds' must be int"):
        config_for("standard", training={"rounds": "two"})


def test_a_cut_line_in_a_committed_llm_cache_stops_the_results_from_being_saved(tmp_path, monkeypatch, repo):
    """Before: a cut line in a query-generation cache silently dropped 21 Zero-Shot cells from a run that ended ok."""
    from toolkit.llm.cache import ResponseCache
    from toolkit.results import Recorder
    monkeypatch.setenv("TOOLKIT_RESULTS", str(tmp_path / "results"))
    src = repo / "data" / "llm_cache" / "reinvoke_hyde" / "qwen2.5-coder-1.5b-instruct-q4_k_m.jsonl"
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    scratch = repo / "data" / "llm_cache" / "zz_probe_damaged"      # inside the repository: a committed input
    try:
        scratch.mkdir()
        (scratch / src.name).write_text("".join(lines[:6]) + lines[6][: len(lines[6]) // 2] + "\n" + "".join(lines[7:12]))
        provenance.reset()
        c = ResponseCache(repo / "data" / "llm_cache", "zz_probe_damaged", "qwen2.5-coder-1.5b-instruct-q4_k_m",
                          readonly=True)
        c.refresh()
        assert c.damaged
        with pytest.raises(ValueError, match=r"(?s)results not saved.*zz_probe_damaged/.*1 damaged record\(s\) skipped"):
            Recorder("probe", "smoke").save()
        assert not (tmp_path / "results" / "probe" / "smoke.json").exists()
        row = provenance.inputs()[0]
        assert "damaged record" in provenance.problems([row])[0]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        provenance.reset()


def _committed_copy(tmp_path, repo):
    """A data/ tree with one of each committed input kind, copied from the repository."""
    d = tmp_path / "data"
    src = repo / "data"
    for rel in ("llm_cache/reinvoke_hyde/qwen2.5-coder-1.5b-instruct-q4_k_m.jsonl",
                "feedback_traces/standard-test-I1-1e552d2205.jsonl", "feedback_traces/standard-test-I1-1e552d2205.meta.json",
                "score_cache/toolrerank/standard-draw0-b50c3e58bb5a.json.gz"):
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src / rel, d / rel)
    return d


def test_verify_passes_the_committed_inputs_and_names_each_kind_of_damage(tmp_path, repo):
    from toolkit.committed import verify_committed
    d = _committed_copy(tmp_path, repo)
    assert set(verify_committed(d).values()) == {"ok"}
    trace = d / "feedback_traces" / "standard-test-I1-1e552d2205.jsonl"
    lines = trace.read_text().splitlines(keepends=True)
    dup = json.loads(lines[0])
    dup["qid"] = json.loads(lines[1])["qid"]
    trace.write_text("".join(lines) + json.dumps(dup) + "\n")              # bug 1's probe
    cache = d / "llm_cache" / "reinvoke_hyde" / "qwen2.5-coder-1.5b-instruct-q4_k_m.jsonl"
    text = cache.read_text().splitlines(keepends=True)
    cache.write_text("".join(text[:5]) + text[5][:40] + "\n" + "".join(text[6:]))
    sc = d / "score_cache" / "toolrerank" / "standard-draw0-b50c3e58bb5a.json.gz"
    sc.write_bytes(sc.read_bytes()[:1000])
    status = {k.rsplit("/", 1)[-1]: v for k, v in verify_committed(d).items()}
    assert "a second trace for instruction" in status["standard-test-I1-1e552d2205.jsonl"]
    assert "1 damaged line(s)" in status["qwen2.5-coder-1.5b-instruct-q4_k_m.jsonl"]
    assert status["standard-draw0-b50c3e58bb5a.json.gz"].startswith("damaged")


def test_verify_finds_a_trace_shorter_than_its_meta_says(tmp_path, repo):
    from toolkit.committed import verify_committed
    d = _committed_copy(tmp_path, repo)
    trace = d / "feedback_traces" / "standard-test-I1-1e552d2205.jsonl"
    trace.write_text("".join(trace.read_text().splitlines(keepends=True)[:-1]))
    status = {k.rsplit("/", 1)[-1]: v for k, v in verify_committed(d).items()}
    assert "its meta calls it complete with 150 instructions, the file holds 149" in \
        status["standard-test-I1-1e552d2205.jsonl"]


def test_a_missing_alignment_history_makes_figure_4s_reward_cells_pending_with_the_reason(monkeypatch, no_llm):
    """Before: with the history file gone, Figure 4's reward cells disappeared without a word."""
    from toolkit.querygen import experiment as E
    from toolkit.querygen.config import config_for
    cfg = config_for("smoke")
    s = E.setup(cfg)
    monkeypatch.setattr(E, "align_history", lambda cfg: [])
    a = E.alignment(cfg, s)
    assert a.iterations, "the smoke alignment answers are committed"
    rows = [p for p in a.pending if p["method"].endswith("reward (Figure 4)")]
    assert [p["method"] for p in rows] == [f"Alignment it{t} reward (Figure 4)" for t in sorted(a.iterations)]
    assert "querygen-align-" in rows[0]["reason"] and rows[0]["reason"].endswith(("is missing", "lacks this iteration"))


def test_feedback_status_counts_trace_lines_not_the_meta_and_names_a_damaged_trace(tmp_path, monkeypatch, capsys):
    """Before: status read only meta.json, so it said "nothing left" over an emptied or damaged trace."""
    from toolkit.feedback import __main__ as fmain
    from toolkit.feedback import budget as B
    from toolkit.feedback import experiment as X
    full, emptied, damaged = (tmp_path / f"standard-test-{g}-x.jsonl" for g in ("I1", "I2", "I3"))
    full.write_text(_trace_line("a") + "\n" + _trace_line("b") + "\n")
    emptied.write_text("")
    damaged.write_text(_trace_line("c") + "\n" + _trace_line("c") + "\n")
    for p, n in ((full, 2), (emptied, 2), (damaged, 2)):
        X.meta_path(p).write_text(json.dumps({"complete": True, "instructions": n, "wall_s": 10.0}))
    stages = [X.LLMStage(f"test {g}", f"test {g}", None, p, ("a", "b") if g == "I1" else ("c", "d"), g)
              for g, p in (("I1", full), ("I2", emptied), ("I3", damaged))]
    monkeypatch.setattr(X, "llm_stages", lambda cfg, tests: stages)
    monkeypatch.setattr(X, "test_datasets", lambda cfg: {})
    frame = B.progress(None, {})
    assert frame.loc["test I1", "traced"] == 2 and frame.loc["test I2", "traced"] == 0
    assert "a second trace for instruction 'c'" in frame.loc["test I3", "problem"]
    from toolkit.feedback.config import config_for
    with pytest.raises(SystemExit, match="1 stage"):
        fmain.print_status(config_for("standard"))
    out = capsys.readouterr().out
    assert "DAMAGED test I3" in out and "nothing left" not in out


def test_a_damaged_trace_line_is_an_error_for_replay_and_skipped_for_a_resumed_stage(tmp_path):
    """Before: one damaged line made `feedback all` advise deleting a file of 150 good lines (~2.8 h of generation)."""
    from toolkit.feedback.experiment import load_traces
    p = tmp_path / "standard-test-I1-x.jsonl"
    p.write_text(_trace_line("q1") + "\n" + _trace_line("q2")[:30] + "\n" + _trace_line("q3") + "\n")
    with pytest.raises(ValueError, match=r"standard-test-I1-x.jsonl:2: not a feedback trace line .*regenerates that "
                                         r"instruction alone"):
        load_traces(p)
    assert list(load_traces(p, skip_damaged=True)) == ["q1", "q3"]


def test_feedback_checks_its_encoder_and_groups_before_any_work():
    """Before: -p base=nonexistent-encoder ran 300 s of encoding first, and test_requests={"I9": ...} meant "all"."""
    from toolkit.feedback.config import config_for
    with pytest.raises(ValueError, match="30_feedback parameter base must be minilm, mpnet or a local model directory"):
        config_for("standard", base="nonexistent-encoder")
    with pytest.raises(ValueError, match="test_requests has no group 'I9'"):
        config_for("standard", test_requests={"I9": 50})
    assert config_for("standard", base="mpnet").base == "mpnet"


@pytest.mark.parametrize("name", ["\N{ROBOT FACE}", "nonexistent-encoder"])
def test_an_unknown_encoder_name_offline_is_a_clear_error_before_loading(name, monkeypatch):
    from toolkit.retrieval.models import resolve_model
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(FileNotFoundError, match="not a local directory and not a registered encoder"):
        resolve_model(name)


def test_a_toolkit_cache_that_is_a_file_names_the_variable(tmp_path, monkeypatch):
    from toolkit.paths import cache_dir
    f = tmp_path / "a-file"
    f.write_text("x")
    monkeypatch.setenv("TOOLKIT_CACHE", str(f))
    with pytest.raises(NotADirectoryError, match="TOOLKIT_CACHE=.*cannot be used as a directory"):
        cache_dir()


def test_a_field_of_another_run_is_an_input_by_its_digest_alone(tmp_path, monkeypatch):
    """Notebook 50 reads notebook 40's calibrated temperature: notebook 40's re-run (new timings) leaves notebook 50
    current; a new temperature makes it stale; a missing field is an error naming the file and the field."""
    monkeypatch.setattr(provenance, "_repo", lambda: tmp_path.resolve())
    other = tmp_path / "results" / "40_querygen" / "standard.json"
    other.parent.mkdir(parents=True)
    other.write_text(json.dumps({"seconds": 10, "calibration": {"Zero-Shot": {"best": 0.6}}}))
    provenance.reset()
    assert provenance.read_json_field(other, "calibration.Zero-Shot.best", kind="notebook 40 run") == 0.6
    (row,) = provenance.inputs()
    assert row["path"] == "results/40_querygen/standard.json" and row["field"] == "calibration.Zero-Shot.best"
    other.write_text(json.dumps({"seconds": 99, "calibration": {"Zero-Shot": {"best": 0.6}}}))
    assert provenance.problems([row], root=tmp_path) == []
    other.write_text(json.dumps({"seconds": 99, "calibration": {"Zero-Shot": {"best": 0.8}}}))
    (msg,) = provenance.problems([row], root=tmp_path)
    assert "field 'calibration.Zero-Shot.best'" in msg and "changed since the run" in msg
    other.write_text(json.dumps({"calibration": {}}))
    (msg,) = provenance.problems([row], root=tmp_path)
    assert "changed since the run" in msg and "-> none" in msg
    with pytest.raises(ValueError, match=r"results/40_querygen/standard.json: no field 'calibration.Zero-Shot.best'"):
        provenance.read_json_field(other, "calibration.Zero-Shot.best", kind="notebook 40 run")
    with pytest.raises(FileNotFoundError, match="missing.*run it"):
        provenance.read_json_field(tmp_path / "results" / "nope.json", "x", fix="run it")
    provenance.reset()
