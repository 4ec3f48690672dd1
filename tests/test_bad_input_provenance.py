"""Issue 83, part A: bad input on the provenance surfaces (verify, check, the committed caches and traces, the results
writer). Each bug and weak spot has a test; the docstring says what the code before the fix did (each of these tests
failed on it, except the ones marked "guard", which pin behaviour the fix must keep)."""
from __future__ import annotations

import gzip
import io
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from toolkit import check, provenance
from toolkit.paths import PROJECT_DATA, REPO, RESULTS

HYDE = PROJECT_DATA / "llm_cache" / "reinvoke_hyde" / "qwen2.5-coder-1.5b-instruct-q4_k_m.jsonl"
ALONE = sorted((PROJECT_DATA / "score_cache" / "toolrerank").glob("standard-alone-*.json.gz"))
I2_TRACE = PROJECT_DATA / "feedback_traces" / "standard-test-I2-2dc98f35ef.jsonl"


def _strict(text: str):
    """json.loads that refuses NaN / Infinity tokens (RFC 8259)."""
    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")
    return json.loads(text, parse_constant=refuse)


def _repo_at(monkeypatch, root: Path) -> None:
    """Make ``root`` the repository provenance records paths against (so a copied input can be edited)."""
    monkeypatch.setattr(provenance, "_repo", lambda: root.resolve())


def _copy_results(tmp_path: Path, *notebooks: str) -> Path:
    out = tmp_path / "results"
    for nb in notebooks:
        (out / nb).mkdir(parents=True)
        shutil.copy(RESULTS / nb / "standard.json", out / nb / "standard.json")
    return out


def _cell(metric="ndcg@5", value=0.5, method="m", **kw):
    return {"paper": "p", "table": "1", "dataset": "d", "method": method, "metric": metric, "value": value, **kw}


def _toy(tmp_path, monkeypatch, notebooks: dict[str, dict | str], expected: dict[str, str] | None = None) -> Path:
    """Results files (a dict is dumped, a str written as is) and expected YAMLs under ``tmp_path``; check reads them."""
    results, exp = tmp_path / "results", tmp_path / "expected"
    for nb, doc in notebooks.items():
        (results / nb).mkdir(parents=True)
        if doc is not None:
            (results / nb / "standard.json").write_text(doc if isinstance(doc, str) else json.dumps(doc))
    for nb, text in (expected or {}).items():
        (exp / nb).mkdir(parents=True, exist_ok=True)
        (exp / nb / "standard.yaml").write_text(text)
    monkeypatch.setattr(check, "results_dir", lambda: results)
    monkeypatch.setattr(check, "EXPECTED", exp)
    return results


ONE_CELL_YAML = ("cells:\n- {paper: p, table: '1', dataset: d, method: m, metric: ndcg@5, value: 0.5}\n")


# --- bug 1: verify --committed exited 1 on an untouched clone ---------------------------------------------------

def test_verify_committed_exits_0_on_the_committed_tree():
    """Before: exit 1, "BAD data/score_cache/toolrerank/standard-alone-...: holds no scored sets" (113/114)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    r = subprocess.run([sys.executable, "-m", "toolkit", "verify", "--committed"], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "BAD" not in r.stdout and "committed caches, traces and score caches ok" in r.stdout


def test_verify_reads_a_reranker_alone_file_in_its_own_format_and_names_a_damaged_one(tmp_path):
    """Before: every reranker-alone file was "holds no scored sets", readable or not."""
    from toolkit.committed import verify_committed
    assert ALONE, "no committed reranker-alone file"
    d = tmp_path / "score_cache" / "toolrerank"
    d.mkdir(parents=True)
    good = d / ALONE[0].name
    shutil.copy(ALONE[0], good)
    assert verify_committed(tmp_path)[str(good)] == "ok"
    good.write_bytes(ALONE[0].read_bytes()[:-500])
    assert "not a readable reranker-alone file" in verify_committed(tmp_path)[str(good)]


# --- bug 2: the reranker-alone file was not a recorded input ----------------------------------------------------

def test_loading_the_reranker_alone_file_records_it_as_an_input(tmp_path, monkeypatch):
    """Before: alone.load recorded nothing: notebook 10's 48 cells from it rested on an unverified file."""
    from toolkit.toolrerank import alone
    _repo_at(monkeypatch, tmp_path)
    p = tmp_path / "data" / ALONE[0].name
    p.parent.mkdir()
    shutil.copy(ALONE[0], p)
    alone.load(p)
    (row,) = provenance.inputs()
    assert row["path"] == f"data/{p.name}" and row["kind"] == "reranker-alone score file" and row["records"] > 0


