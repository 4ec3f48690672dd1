"""Robust parsers for LLM answers. LLM output is untrusted text: it is parsed, never executed.

The heuristics follow querygen.md §3.1 ("skip invalid starting characters in the list and
explanatory phrases outside the list"): list markers (``1.``, ``2)``, ``-``, ``*``, ``•``, ``(a)``)
and labels (``Intent 1:``, ``API:``) are stripped; preambles (``Sure, here are the intents:``)
and closing explanations (``These APIs ...``, ``Note: ...``) are dropped; code fences, markdown
emphasis and surrounding quotes are removed; duplicates are dropped (case-insensitively), order kept.
"""
from __future__ import annotations

import re

_MARKER = re.compile(r"""^\s*(?:
      [-*\u2022\u00b7\u2023\u25aa\u25cf\u25e6+>]+        # bullets
    | \(?\d{1,2}\s*[.):\]]                               # 1.  1)  (1)  1:
    | \(?[a-hA-H][.)]                                    # a.  (b)
    | \#{1,6}                                            # markdown headings
    )\s+""", re.X)
_LABEL = re.compile(r"^\s*(?:user\s+)?(?:intents?|intentions?|api\s+descriptions?|descriptions?|apis?(?:\(s\))?|"
                    r"tasks?|answer|output|queries|query|refined\s+instruction|instruction)\s*#?\d*\s*[:\-\u2013]\s*",
                    re.I)
_PREAMBLE = re.compile(r"^\s*(?:sure|certainly|of course|okay|ok|absolutely|great|alright|here\s+(?:is|are)|"
                       r"below\s+(?:is|are)|the\s+following|the\s+(?:extracted\s+|underlying\s+|user'?s?\s+)*"
                       r"(?:intents?|intentions?|apis?|descriptions?)\s+(?:is|are)|based\s+on|i\s+(?:have|can|will|'ve)|"
                       r"to\s+(?:address|handle|fulfill)\s+(?:this|the|your))\b", re.I)
_EXPLANATION_ALWAYS = re.compile(r"^\s*(?:note|notes|explanation|please\s+note|in\s+summary|overall|to\s+summarize)\b",
                                 re.I)
_EXPLANATION_START = re.compile(r"^\s*(?:these|this|each\s+of|i\s+hope|hope\s+this|let\s+me|if\s+you|feel\s+free|"
                                r"by\s+using|with\s+these|i\s+have|i've)\b", re.I)
_EXPLANATION_TOPIC = re.compile(r"\b(?:intents?|apis?|descriptions?|list|above|query|queries|request|tools?|help|"
                                r"helps|assist|questions?|further|anything\s+else|clarif\w*)\b", re.I)


def _is_explanation(item: str) -> bool:
    """A closing remark about the list ("These APIs will help ...", "Note: ...", "I hope this
    helps!"), as opposed to an item that merely starts with such a word ("let me know if it rains")."""
    return bool(_EXPLANATION_ALWAYS.match(item)) or bool(_EXPLANATION_START.match(item) and _EXPLANATION_TOPIC.search(item))


_QUOTES = "\"'`\u201c\u201d\u2018\u2019"


def clean_item(line: str) -> str:
    """One list item: markers, labels, markdown emphasis and quotes removed, spaces collapsed."""
    s = line.strip()
    for _ in range(3):                               # "1. - **Intent 1:** foo" peels in layers
        before = s
        s = _MARKER.sub("", s)
        s = re.sub(r"\*\*(.+?)\*\*", r"\1", s)
        s = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", s)          # [text](url) -> text
        s = _LABEL.sub("", s)
        s = s.strip().strip(_QUOTES).strip()
        if s == before:
            break
    return " ".join(s.split())


def _is_preamble(raw: str, item: str) -> bool:
    if not item:
        return True
    if raw.rstrip().endswith(":") and (len(item.split()) <= 12 or _PREAMBLE.match(item)):
        return True                                   # "Here are the intents:" / "Intents:"
    return bool(_PREAMBLE.match(item)) and (item.endswith(":") or len(item.split()) <= 14
                                            and re.search(r"\b(here|following|below)\b", item, re.I) is not None)


