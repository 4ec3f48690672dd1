"""The papers' prompts, in one place, as templates with named slots.

Every template cites the figure or section it comes from. Where a paper prints its prompt
(Re-Invoke Figs. 4-6, query generation Figs. 2 and 5), the text is copied character for character
from the paper as we have it (a text conversion of the papers' PDFs); placeholders
keep the paper's own spelling (``<user query>``, ``<tool document>``, ``<user request>``) and are
filled by name. Two conversion artefacts are kept as they are, on purpose, so that the text stays
checkable against the source: Re-Invoke's section markers read ``****Instructions****`` (the bold
rendering of a literal ``**Instructions**`` in the figure, we believe), and paragraphs are separated
by one blank line. ``tests/test_llm_prompts.py`` re-checks the copies when the papers are present.

The iterative-feedback paper (Xu et al. 2024) does not print its prompts; its three feedback
prompts below are *our wording* of §4.2, sentence by sentence, and are marked ``verbatim=False``.

Filling is a single pass over the placeholders, so a value that happens to contain a placeholder
is never expanded twice. LLM output is untrusted text: see ``toolkit.llm.parsers``.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    text: str
    slots: Mapping[str, str]          # slot name -> placeholder as written in ``text``
    source: str                       # paper, figure/section
    verbatim: bool = True             # copied from the paper (True) or our wording (False)
    notes: str = ""
    _pattern: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        for slot, ph in self.slots.items():
            if ph not in self.text:
                raise ValueError(f"template {self.name!r}: placeholder {ph!r} for slot {slot!r} not in text")
        alts = "|".join(re.escape(ph) for ph in sorted(self.slots.values(), key=len, reverse=True))
        object.__setattr__(self, "_pattern", re.compile(alts))

    def format(self, **values: str) -> str:
        missing = [s for s in self.slots if s not in values]
        extra = [s for s in values if s not in self.slots]
        if missing or extra:
            raise KeyError(f"template {self.name!r} takes slots {sorted(self.slots)}; "
                           f"missing {missing}, unknown {extra}")
        by_ph = {ph: str(values[s]) for s, ph in self.slots.items()}
        return self._pattern.sub(lambda m: by_ph[m.group(0)], self.text)

    def prefix(self) -> str:
        """The text before the first placeholder: the part shared by every prompt built from this
        template (what llama.cpp's prompt cache reuses across calls)."""
        first = min(self.text.index(ph) for ph in self.slots.values())
        return self.text[:first]


# ---------------------------------------------------------------------------------------------
# Re-Invoke (Chen et al., EMNLP Findings 2024), Appendix A
# ---------------------------------------------------------------------------------------------

REINVOKE_SYNTHETIC_QUERY = PromptTemplate(
    name="reinvoke_synthetic_query",
    text="""Suppose you are an assistant and you have access to the following API to answer user's queries. You are provided with a tool and its available API function including the description and parameters.

Your task is to generate a possible user query that can be handled by the API.

You must include the input parameters required in the API call. Please be creative and generate random but specific information for the required parameters.

Now you are given the API documentation below:

<tool document>

Please generate a user query that you will need to call this tool. Note the generated query should be complex enough to describe the scenarios that you will need to call the provided API to address them.

The relevant query is:""",
    slots={"tool_document": "<tool document>"},
    source="Re-Invoke, Appendix A, Fig. 4 (query generator; the paper samples it 10 times per tool at temperature 0.7, §4.3)",
)

REINVOKE_INTENT = PromptTemplate(
    name="reinvoke_intent",
    text="""****Instructions****

Suppose you are a query analyzer and your task is to extract the underlying user intents from the input query. You should preserve all the underlying user request and the extracted user intents should be easily understood without extra context information.

You should carefully read the given user query to understand its different intents. Then identify what are the specific intents. Each individual intent should be separated by a newline.

Here are some examples of how you should solve the task.

****Example****

Query: I'm planning to travel to Paris next weekend to visit my family, could you help me book a round trip flight ticket? I want to fly in economy class.

Intent:

book a round-trip flight ticket in economy class to Paris next weekend

Query: I'm a potential buyer looking for a condominium in the city of Miami. I am specifically interested in properties that have a minimum of two bathrooms. It should have walkable distance to the grocery stores.

Intent:

buy a real estate in Miami with a minimum of two bathrooms and walkable distance to the grocery stores

Query: I want to learn Spanish by talking to the native speakers at any time. Additionally, can you recommend some interesting books, preferably fictions, so that I can learn by reading? Also include the websites that I can buy them.

Intent:

learn Spanish by talking to the native speakers
recommend fictions to learn Spanish by reading
suggest the websites to buy Spanish fictions

****Begin!****

Query: <user query>

Intent:""",
    slots={"user_query": "<user query>"},
    source="Re-Invoke, Appendix A, Fig. 5 (intent extractor; decoding parameters not stated)",
)

REINVOKE_HYDE = PromptTemplate(
    name="reinvoke_hyde",
    text="""Suppose you are an assistant and you have access to the API documentation to answer user's queries. Please generate an API documentation in the JSON format that can be called to handle this query. The API documentation should be general enough to handle the cases beyond the provided queries. Please provide detailed descriptions on the parameters.

****Examples****

Query: I'm planning to travel to Paris next weekend to visit my family, could you help me book a round trip flight ticket? I want to fly in economy class.

The API documentation is:

```
{
  "api_name": "flights",
  "api_description": "Search the flight ticket on a specific travel date."
  "required_parameters": [
    {
      "name": "departure_date",
      "type": "DATETIME",
      "description": "The departure date for the flight."
    },
    {
      "name": "from",
      "type": "STRING",
      "description": "The city where the flight departs."
    },
    {
      "name": "to",
      "type": "STRING",
      "description": "The city where the flight arrives."
    },
    {
      "name": "fare_class",
      "type": "STRING",
      "description": "The fare class for the flight, economy, business or first."
    }
  ],
  "optional_parameters": [
    {
      "name": "return_date",
      "type": "DATETIME",
      "description": "The return date for the flight."
    }
  ]
}
```

****Begin!****

Query: <user query>

The API documentation is:""",
    slots={"user_query": "<user query>"},
    source="Re-Invoke, Appendix A, Fig. 6 (HyDE baseline, one-shot hypothetical tool document)",
    notes="The example JSON lacks a comma after \"api_description\" in the paper; kept as printed.",
)

# ---------------------------------------------------------------------------------------------
# Query generation (Kachuee et al., COLING 2025 Industry)
# ---------------------------------------------------------------------------------------------

QUERYGEN_DESCRIPTION = PromptTemplate(
    name="querygen_description",
    text="""Given a request by user (Human), generate the description of an API(s) that can be used to address the request.
Try to decompose the request to a set of descriptions for API(s) that can help handle the request.
Do NOT respond to the Human and just describe the API(s) that can help.
Use new line to separate multiple descriptions. Each description should be less than 20 words.
Return at most 5 descriptions (lines).
Do not provide any additional explanation or examples, return just a set of API descriptions.
Human: <user request>
Answer:""",
    slots={"user_request": "<user request>"},
    source="Query generation, §3.1, Fig. 2 (zero-shot prompt; reused as the SFT/alignment instruction, §3.2)",
)

QUERYGEN_INTENT = PromptTemplate(
    name="querygen_intent",
    text="""Given a request by user (Human), generate the description of the user’s intentions (intents).
Try to decompose the request to a set of intents.
Do NOT respond to the Human and just describe the intents.
Use new line to separate multiple descriptions. Each description should be less than 20 words.
Return at most 5 descriptions (lines).
Do not provide any additional explanation or examples, return just a set of intents.
Human: <user request>
Answer:""",
    slots={"user_request": "<user request>"},
    source="Query generation, Appendix C, Fig. 5 (intents instead of API descriptions; Table 5)",
)

# ---------------------------------------------------------------------------------------------
# Iterative feedback (Xu et al., EMNLP Findings 2024), §4.2 -- the paper prints no prompt text.
# Our wording follows the section sentence by sentence: comprehension F_C = LLM(P_C, q, D),
# assessment F_A = LLM(P_A, q, D, F_C), refinement F_R = LLM(P_R, q, D, F_A), "N/A" = no change.
# ---------------------------------------------------------------------------------------------

_FEEDBACK_HEAD = """You are helping a tool retriever find the tools that a user needs. You are given a user instruction and the top <k> tools the retriever returned for it, in ranked order (most relevant first).

Instruction: <instruction>

Retrieved tools:
<tools>
"""

# The three step instructions, each said once: the multi-turn round (toolkit.feedback) sends the
# head + step 1 as the first user turn and steps 2 and 3 as later turns, so each step sees the
# previous answers in the chat (Eqs. 3-4) and llama.cpp reuses the round's KV cache; the
# independent-call templates below repeat the head and paste the previous answer instead.
FEEDBACK_STEP_COMPREHENSION = """Step 1: comprehension. Give your comprehension of the instruction and of the retrieved tools, in two parts:
(1) Summarize the abstract user goals by ignoring detailed entity information in the given instruction.
(2) Understand the functionalities of the retrieved tools, focusing on the category, name, description, input and output parameters of the given tools."""

FEEDBACK_STEP_ASSESSMENT = """Step 2: assessment. Based on your comprehension of the user's intent and the tool functionalities, assess the effectiveness of the retrieved tools for handling the instruction from two perspectives:
1) Identify which of the user's goals could and could not be solved by the retrieved tools, with corresponding reasons.
2) Analyze whether the ranked order of the retrieved tools corresponds with their significance in addressing the user's intent, with specific reasons."""

_FEEDBACK_QUESTIONS = """1) Have all the user's goals been solved by the currently retrieved tools? 2) Have all existing appropriate tools been given the highest ranking priorities by the retriever?"""

_FEEDBACK_ENRICH = """Enrich it in two dimensions: 1) more detailed and personalized content about those user's intents which have not been solved by the current tools, helping the retriever explore other relevant tools; 2) more scenario-specific tool-usage information about the existing appropriate tools, helping the retriever give higher ranking priority to those tools."""

# decision="model": one step-3 turn in which the LLM applies §4.2's rule itself ("N/A" or the refinement)
FEEDBACK_STEP_REFINEMENT = """Step 3: refinement. Based on your assessment, answer two questions: """ + _FEEDBACK_QUESTIONS + """
If both answers are "yes", do not refine anything and return only the special token "N/A".
Otherwise, refine the user instruction to improve the tool retrieval. """ + _FEEDBACK_ENRICH + """
Return only the refined instruction (or "N/A"), without any explanation."""

# decision="answers" (default): step 3 answers the two questions, our code applies §4.2's rule ("if one of the
# answers is not 'yes', we prompt the LLM to provide a potential refinement") and asks step 4 only then
FEEDBACK_STEP_DECISION = """Step 3: decision. Based on your assessment, answer two questions with "yes" or "no": """ + _FEEDBACK_QUESTIONS + """
Answer in exactly this form, without any explanation:
1) yes or no
2) yes or no"""

FEEDBACK_STEP_REFINE = """Step 4: refinement. Refine the user instruction to improve the tool retrieval. """ + _FEEDBACK_ENRICH + """
Return only the refined instruction, without any explanation."""

# The same request, saying that the refinement keeps the user's request and adds to it: Qwen2.5-Coder-1.5B returned
# the instruction unchanged for most rounds with the wording above (scripts/ab_refine_wording.py measures both on the
# same rounds; results/bench/refine_wording.json). FeedbackConfig.refine_wording chooses.
FEEDBACK_STEP_REFINE_ADD = """Step 4: refinement. Write a refined version of the user instruction that helps the retriever find the tools the user needs. """ + _FEEDBACK_ENRICH + """ Keep the user's request and add this information to it: do not return the original instruction unchanged.
Return only the refined instruction, without any explanation."""

# FeedbackConfig.refine_wording -> step 4's request
FEEDBACK_REFINE_WORDINGS = {"enrich": FEEDBACK_STEP_REFINE, "enrich-add": FEEDBACK_STEP_REFINE_ADD}

# FeedbackConfig.brevity -> what steps 1 and 2 add to their request (comprehension, assessment). Uncapped,
# Qwen2.5-Coder-1.5B writes 270-1,024+ tokens for each of the two steps (it describes all K tools at length; 2 of 4
# comprehension answers still ended at a 1,024-token cap, scripts/bench_feedback.py), so no affordable cap holds
# them; "one-line" asks for an answer of bounded length (our wording: the paper prints no prompt) so that a cap can
# be sized to hold >= 95 % of the answers. "none" is the first generation's wording.
FEEDBACK_BREVITY = {
    "none": ("", ""),
    "one-line": ("\nBe brief: write part (1) in one sentence, and in part (2) one line per tool of at most 20 words.",
                 "\nBe brief: for 1) one line per user goal; for 2) at most three sentences."),
}

def _feedback_call(name: str, step: str, source: str, previous: tuple[tuple[str, str], ...] = ()) -> PromptTemplate:
    """One independent feedback call: the head (instruction and tools), the earlier answers it needs
    (``(label, slot)`` pairs, each pasted under its label), then the step's request."""
    sections = "".join(f"\n{label}\n<{slot}>\n" for label, slot in previous)
    slots = {"k": "<k>", "instruction": "<instruction>", "tools": "<tools>", **{s: f"<{s}>" for _, s in previous}}
    return PromptTemplate(name=name, text=_FEEDBACK_HEAD + sections + "\n" + step, slots=slots,
                          source=source + "; our wording, the paper prints no prompt", verbatim=False)


_ASSESSMENT_ANSWER = ("Your assessment of the retrieved tools:", "assessment")
FEEDBACK_COMPREHENSION = _feedback_call("feedback_comprehension", FEEDBACK_STEP_COMPREHENSION,
                                        "Iterative feedback, §4.2 'Comprehension' (Eq. 2)")
FEEDBACK_ASSESSMENT = _feedback_call("feedback_assessment", FEEDBACK_STEP_ASSESSMENT,
                                     "Iterative feedback, §4.2 'Assessment' (Eq. 3)",
                                     (("Your comprehension of the instruction and the tools:", "comprehension"),))
FEEDBACK_REFINEMENT = _feedback_call("feedback_refinement", FEEDBACK_STEP_REFINEMENT,
                                     "Iterative feedback, §4.2 'Refinement' (Eq. 4)", (_ASSESSMENT_ANSWER,))
FEEDBACK_DECISION = _feedback_call("feedback_decision", FEEDBACK_STEP_DECISION,
                                   "Iterative feedback, §4.2 'Refinement', its two questions", (_ASSESSMENT_ANSWER,))
_REFINE_PREVIOUS = (_ASSESSMENT_ANSWER, ("Your yes/no answers to the questions " + _FEEDBACK_QUESTIONS, "decision"))
FEEDBACK_REFINE = _feedback_call("feedback_refine", FEEDBACK_STEP_REFINE,
                                 "Iterative feedback, §4.2 'Refinement' (Eq. 4), asked when an answer is not 'yes'",
                                 _REFINE_PREVIOUS)
FEEDBACK_REFINE_ADD = _feedback_call("feedback_refine_add", FEEDBACK_STEP_REFINE_ADD,
                                     "Iterative feedback, §4.2 'Refinement' (Eq. 4), asked when an answer is not "
                                     "'yes'; 'keep the request and add to it'", _REFINE_PREVIOUS)
# FeedbackConfig.refine_wording -> step 4 as an independent call (the separate-calls benchmark variant)
FEEDBACK_REFINE_TEMPLATES = {"enrich": FEEDBACK_REFINE, "enrich-add": FEEDBACK_REFINE_ADD}


PROMPTS: dict[str, PromptTemplate] = {t.name: t for t in (
    REINVOKE_SYNTHETIC_QUERY, REINVOKE_INTENT, REINVOKE_HYDE,
    QUERYGEN_DESCRIPTION, QUERYGEN_INTENT,
    FEEDBACK_COMPREHENSION, FEEDBACK_ASSESSMENT, FEEDBACK_REFINEMENT, FEEDBACK_DECISION, FEEDBACK_REFINE,
    FEEDBACK_REFINE_ADD,
)}


def get(name: str) -> PromptTemplate:
    try:
        return PROMPTS[name]
    except KeyError:
        raise KeyError(f"unknown prompt {name!r}; known: {', '.join(PROMPTS)}") from None


# ---------------------------------------------------------------------------------------------
# Helpers that turn data into slot values
# ---------------------------------------------------------------------------------------------

def _field(obj: Any, name: str, default: str = "") -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def tool_document(doc: Any) -> str:
    """The tool document as Re-Invoke feeds it to Fig. 4: the document text (JSON for ToolBench
    APIs, ``name: description`` for ToolE), unchanged. Accepts a ``Document``, a dict or a str."""
    if isinstance(doc, str):
        return doc
    text = _field(doc, "text")
    if text:
        return str(text)
    return json.dumps(doc, ensure_ascii=False) if isinstance(doc, Mapping) else str(doc)


TOOL_FORMATS = ("text", "fields")


def _param(p: Any) -> str:
    """``name (type): description`` of one ToolBench-style parameter (a dict), or its string."""
    if not isinstance(p, Mapping):
        return " ".join(str(p).split())
    kind = f" ({p['type']})" if p.get("type") else ""
    desc = " ".join(str(p.get("description") or "").split())
    return f"{p.get('name', '?')}{kind}" + (f": {desc}" if desc else "")


def _tool_head(d: Any) -> str:
    """``[category] tool / api`` (the API name left out when it is the tool's)."""
    cat, tool, api = _field(d, "category"), _field(d, "tool"), _field(d, "api")
    name = tool if (not api or api == tool) else (f"{tool} / {api}" if tool else api)
    return (f"[{cat}] " if cat else "") + (name or "")


def _tool_fields(d: Any, max_chars: int) -> str:
    """One tool as ``[category] tool / api: description`` and then, as room allows, ``required: p1 (type): ...;
    optional: ...`` one parameter at a time (a parameter that does not fit is left out whole, with " ..." for the
    rest). The names are said once: the document text of a ToolBench API repeats them ("Advertising, abstract ip
    geolocation, geolocation from an ip address, ..."). A document without a ``description`` in its meta gives its
    text after the names."""
    head = _tool_head(d)
    meta = _field(d, "meta", None) or {}
    desc = meta.get("description") if isinstance(meta, Mapping) else None
    desc = " ".join(str(desc if desc is not None else _field(d, "text")).split())
    body = f"{head}: {desc}" if head else desc
    if len(body) > max_chars:
        return body[: max_chars - 3] + "..."
    for label, key in (("required", "required_parameters"), ("optional", "optional_parameters")):
        params = meta.get(key) if isinstance(meta, Mapping) else None
        for i, prm in enumerate(params or []):
            piece = (f" | {label}: " if i == 0 else "; ") + _param(prm)
            if len(body) + len(piece) + 4 > max_chars:
                return body + " ..."
            body += piece
        if params:
            body += "."
    return body


def format_tools(docs: Iterable[Any], max_chars: int = 600, style: str = "text") -> str:
    """Ranked tool list for the feedback prompts, one numbered entry per tool of at most ``max_chars`` characters
    (K=10 tools must fit a small context). ``style="text"`` (the first generation's): ``[category] tool / api: <the
    document text>``, cut at ``max_chars``; ``"fields"``: the names once, the description, then the parameters as
    room allows (:func:`_tool_fields`)."""
    if style not in TOOL_FORMATS:
        raise ValueError(f"format_tools style must be one of {TOOL_FORMATS}, got {style!r}")
    lines = []
    for i, d in enumerate(docs, 1):
        if isinstance(d, str):
            body = " ".join(d.split())
        elif style == "fields":
            body = _tool_fields(d, max_chars)
        else:
            head = _tool_head(d)
            body = f"{head}: {_field(d, 'text')}" if head else str(_field(d, "text"))
            body = " ".join(body.split())
        if len(body) > max_chars:
            body = body[: max_chars - 3] + "..."
        lines.append(f"{i}. {body}")
    return "\n".join(lines)


def intent_prompt(query: str) -> str:
    return REINVOKE_INTENT.format(user_query=query)


def synthetic_query_prompt(doc: Any) -> str:
    return REINVOKE_SYNTHETIC_QUERY.format(tool_document=tool_document(doc))


def hyde_prompt(query: str) -> str:
    return REINVOKE_HYDE.format(user_query=query)


def querygen_prompt(request: str, kind: str = "description") -> str:
    t = {"description": QUERYGEN_DESCRIPTION, "intent": QUERYGEN_INTENT}[kind]
    return t.format(user_request=request)


def feedback_prompts(instruction: str, docs: Iterable[Any]) -> dict[str, Any]:
    """The slot values shared by the three feedback steps (comprehension/assessment/refinement)."""
    docs = list(docs)
    return {"k": str(len(docs)), "instruction": instruction, "tools": format_tools(docs)}