def test_an_edited_reranker_alone_file_fails_check_with_an_input_line_naming_it(tmp_path, monkeypatch):
    """Before: an edit to the file left `check --notebook 10_toolrerank` at all OK."""
    from toolkit.toolrerank import alone
    _repo_at(monkeypatch, tmp_path)
    p = tmp_path / "data" / ALONE[0].name
    p.parent.mkdir()
    shutil.copy(ALONE[0], p)
    alone.load(p)
    _toy(tmp_path, monkeypatch, {"97_alone": {"cells": [_cell()], "inputs": provenance.inputs(), "llm": []}},
         {"97_alone": ONE_CELL_YAML})
    assert check.main(["--profile", "standard", "--notebook", "97_alone"], stream=io.StringIO()) == 0
    with gzip.open(p, "rt") as f:
        doc = json.load(f)
    doc["meta"]["edited"] = True
    with gzip.open(p, "wt") as f:
        json.dump(doc, f)
    out = io.StringIO()
    assert check.main(["--profile", "standard", "--notebook", "97_alone"], stream=out) == 1
    assert f"INPUT   97_alone: data/{p.name}: this reranker-alone score file changed since the run" in out.getvalue()


# --- bug 3: a committed LLM cache with its last line cut passed verify and the replay dropped the record -----------

def _cut_hyde(root: Path, nbytes: int = 200) -> Path:
    p = root / "llm_cache" / "reinvoke_hyde" / HYDE.name
    p.parent.mkdir(parents=True)
    p.write_bytes(HYDE.read_bytes()[:-nbytes])
    return p


def test_verify_flags_a_committed_llm_cache_whose_last_line_is_cut(tmp_path):
    """Before: "ok" (the cut line was taken for a writer's tail, to be re-read later)."""
    from toolkit.committed import verify_committed
    p = _cut_hyde(tmp_path)
    status = verify_committed(tmp_path)[str(p)]
    assert status.startswith("1 damaged line(s)") and "its last line is cut" in status


def test_replaying_a_cut_cache_is_a_run_problem_naming_the_file(tmp_path, monkeypatch):
    """Before: the replay served one answer fewer, recorded the cut file's sha256, and the run ended "ok"."""
    from toolkit.llm.cache import ResponseCache
    _repo_at(monkeypatch, tmp_path)
    p = _cut_hyde(tmp_path / "data")
    model = p.stem
    whole = len(ResponseCache(HYDE.parent.parent, "reinvoke_hyde", model, readonly=True))
    cut = ResponseCache(p.parent.parent, "reinvoke_hyde", model, readonly=True)
    assert len(cut) == whole - 1 and cut.damaged and "its last line is cut" in cut.damaged[0]
    (msg,) = provenance.run_problems()
    assert msg.startswith("data/llm_cache/reinvoke_hyde/") and "damaged record(s) skipped" in msg


def test_a_writer_still_takes_a_partial_last_line_for_a_record_in_flight(tmp_path):
    """Guard: a cache opened for writing (live generation) re-reads a partial tail later and repairs it on append."""
    from toolkit.llm.cache import ResponseCache
    c = ResponseCache(tmp_path, "ns", "m")
    c.put("chat", [{"role": "user", "content": "a"}], {"t": 0}, 0, "one")
    with open(c.path, "a") as f:
        f.write('{"t": "a", "p": "x"')
    again = ResponseCache(tmp_path, "ns", "m")
    assert again.damaged == [] and len(again) == 1
    again.put("chat", [{"role": "user", "content": "b"}], {"t": 0}, 0, "two")
    assert len(ResponseCache(tmp_path, "ns", "m", readonly=True)) == 2


