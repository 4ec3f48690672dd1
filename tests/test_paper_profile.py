"""toolkit.paper: what the paper profile needs fails before the first cell with one line naming it and the fix;
the dry run's stand-ins are named (and recorded in its results)."""
from __future__ import annotations

import pytest

from toolkit import paper


@pytest.fixture
def no_hub(monkeypatch):
    monkeypatch.setattr(paper, "hub_reachable", lambda timeout=3.0: False)
    monkeypatch.setattr(paper, "_in_hf_cache", lambda repo: False)
    for v in ("TOOLKIT_LLM_BACKEND", "TOOLKIT_LLM_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(v, raising=False)


def test_missing_encoder_fails_at_the_start_in_one_line(no_hub):
    with pytest.raises(paper.PaperProfileError) as err:
        paper.preflight("10_toolrerank")
    msg = str(err.value)
    assert "\n" not in msg and "base='bert-base-uncased'" in msg and "hub is unreachable" in msg
    assert "-p base=/path/to/bert-base-uncased" in msg


def test_missing_llm_server_fails_at_the_start_in_one_line(no_hub):
    with pytest.raises(paper.PaperProfileError) as err:
        paper.preflight("40_querygen", {"encoder": "minilm"})
    msg = str(err.value)
    assert "\n" not in msg and "zero_shot_model" in msg and "TOOLKIT_LLM_BASE_URL" in msg


def test_llm_server_that_does_not_answer(no_hub, monkeypatch):
    from toolkit.llm.serve import free_port
    monkeypatch.setenv("TOOLKIT_LLM_BACKEND", "openai")
    monkeypatch.setenv("TOOLKIT_LLM_BASE_URL", f"http://127.0.0.1:{free_port()}/v1")
    with pytest.raises(paper.PaperProfileError, match="no server answers at TOOLKIT_LLM_BASE_URL"):
        paper.preflight("30_feedback", {"base": "minilm"})


def test_runner_runs_the_preflight_before_any_cell(no_hub):
    from toolkit.runner import run_notebook
    with pytest.raises(paper.PaperProfileError, match="10_toolrerank \\(paper profile\\): base="):
        run_notebook("10_toolrerank", "paper")


def test_dry_run_stand_ins_are_named(no_hub):
    over, rec = paper.dry_overrides("30_feedback", hub=False)
    assert over["base"] == "minilm" and over["llm"] == "qwen-0.5b" and over["scale_llms"] == ["qwen-0.5b"]
    assert rec["base"]["paper"] == "bert-base-uncased" and rec["llm"]["paper"] == "gpt-3.5-turbo-0125"
    over, rec = paper.dry_overrides("40_querygen", hub=False)
    assert rec["zero_shot_model"]["stand_in"] == "qwen-0.5b" and "Llama-2-13b" in rec["generator_base"]["paper"]
    # every dry configuration is a valid paper configuration (names and types checked)
    for nb in paper.NOTEBOOKS:
        paper.config(nb, paper.dry_overrides(nb, hub=False)[0])
    # with the hub reachable, the paper's encoders are used and only the LLMs stand in
    over, rec = paper.dry_overrides("10_toolrerank", hub=True)
    assert "base" not in over and not rec
