"""toolkit.llm.prompts: the papers' prompt templates, slots, and the verbatim copies."""
from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.llm import prompts
from toolkit.llm.tasks import TASKS

PAPERS = Path(__file__).resolve().parent.parent.parent / "shared" / "papers"


def _paper(name: str) -> str:
    p = PAPERS / name
    if not p.is_file():
        pytest.skip(f"{p} not available")
    return p.read_text()


@pytest.mark.parametrize("template,paper", [
    (prompts.REINVOKE_SYNTHETIC_QUERY, "reinvoke.md"),
    (prompts.REINVOKE_INTENT, "reinvoke.md"),
    (prompts.REINVOKE_HYDE, "reinvoke.md"),
    (prompts.QUERYGEN_DESCRIPTION, "querygen.md"),
    (prompts.QUERYGEN_INTENT, "querygen.md"),
])
def test_verbatim_templates_match_the_paper(template, paper):
    assert template.verbatim
    assert template.text in _paper(paper), f"{template.name} differs from {paper}"


def test_every_template_cites_its_source_and_fills_by_name():
    for t in prompts.PROMPTS.values():
        assert t.source and ("Fig." in t.source or "§" in t.source)
        values = {s: f"<<{s.upper()}>>" for s in t.slots}
        text = t.format(**values)
        for s, ph in t.slots.items():
            assert ph not in text and f"<<{s.upper()}>>" in text
    assert not prompts.FEEDBACK_REFINEMENT.verbatim


def test_missing_or_unknown_slots_raise():
    with pytest.raises(KeyError, match="missing"):
        prompts.REINVOKE_INTENT.format()
    with pytest.raises(KeyError, match="unknown"):
        prompts.REINVOKE_INTENT.format(user_query="q", extra="x")
    with pytest.raises(KeyError):
        prompts.get("no-such-prompt")


def test_single_pass_fill_does_not_expand_placeholders_in_values():
    q = "what does <user query> mean?"
    text = prompts.intent_prompt(q)
    assert text.endswith("Query: what does <user query> mean?\n\nIntent:")
    assert text.count("<user query>") == 1


def test_intent_prompt_shape_and_shared_prefix():
    a, b = prompts.intent_prompt("first query"), prompts.intent_prompt("second")
    pre = prompts.REINVOKE_INTENT.prefix()
    assert a.startswith(pre) and b.startswith(pre) and len(pre) > 0.9 * (len(a) - len("first query"))
    assert "learn Spanish by talking to the native speakers\nrecommend fictions" in a   # multi-intent example


def test_querygen_prompt_kinds():
    d = prompts.querygen_prompt("book a taxi", "description")
    i = prompts.querygen_prompt("book a taxi", "intent")
    assert d.endswith("Human: book a taxi\nAnswer:") and "API(s)" in d
    assert "intents" in i and i.endswith("Human: book a taxi\nAnswer:")


def test_feedback_prompts_format_tools():
    docs = [{"category": "Data", "tool": "Web Search", "api": "newsSearch", "text": "Get news articles."},
            {"tool": "NewsTool", "api": "NewsTool", "text": "World news " + "x" * 1000}, "plain text tool"]
    v = prompts.feedback_prompts("find news about llamas", docs)
    assert v["k"] == "3"
    lines = v["tools"].split("\n")
    assert lines[0] == "1. [Data] Web Search / newsSearch: Get news articles."
    assert lines[1].startswith("2. NewsTool: World news") and lines[1].endswith("...") and len(lines[1]) < 620
    assert lines[2] == "3. plain text tool"
    c = prompts.FEEDBACK_COMPREHENSION.format(**v)
    a = prompts.FEEDBACK_ASSESSMENT.format(**v, comprehension="C")
    r = prompts.FEEDBACK_REFINEMENT.format(**v, assessment="A")
    assert "top 3 tools" in c and "ignoring detailed entity information" in c
    assert "could and could not be solved" in a and "\nC\n" in a
    assert '"N/A"' in r and "\nA\n" in r


def test_tool_document_accepts_documents_dicts_and_text():
    from toolkit.data.contract import Document
    d = Document("d1", "Finance", "FinanceTool", "FinanceTool", "FinanceTool: stocks and more")
    assert prompts.tool_document(d) == "FinanceTool: stocks and more"
    assert prompts.tool_document({"text": "t"}) == "t"
    assert prompts.tool_document("raw") == "raw"
    assert "<tool document>" not in prompts.synthetic_query_prompt(d)


def test_tasks_use_the_templates():
    assert TASKS["intents"].build("q") == prompts.intent_prompt("q")
    assert TASKS["synthetic-queries"].sampling.temperature == 0.7 and TASKS["synthetic-queries"].n == 10
    assert TASKS["querygen"].sampling.top_p == 0.9 and TASKS["querygen"].sampling.top_k == 10
    assert TASKS["intents"].sampling.greedy