# --- bug 4: replayed seconds were checked as wall-clock timings --------------------------------------------------

def test_seconds_the_results_mark_as_replayed_are_checked_against_their_expected_value(tmp_path, monkeypatch):
    """Before: any metric with "seconds" in its name only had to be finite and >= 0."""
    cells = [_cell("seconds_per_instruction", 6.1, "replayed", timing=False),
             _cell("seconds_per_instruction", 6.1, "measured", timing=True)]
    yaml_text = "".join(f"- {{paper: p, table: '1', dataset: d, method: {m}, metric: seconds_per_instruction, "
                        f"value: 6.1}}\n" for m in ("replayed", "measured"))
    _toy(tmp_path, monkeypatch, {"96_t": {"cells": cells, "inputs": []}}, {"96_t": "cells:\n" + yaml_text})
    assert [s for s, *_ in check.check("96_t", "standard")] == ["OK", "OK"]
    for c in cells:
        c["value"] = 61.0
    (tmp_path / "results" / "96_t" / "standard.json").write_text(json.dumps({"cells": cells, "inputs": []}))
    assert [s for s, *_ in check.check("96_t", "standard")] == ["FAIL", "OK"]


def test_table_5_seconds_are_a_result_except_in_the_smoke_profile():
    """Before: Recorder.add had no way to say so (no ``timing``), and Table 5's cells carried nothing."""
    import pandas as pd

    from toolkit.feedback import tables as T
    from toolkit.results import Recorder
    v = pd.DataFrame([{"set": "I2", "method": "Ours (T=1)", "metric": "seconds_per_instruction", "value": 138.1,
                       "n": 10, "ours_only": False},
                      {"set": "I2", "method": "Ours (T=1)", "metric": "ndcg@5", "value": 0.5, "n": 10,
                       "ours_only": False}])
    for profile, timing in (("standard", False), ("smoke", True)):
        rec = Recorder("30_feedback", profile)
        T.record_retrieval(rec, v, "5")
        assert rec.cells[0]["timing"] is timing and "timing" not in rec.cells[1]


def test_trace_seconds_times_ten_fail_the_check_of_the_committed_notebook_30(tmp_path, monkeypatch):
    """Before: Table 5's seconds x 10 (an edited trace's replay) gave 285 OK."""
    results = _copy_results(tmp_path, "30_feedback")
    path = results / "30_feedback" / "standard.json"
    doc = json.loads(path.read_text())
    for c in doc["cells"]:
        if c["metric"] == "seconds_per_instruction":
            c["value"] *= 10
    path.write_text(json.dumps(doc))
    rows = check.check("30_feedback", "standard", root=results)
    failed = sorted(k[3] for s, k, *_ in rows if s == "FAIL")
    assert failed == ["Ours (T=1)", "Ours (T=2)", "Ours (T=3)", "Ours (T=3, unchanged = N/A)"]


# --- bug 5: results without their inputs passed check -------------------------------------------------------------

def test_results_without_an_inputs_field_fail_check_naming_the_file(tmp_path, monkeypatch):
    """Before: dropping the ``inputs`` key of results/20_reinvoke/standard.json gave 222 OK, exit 0."""
    results = _copy_results(tmp_path, "20_reinvoke")
    path = results / "20_reinvoke" / "standard.json"
    doc = json.loads(path.read_text())
    del doc["inputs"]
    path.write_text(json.dumps(doc))
    monkeypatch.setattr(check, "results_dir", lambda: results)
    out = io.StringIO()
    assert check.main(["--profile", "standard", "--notebook", "20_reinvoke", "--quiet"], stream=out) == 1
    assert f"INPUT   20_reinvoke: {path}: no 'inputs' list" in out.getvalue()