def parse_lines(text: str, max_items: int | None = None, stop_prefixes: tuple[str, ...] = ()) -> list[str]:
    """A list of items from a line-per-item answer, with the §3.1 heuristics.

    ``stop_prefixes``: a line starting with one of them ends the list once an item was found
    (and is skipped before that), e.g. ``("Query:",)`` when a model continues a few-shot pattern.
    """
    if not text:
        return []
    items: list[str] = []
    seen: set[str] = set()
    for raw in text.replace("\r", "\n").split("\n"):
        line = raw.strip()
        if not line or line.startswith(("```", "#")) or re.fullmatch(r"[-=*_#\s]{3,}", line):
            continue                                    # fences, markdown headings, rules
        if stop_prefixes and line.lower().startswith(tuple(p.lower() for p in stop_prefixes)):
            if items:
                break
            continue
        item = clean_item(line)
        if not items and _is_preamble(line, item):
            continue
        if items and _is_explanation(item) and not _MARKER.match(line):
            break                                       # closing explanation after the list
        if not item or re.fullmatch(r"[\W_]+", item):
            continue
        if item.endswith(":"):
            continue                                    # a heading ("Recent News:") or an introduction
        k = item.lower().rstrip(".")
        if k in seen:
            continue
        seen.add(k)
        items.append(item)
        if max_items and len(items) >= max_items:
            break
    return items


def is_na(text: str) -> bool:
    """True for the feedback paper's "no refinement" token and its usual spellings."""
    t = clean_item(text or "").lower().strip(" .!")
    return bool(re.fullmatch(r"n\s*/\s*a|na|none|no refinement(?: is)?(?: needed| necessary| required)?", t)) \
        or t.startswith("n/a")


# -- task parsers ----------------------------------------------------------------------------

def parse_intents(text: str, max_items: int | None = None) -> list[str]:
    """Re-Invoke intent extractor (Fig. 5): one intent per line."""
    return parse_lines(text, max_items=max_items, stop_prefixes=("Query:", "****", "**Query"))