def test_results_with_empty_inputs_fail_check_when_the_expected_run_read_inputs(tmp_path, monkeypatch):
    """Before: ``"inputs": []`` passed (222 OK). The expected values now list the inputs their run recorded."""
    results = _copy_results(tmp_path, "20_reinvoke")
    path = results / "20_reinvoke" / "standard.json"
    doc = json.loads(path.read_text())
    doc["inputs"] = []
    path.write_text(json.dumps(doc))
    monkeypatch.setattr(check, "results_dir", lambda: results)
    out = io.StringIO()
    assert check.main(["--profile", "standard", "--notebook", "20_reinvoke", "--quiet"], stream=out) == 1
    assert "the run did not record" in out.getvalue() and "data/llm_cache/" in out.getvalue()
    assert any(x.startswith("data/llm_cache/reinvoke_") for x in check.expected_inputs("20_reinvoke", "standard"))


def test_write_expected_lists_the_inputs_the_run_recorded(tmp_path, monkeypatch):
    """Before: the expected YAML held the cells only, so an empty ``inputs`` could not be told from a notebook that
    reads nothing."""
    rec_input = {"path": "data/SOURCES.json", "sha256": provenance.sha256(PROJECT_DATA / "SOURCES.json"),
                 "records": None, "kind": "manifest"}
    _toy(tmp_path, monkeypatch, {"95_w": {"cells": [_cell()], "inputs": [rec_input], "llm": []}})
    out = io.StringIO()
    assert check.main(["--profile", "standard", "--notebook", "95_w", "--write"], stream=out) == 0
    import yaml
    assert yaml.safe_load((tmp_path / "expected" / "95_w" / "standard.yaml").read_text())["inputs"] == \
        ["data/SOURCES.json"]
    assert check.main(["--profile", "standard", "--notebook", "95_w"], stream=io.StringIO()) == 0


# --- bug 6: a duplicated results cell ------------------------------------------------------------------------------

def test_a_duplicated_results_cell_fails_check_naming_the_cell(tmp_path, monkeypatch):
    """Before: a copy of a Table 1 cell (value 0.999) inserted before the original: check validated the last copy
    (all OK) while compare and RESULTS.md showed the first."""
    results = _copy_results(tmp_path, "20_reinvoke")
    path = results / "20_reinvoke" / "standard.json"
    doc = json.loads(path.read_text())
    i = next(i for i, c in enumerate(doc["cells"]) if c["table"] == "1")
    doc["cells"].insert(i, {**doc["cells"][i], "value": 0.999})
    path.write_text(json.dumps(doc))
    monkeypatch.setattr(check, "results_dir", lambda: results)
    out = io.StringIO()
    assert check.main(["--profile", "standard", "--notebook", "20_reinvoke", "--quiet"], stream=out) == 1
    c = doc["cells"][i]
    label = " / ".join(str(c[k]) for k in check.KEY)
    assert f"DUPLICATE20_reinvoke: {label}  appears more than once" in out.getvalue()
    # check reads the copy compare reads: the first
    assert check.result_cells("20_reinvoke", "standard", results)[check._key(c)] == 0.999


def test_write_refuses_results_with_a_duplicated_cell(tmp_path, monkeypatch):
    """Before: --write kept the last copy in silence."""
    _toy(tmp_path, monkeypatch, {"94_d": {"cells": [_cell(), _cell(value=0.9)], "inputs": []}})
    out = io.StringIO()
    assert check.main(["--profile", "standard", "--notebook", "94_d", "--write"], stream=out) == 1
    assert "REFUSED 94_d" in out.getvalue() and "cell p / 1 / d / m / ndcg@5 appears more than once" in out.getvalue()
    assert not (tmp_path / "expected" / "94_d" / "standard.yaml").exists()


# --- bug 11: an empty TOOLKIT_LLM_CACHE gave an "ok" run ----------------------------------------------------------

def test_a_replay_from_an_empty_TOOLKIT_LLM_CACHE_is_refused_naming_the_variable(tmp_path, monkeypatch):
    """Before: every answer missing, its rows pending, ``inputs: []``, and the results saved as a good run."""
    from toolkit.llm.backends import ReplayBackend
    from toolkit.llm.client import LLMClient
    from toolkit.results import Recorder
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("TOOLKIT_LLM_CACHE", str(empty))
    monkeypatch.setenv("TOOLKIT_RESULTS", str(tmp_path / "results"))
    client = LLMClient(ReplayBackend(model_id="qwen2.5-coder-1.5b-instruct-q4_k_m"), namespace="reinvoke_hyde",
                       mode="replay")
    assert len(client.cache()) == 0
    rec = Recorder("20_reinvoke", "smoke")
    with pytest.raises(ValueError, match=rf"TOOLKIT_LLM_CACHE='{empty}' holds no reinvoke_hyde/"
                                         r"qwen2.5-coder-1.5b-instruct-q4_k_m.jsonl to replay.*unset TOOLKIT_LLM_CACHE"):
        rec.save()
    assert not rec.path.exists()


def test_the_results_record_the_llm_cache_variable(tmp_path, monkeypatch):
    """Before: TOOLKIT_LLM_CACHE was recorded nowhere in the results."""
    from toolkit.results import Recorder
    monkeypatch.setenv("TOOLKIT_LLM_CACHE", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("TOOLKIT_RESULTS", str(tmp_path / "results"))
    path = Recorder("20_reinvoke", "smoke").save()
    assert json.loads(path.read_text())["environment"] == {"TOOLKIT_LLM_CACHE": str(tmp_path / "elsewhere")}


def test_a_replay_from_a_filled_TOOLKIT_LLM_CACHE_is_no_problem(tmp_path, monkeypatch):
    """Guard: a cache directory that holds the file replays without a problem."""
    from toolkit.llm.backends import ReplayBackend
    from toolkit.llm.client import LLMClient
    (tmp_path / "reinvoke_hyde").mkdir()
    shutil.copy(HYDE, tmp_path / "reinvoke_hyde" / HYDE.name)
    monkeypatch.setenv("TOOLKIT_LLM_CACHE", str(tmp_path))
    client = LLMClient(ReplayBackend(model_id=HYDE.stem), namespace="reinvoke_hyde", mode="replay")
    assert len(client.cache()) > 0 and provenance.run_problems() == []


# --- weak spot: verify --committed could not see a deleted committed file; trace metas unverified, unrecorded ------

def test_verify_reports_a_committed_file_deleted_from_the_work_tree(tmp_path):
    """Before: a deleted file was simply not among the files verify globbed: all ok."""
    from toolkit.committed import verify_committed
    data = tmp_path / "data"
    hist = data / "llm_cache" / "querygen_align" / "history.json"
    hist.parent.mkdir(parents=True)
    hist.write_text("{}")
    git = ["git", "-c", "user.email=t@example.org", "-c", "user.name=t"]
    for cmd in (["init", "-q"], ["add", "data"], ["commit", "-qm", "x"]):
        subprocess.run(git + cmd, cwd=tmp_path, check=True, capture_output=True)
    assert verify_committed(data)[str(hist)] == "ok"
    hist.unlink()
    status = verify_committed(data)[str(hist)]
    assert status.startswith("missing: git tracks it") and f"git checkout -- {hist}" in status


def _trace_pair(d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    t = d / "standard-test-I2-x.jsonl"
    t.write_text(json.dumps({"qid": "q1", "instructions": ["a"], "runs": [[["d", 1.0]]], "seconds": [1.5],
                             "answers": []}) + "\n")
    (d / "standard-test-I2-x.meta.json").write_text(json.dumps({"wall_s": 10.0, "queries": 1}))
    return t


def test_verify_lists_and_checks_each_trace_meta_file(tmp_path):
    """Before: a .meta.json was never a row of its own (a meta whose trace is gone: silence)."""
    from toolkit.committed import verify_committed
    t = _trace_pair(tmp_path / "feedback_traces")
    meta = t.with_name("standard-test-I2-x.meta.json")
    assert verify_committed(tmp_path)[str(meta)] == "ok"
    t.unlink()
    assert "the meta of a trace that is missing" in verify_committed(tmp_path)[str(meta)]


def test_a_trace_meta_edited_after_the_run_is_an_input_problem(tmp_path, monkeypatch):
    """Before: load_meta recorded nothing: ``wall_s`` x 10 (notebook 30's machine time per instruction): silence."""
    from toolkit.feedback.experiment import load_meta, load_traces
    _repo_at(monkeypatch, tmp_path)
    t = _trace_pair(tmp_path / "data" / "feedback_traces")
    load_traces(t)
    load_meta(t)
    recorded = provenance.inputs()
    assert [r["kind"] for r in recorded] == ["feedback trace", "feedback trace meta"]
    meta = t.with_name("standard-test-I2-x.meta.json")
    meta.write_text(json.dumps({"wall_s": 100.0, "queries": 1}))
    (msg,) = provenance.problems(recorded)
    assert msg.startswith("data/feedback_traces/standard-test-I2-x.meta.json: this feedback trace meta changed")


# --- weak spot: messages that named no file; check and strip-notebooks stopped at the first bad file ----------------

def test_check_names_a_damaged_results_file_and_checks_the_others(tmp_path, monkeypatch):
    """Before: ``error: Unterminated string ...`` (no file), and the notebooks after it were not checked."""
    _toy(tmp_path, monkeypatch, {"90_a": '{"cells": [{"paper": "p', "91_b": {"cells": [_cell()], "inputs": []}},
         {"90_a": ONE_CELL_YAML, "91_b": ONE_CELL_YAML})
    out = io.StringIO()
    assert check.main(["--profile", "standard"], stream=out) == 1
    text = out.getvalue()
    assert f"ERROR   90_a: {tmp_path / 'results' / '90_a' / 'standard.json'}: not JSON (Unterminated string" in text
    assert "91_b (standard): 1 OK, 0 not OK" in text


@pytest.mark.parametrize("doc, says", [
    ({"cells": "abc"}, "'cells' must be a list, got str"),
    (["not", "an", "object"], "a results file is a JSON object, this one is a list"),
    ({"cells": [{"paper": "p"}]}, "cell #1 needs paper, table, dataset, method, metric and value"),
    ({"cells": [_cell(value="0.5")]}, "cell #1 (p / 1 / d / m / ndcg@5) has value '0.5', not a number"),
])
def test_check_names_the_file_of_a_malformed_results_document(tmp_path, monkeypatch, doc, says):
    """Before: ``string indices must be integers``, ``error: path`` and the like, naming no file."""
    _toy(tmp_path, monkeypatch, {"92_m": doc}, {"92_m": ONE_CELL_YAML})
    out = io.StringIO()
    assert check.main(["--profile", "standard"], stream=out) == 1
    assert f"ERROR   92_m: {tmp_path / 'results' / '92_m' / 'standard.json'}: {says}" in out.getvalue()


def test_a_missing_results_file_does_not_stop_check_before_the_next_notebook(tmp_path, monkeypatch):
    """Before: a missing results/40_querygen/standard.json stopped check before notebook 50."""
    _toy(tmp_path, monkeypatch, {"40_q": None, "50_h": {"cells": [_cell()], "inputs": []}},
         {"40_q": ONE_CELL_YAML, "50_h": ONE_CELL_YAML})
    out = io.StringIO()
    assert check.main(["--profile", "standard"], stream=out) == 1
    assert "ERROR   40_q: no standard run of 40_q" in out.getvalue()
    assert "50_h (standard): 1 OK, 0 not OK" in out.getvalue()


def test_strip_notebooks_names_a_damaged_notebook_and_strips_the_others(tmp_path, capsys):
    """Before: an error naming no file (or a traceback), and the notebooks after it were left as they were."""
    import nbformat

    from toolkit.__main__ import main
    bad, good = tmp_path / "01_bad.ipynb", tmp_path / "02_good.ipynb"
    bad.write_text('{"cells": [')
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")])
    nb.cells[0].outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "2"}, execution_count=1)]
    good.write_text(nbformat.writes(nb))
    assert main(["strip-notebooks", str(bad), str(good)]) == 1
    out, err = capsys.readouterr()
    assert f"error: {bad}: not a readable notebook" in err and "git checkout --" in err
    assert f"{good}: stripped" in out
    assert nbformat.read(good, as_version=4).cells[0].outputs == []