def _norm_line(s: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", s.lower()).strip()


def few_shot_intent_lines() -> set[str]:
    """The intents of Re-Invoke Fig. 5's own examples (normalized), read from the template."""
    from toolkit.llm.prompts import REINVOKE_INTENT
    body = REINVOKE_INTENT.text.split("****Example****", 1)[1].split("****Begin!****", 1)[0]
    lines = set()
    for block in body.split("Intent:")[1:]:
        for ln in block.split("Query:")[0].strip().splitlines():
            if ln.strip():
                lines.add(_norm_line(ln))
    return lines


def copied_examples(intents: list[str], examples: set[str] | None = None) -> list[str]:
    """The intents that are copies of the prompt's few-shot examples (a small model's failure mode:
    it repeats "book a round-trip flight ticket ... to Paris" whatever the query)."""
    examples = few_shot_intent_lines() if examples is None else examples
    return [i for i in intents if _norm_line(i) in examples]


def intents_or_query(text: str, query: str) -> list[str]:
    """The parsed intents, or the query itself when the answer has none (so retrieval never
    receives an empty intent list)."""
    return parse_intents(text) or [query]


_NAME_LINE = re.compile(r"^\s*(?:[-*\u2022]\s*|\d{1,2}[.)]\s*)?(?:\*\*)?(?:api(?:\s+name)?|name|tool)(?:\*\*)?\s*:\s*(?:\*\*)?"
                        r"(?P<name>[^:]{1,80}?)(?:\*\*)?\s*$", re.I)
_DESC_LINE = re.compile(r"^\s*(?:[-*\u2022]\s*)?(?:\*\*)?description(?:\*\*)?\s*:\s*(?:\*\*)?", re.I)


def parse_api_descriptions(text: str, max_items: int = 5) -> list[str]:
    """Query generation (Fig. 2 / Fig. 5): at most 5 descriptions, one per line (§3.1). A model
    that answers in ``API: name`` / ``Description: ...`` pairs gets each pair merged into one
    ``name: description`` line."""
    if not text:
        return []
    lines = text.replace("\r", "").split("\n")
    merged: list[str] = []
    i = 0
    while i < len(lines):
        m = _NAME_LINE.match(lines[i])
        nxt = next((j for j in range(i + 1, len(lines)) if lines[j].strip()), None)
        if m and nxt is not None and _DESC_LINE.match(lines[nxt]):
            merged.append(f"{m.group('name').strip()}: {_DESC_LINE.sub('', lines[nxt]).strip()}")
            i = nxt + 1
            continue
        merged.append(lines[i])
        i += 1
    return parse_lines("\n".join(merged), max_items=max_items, stop_prefixes=("Human:",))


def parse_synthetic_query(text: str) -> str:
    """Re-Invoke query generator (Fig. 4): the first paragraph of the answer that is not a
    preamble or a label, on one line; "" when nothing is left."""
    if not text:
        return ""
    t = re.sub(r"```[a-zA-Z]*", "", text.replace("\r", ""))
    paras = [p.strip() for p in re.split(r"\n\s*\n", t) if p.strip()]
    for p in paras:
        lines = [ln for ln in p.split("\n") if ln.strip()]
        # drop a leading preamble/label line ("Sure! Here's a query:", "The relevant query is:")
        while lines and lines[0].rstrip().endswith(":") and (len(lines[0].split()) <= 20 or _PREAMBLE.match(lines[0])):
            head = lines.pop(0)
            tail = head.split(":", 1)[1].strip() if ":" in head else ""
            if tail:
                lines.insert(0, tail)
                break
        if not lines:
            continue
        q = " ".join(clean_item(ln) for ln in lines).strip()
        q = re.sub(r"^(?:the\s+relevant\s+query\s+is|user\s+query|query)\s*:\s*", "", q, flags=re.I).strip(_QUOTES + " ")
        if not q or (_is_explanation(q) and paras.index(p) > 0):
            continue
        return q
    return ""


def parse_hyde_document(text: str) -> str:
    """HyDE (Fig. 6): the hypothetical API document as text: from the first ``{`` to the last ``}``
    when there are braces, else the content of a code fence, else the answer's lines; never evaluated."""
    if not text:
        return ""
    a, b = text.find("{"), text.rfind("}")
    if 0 <= a < b:
        return text[a:b + 1].strip()
    m = re.search(r"```[a-zA-Z]*\s*\n(.*?)```", text, re.S)
    if m and m.group(1).strip():
        return m.group(1).strip()
    return " ".join(parse_lines(text))


_JSON_STRING = r'"((?:[^"\\]|\\.)*)"'


def hyde_name_description(doc: str) -> str:
    """The ``api_name`` and ``api_description`` string values of a HyDE document (Fig. 6), as
    ``"<name>: <description>"`` — the shape of a ToolE tool document — dropping the parameter schema.
    Read with a regular expression, not ``json.loads``: the Fig. 6 example itself lacks a comma, and 230
    of the 1.5B model's 497 ToolE multi-tool documents are not valid JSON. A document with neither field is returned unchanged. A diagnostic view, not the
    paper's HyDE (which embeds the whole document)."""
    def field(key):
        m = re.search(r'"' + key + r'"\s*:\s*' + _JSON_STRING, doc or "")
        return m.group(1).replace('\\"', '"').strip() if m else ""
    name, desc = field("api_name"), field("api_description")
    if not (name or desc):
        return doc
    return f"{name}: {desc}" if name and desc else name or desc


_QUESTION_MARK = re.compile(r"(?im)(?:^|(?<=\s))[*_(\[#-]*(?:q(?:uestion)?\s*)?([12])\s*[).:\-]")
_YES_NO = re.compile(r"\b(yes|no)\b", re.I)


def parse_decision(text: str) -> tuple[str, str]:
    """Feedback step 3 in ``decision="answers"`` mode (§4.2): the answers to its two questions, each
    ``"yes"``, ``"no"`` or ``"?"`` (unreadable). The answer to question i is the first yes/no word after
    the line's marker "i)" (also "i." / "Qi:" / "**i)**"); with no markers, the yes/no words in order. An
    echoed "yes or no" is not an answer; a bare "N/A" (the paper's no-refinement token) counts as two "yes".
    §4.2's rule reads this as: refine unless both are "yes" -- so an unreadable answer asks for a refinement."""
    if is_na(text or ""):
        return "yes", "yes"
    t = re.sub(r"\byes\s+or\s+no\b", " ", (text or "").replace("\r", ""), flags=re.I)
    marks = list(_QUESTION_MARK.finditer(t))
    answers = {}
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(t)
        yn = _YES_NO.search(t, m.end(), end)
        if yn and m.group(1) not in answers:
            answers[m.group(1)] = yn.group(1).lower()
    if not marks:
        words = [w.lower() for w in _YES_NO.findall(t)]
        answers = dict(zip("12", words))
    return answers.get("1", "?"), answers.get("2", "?")


_REFINED_LABEL = re.compile(r"refined\s+(?:user\s+)?instruction\s*[*_]*\s*[:\-]", re.I)
_NOT_INSTRUCTION = re.compile(r"^\s*(?:#|(?:this|these|by|note|explanation|i\s|i'|hope|let\s+me|in\s+this|with\s+this|"
                              r"the\s+refined|here)\b)", re.I)


def _is_heading_or_label(line: str) -> bool:
    item = clean_item(line)
    return (line.startswith("#") or not item.strip("*_#:- ")
            or re.fullmatch(r"(?:the\s+)?refined\s+(?:user\s+)?instruction\W*", item, re.I) is not None
            or line.rstrip("*_ ").endswith(":") and len(line.split()) <= 12)


def repeats_prompt(text: str, prompt: str, words: int = 10) -> bool:
    """Whether ``text`` repeats ``words`` consecutive words of ``prompt`` (case and punctuation aside): an answer that
    copies the request it was given instead of answering it. A refined instruction has no reason to quote ten words
    of our step-4 wording (:func:`non_instruction` counts how often a small LLM does it)."""
    if words < 1:
        raise ValueError(f"words must be >= 1, got {words}")
    p, t = re.findall(r"[a-z0-9]+", prompt.lower()), re.findall(r"[a-z0-9]+", text.lower())
    grams = {tuple(p[i:i + words]) for i in range(len(p) - words + 1)}
    return any(tuple(t[i:i + words]) in grams for i in range(len(t) - words + 1))


_REFUSAL = re.compile(r"(?:i'?m|i am)\s+sorry|sorry,|i\s+(?:cannot|can'?t|am unable|'m unable)|as an ai\b")


def non_instruction(text: str, request: str, words: int = 10) -> str | None:
    """Why a "refined instruction" is not one, or ``None`` when it may be: it ``"repeats the request"``
    (:func:`repeats_prompt`), it is ``"a bare yes/no"`` (an answer to the assessment, not an instruction) or it is
    ``"a refusal"`` (it opens with an apology or "I can't"). Of Qwen2.5-Coder-0.5B's 25 refinements on notebook 30's
    I2 scale sample, 9 repeat the request, 10 are a bare "Yes" and 4 are refusals; of the 1.5B model's 17 on the same
    sample, none (notebook 30 prints the counts of each run)."""
    t = (text or "").strip()
    if repeats_prompt(t, request, words):
        return "repeats the request"
    if re.fullmatch(r"(?:(?:yes|no)\b[\s.,!]*)+", t.lower()):
        return "a bare yes/no"
    if _REFUSAL.match(t.lower()):
        return "a refusal"
    return None


def parse_refinement(text: str) -> str | None:
    """Feedback refinement (§4.2, Eq. 4): ``None`` for "N/A" (no refinement), else the refined instruction:
    the text after a "Refined instruction:" label if there is one, without preambles, headings and labels
    ("### Refined Instruction", "**Refined Instruction:**"), its paragraphs joined until one that comments
    on it ("This refinement ...", "Note: ...", a heading)."""
    if text is None or is_na(text):
        return None
    t = text.replace("\r", "").strip()
    m = _REFINED_LABEL.search(t)
    if m:
        t = t[m.end():].strip()
    body: list[str] = []
    for para in (p.strip() for p in re.split(r"\n\s*\n", t) if p.strip()):
        lines = [ln.strip() for ln in para.split("\n") if ln.strip()]
        if not body:                       # before the instruction: headings, labels, "Here it is:" lines
            while lines and _is_heading_or_label(lines[0]):
                lines.pop(0)
            if not lines:
                continue
        elif _NOT_INSTRUCTION.match(lines[0]) or _NOT_INSTRUCTION.match(clean_item(lines[0])):
            break                          # a comment on the refinement, or a new section
        line = " ".join(clean_item(ln) for ln in lines).strip(_QUOTES + " ")
        if body and _is_explanation(line):
            break
        if line:
            body.append(line)
    out = re.sub(r"\*\*|__", "", " ".join(body)).strip()       # emphasis left open by the token cap
    if not out or is_na(out):
        return None
    return out