# --- weak spot: check --write wrote expected values from untrustworthy results -------------------------------------

def test_write_refuses_results_with_an_input_problem(tmp_path, monkeypatch):
    """Before: --write wrote the expected values from a run whose recorded input was changed or gone."""
    gone = {"path": "data/no-such-input.jsonl", "sha256": "0" * 64, "records": 3, "kind": "LLM response cache"}
    _toy(tmp_path, monkeypatch, {"93_i": {"cells": [_cell()], "inputs": [gone], "llm": []}})
    out = io.StringIO()
    assert check.main(["--profile", "standard", "--notebook", "93_i", "--write"], stream=out) == 1
    assert "REFUSED 93_i" in out.getvalue() and "data/no-such-input.jsonl: the run read this LLM response cache, " \
        "and it is missing now" in out.getvalue()
    assert not (tmp_path / "expected" / "93_i" / "standard.yaml").exists()


def test_write_refuses_results_with_a_failed_marker(tmp_path, monkeypatch):
    """Before: --write took the cells of the previous good run as the expected values of a failed one."""
    results = _toy(tmp_path, monkeypatch, {"93_f": {"cells": [_cell()], "inputs": []}})
    (results / "93_f" / "standard.failed").write_text("RuntimeError: boom\n")
    out = io.StringIO()
    assert check.main(["--profile", "standard", "--notebook", "93_f", "--write"], stream=out) == 1
    assert "REFUSED 93_f" in out.getvalue() and "the last standard run failed" in out.getvalue()
    assert not (tmp_path / "expected" / "93_f" / "standard.yaml").exists()


# --- weak spot: bare NaN tokens in the results JSON ---------------------------------------------------------------

def test_the_results_writer_writes_strict_json_and_check_reads_null_as_nan(tmp_path, monkeypatch):
    """Before: ``NaN`` tokens (not JSON: jq, browsers and strict parsers reject the file)."""
    from toolkit.results import Recorder
    monkeypatch.setenv("TOOLKIT_RESULTS", str(tmp_path / "results"))
    rec = Recorder("89_n", "standard")
    rec.add(paper="p", table="1", dataset="d", method="m", metric="ndcg@5", value=float("nan"))
    rec.extra["rows"] = [{"p": float("nan"), "gain": float("inf"), "ok": 1.5}]
    doc = _strict(rec.save().read_text())
    assert doc["cells"][0]["value"] is None and doc["rows"] == [{"p": None, "gain": None, "ok": 1.5}]
    exp = tmp_path / "expected" / "89_n"
    exp.mkdir(parents=True)
    (exp / "standard.yaml").write_text(ONE_CELL_YAML.replace("0.5", ".nan"))
    monkeypatch.setattr(check, "EXPECTED", tmp_path / "expected")
    ((status, _, e, o),) = check.check("89_n", "standard")
    assert status == "OK" and math.isnan(o)


@pytest.mark.parametrize("notebook", ["20_reinvoke", "30_feedback", "50_headtohead"])
def test_the_committed_standard_results_are_strict_json(notebook):
    """Before: 8, 13 and 4 bare NaN tokens in results/20, 30 and 50's standard.json."""
    _strict((RESULTS / notebook / "standard.json").read_text())


# --- weak spot: a duplicated cell in an expected YAML --------------------------------------------------------------

def test_an_expected_yaml_with_a_duplicated_cell_is_an_error_naming_file_and_cell(tmp_path, monkeypatch):
    """Before: the last copy won in silence."""
    _toy(tmp_path, monkeypatch, {}, {"88_y": ONE_CELL_YAML + ONE_CELL_YAML.split("\n", 1)[1].replace("0.5", "0.7")})
    with pytest.raises(ValueError, match=r"88_y/standard.yaml: cell #2 \(p / 1 / d / m / ndcg@5\) repeats cell #1; "
                                         "keep one of them"):
        check.read_expected("88_y", "standard")


def test_an_expected_yaml_whose_inputs_are_not_paths_is_an_error(tmp_path, monkeypatch):
    """Guard: the new ``inputs`` list of an expected YAML is checked like its cells."""
    _toy(tmp_path, monkeypatch, {}, {"87_y": "inputs: 5\n" + ONE_CELL_YAML})
    with pytest.raises(ValueError, match=r"87_y/standard.yaml: 'inputs' must be a list of paths"):
        check.expected_inputs("87_y", "standard")
