"""toolkit.llm.parsers on hand-made edge cases and on real answers of the local models.

The REAL_* fixtures are verbatim answers generated here (greedy unless noted) with this client:
Qwen2.5-Coder-1.5B (Re-Invoke intents, from the committed cache), Qwen2.5-Coder-0.5B (query
generation, synthetic queries, HyDE, feedback refinement; task default sampling), and
SmolLM2-135M (intents; a weak model whose answers ignore the format).
"""
from __future__ import annotations

import pytest

from toolkit.llm import parsers as P

# ---------------------------------------------------------------------------------------------
# real answers
# ---------------------------------------------------------------------------------------------

REAL_QWEN15_INTENTS = [
    ("get the latest news about Tesla", ["get the latest news about Tesla"]),
    ("get the current stock price of Apple\nget recent news related to Apple",
     ["get the current stock price of Apple", "get recent news related to Apple"]),
    ("manage expenses\nrecommend cost-effective accommodation options\nprovide insights on local transportation fares",
     ["manage expenses", "recommend cost-effective accommodation options", "provide insights on local transportation fares"]),
    ("calculate the compound interest for a $10,000 investment with a 5% rate for 5 years\n"
     "check if there are any discounts available on shares of Company X",
     ["calculate the compound interest for a $10,000 investment with a 5% rate for 5 years",
      "check if there are any discounts available on shares of Company X"]),
]

REAL_SMOLLM2_INTENTS = [
    "You should focus on the following:\n\n1. Understand the context: The user's query is about Tesla's impact on the "
    "stock market, which is a topic that is often discussed in the context of technology and innovation.\n\n2. Identify "
    "the intent: The user's intent is to learn about Tesla's impact on the stock market, which is a topic that is often "
    "discussed in the context of technology and innovation.\n\n3. Extract the intent: The user's intent is to learn about "
    "Tesla's impact on the stock market, which is a topic that is often discussed in the context of technology and "
    "innovation.\n\nIn this example,",
    "I'm here to help you find the current stock price of Apple and any recent news related to the company.\n\n"
    "**Current Stock Price:**\n\nApple Inc. (AAPL) is currently trading at $1.25 billion.\n\n**Recent News:**\n\nThe "
    "stock price of Apple Inc. has been steadily increasing over the past year, with a 1.2% increase in the past month."
    "\n\n**Current Stock Price:**\n\nThe current stock price of Apple Inc. is currently at $1.25 billion.\n\n**Recent "
    "News:**\n\nThe stock price of Apple Inc",
]

REAL_QWEN05_QUERYGEN = [
    # messy: markdown list with nested bullets and links (answer cut at max_tokens)
    "1. **Course: Personal Finance Management**\n   - **Description**: This course covers essential concepts in personal "
    "finance, including budgeting, investments, savings, and retirement planning. It also covers practical applications "
    "of financial management, such as budgeting online, saving with credit cards, and investing in stocks and bonds.\n"
    "   - **APIs**: You can use the following APIs to access information about personal finance:\n     - **API for "
    "Budgeting**: [Budget API](https://api.example.com/budget)\n     - **API for Investments**: [Investment API]"
    "(https://api.example.com/investment)\n     - **API for Savings**: [Savings API](https://api.example.com/savings)\n"
    "     - **API for Retirement**: [Retirement API](https://api.example.com/ret",
    # name / description pairs
    "API: CalculateCompoundInterest\nDescription: This API allows users to calculate the compound interest of an "
    "investment over a period of time. It takes the principal amount, interest rate, and time period as inputs and "
    "returns the accumulated interest.\n\nAPI: FinancialCourses\nDescription: This API suggests financial courses to "
    "improve users' understanding of investments. It provides a comprehensive list of financial courses, including "
    "financial literacy, investment strategies, and investment management.\n\nAPI: InvestmentAnalysis\nDescription: "
    "This API analyzes investment data to provide insights into investment performance and trends. It takes the "
    "investment data as inputs and returns the analysis results.",
    # the intent variant (Fig. 5 of the query-generation paper)
    "hotel recommendations\njob opportunities",
]

REAL_QWEN05_SYNTHETIC = [
    ("Sure, here's a possible user query that can be handled by the FinanceTool API:\n\n\"Retrieve the latest financial "
     "updates on stock prices and corporate financial reports for a specific company, such as Apple Inc.\"\n\nThis query "
     "prompts the user to specify the company for which they want to retrieve data, which can be either a single company "
     "name or a range of companies. The API can then retrieve the latest financial updates on these companies and provide "
     "real-time insights, and analyze on a wide range of options, including stocks, cryptocurrencies, and more.",
     "Retrieve the latest financial updates on stock prices and corporate financial reports for a specific company, "
     "such as Apple Inc."),
    ("Sure, here's a possible user query that can be handled by the API:\n\n\"ExchangeTool: Convert USD to EUR using our "
     "integrated currency conversion tool. Please provide the amount to be converted.\"\n\nThis query involves the "
     "exchange of USD to EUR using the provided API and requires the exact amount to be converted.",
     "ExchangeTool: Convert USD to EUR using our integrated currency conversion tool. Please provide the amount to be "
     "converted."),
]

REAL_QWEN05_HYDE = (
    '{\n  "api_name": "weather",\n  "api_description": "Search for weather information on a specific date."\n  '
    '"required_parameters": [\n    {\n      "name": "date",\n      "type": "DATETIME",\n      "description": "The date '
    'for which to search for weather information."\n    }\n  ],\n  "optional_parameters": [\n    {\n      "name": '
    '"city",\n      "type": "STRING",\n      "description": "The city for which to search for weather information."\n'
    '    }\n  ]\n}\n```\n\n**Begin!**')

REAL_QWEN05_REFINEMENT = "N/A"


@pytest.mark.parametrize("text,expected", REAL_QWEN15_INTENTS)
def test_real_qwen_intents(text, expected):
    assert P.parse_intents(text) == expected


def test_real_smollm2_answers_are_parsed_without_preambles_or_headings():
    a = P.parse_intents(REAL_SMOLLM2_INTENTS[0])
    assert a[0].startswith("Understand the context: The user's query is about Tesla")
    assert not any(x.startswith(("1.", "You should focus")) for x in a)
    b = P.parse_intents(REAL_SMOLLM2_INTENTS[1])
    assert "Current Stock Price:" not in b and "Recent News:" not in b
    assert b[1] == "Apple Inc. (AAPL) is currently trading at $1.25 billion."
    assert len(b) == len(set(x.lower() for x in b))


def test_real_querygen_answers():
    a = P.parse_api_descriptions(REAL_QWEN05_QUERYGEN[0])
    assert len(a) == 5 and a[0] == "Course: Personal Finance Management"
    assert all("**" not in x and "](" not in x and not x.endswith(":") for x in a)
    assert "API for Budgeting: Budget API" in a
    b = P.parse_api_descriptions(REAL_QWEN05_QUERYGEN[1])
    assert [x.split(":")[0] for x in b] == ["CalculateCompoundInterest", "FinancialCourses", "InvestmentAnalysis"]
    assert b[0].startswith("CalculateCompoundInterest: This API allows users to calculate")
    assert P.parse_api_descriptions(REAL_QWEN05_QUERYGEN[2]) == ["hotel recommendations", "job opportunities"]


@pytest.mark.parametrize("text,expected", REAL_QWEN05_SYNTHETIC)
def test_real_synthetic_queries(text, expected):
    assert P.parse_synthetic_query(text) == expected


def test_real_hyde_document():
    doc = P.parse_hyde_document(REAL_QWEN05_HYDE)
    assert doc.startswith("{") and doc.endswith("}") and '"api_name": "weather"' in doc and "Begin" not in doc


# qwen-0.5b's step-4 answer (scripts/bench_feedback.py --decision both, G2_instruction/81337), cut at its 96 tokens
REAL_QWEN05_STEP4 = ("Certainly! Here's a refined instruction:\n\n### Refined Instruction\n\n**I want to organize a company "
                     "event and include some entertaining records.**\n\n**You need to include some entertaining records "
                     "related to 'push ups'.**\n\n**You also need to recommend a random Quick Pick for Lotto America to "
                     "add some fun to our event.**\n\n**The Guinness World Records related to 'push ups' are available.**"
                     "\n\n**The Guinness World Records API provides a comprehensive list of Guinness World Records for a")


def test_real_step4_refinement_skips_its_heading_and_keeps_every_paragraph():
    out = P.parse_refinement(REAL_QWEN05_STEP4)
    assert out.startswith("I want to organize a company event") and "Quick Pick for Lotto America" in out
    assert "Refined Instruction" not in out and "**" not in out and "#" not in out


def test_real_refinement_na():
    assert P.parse_refinement(REAL_QWEN05_REFINEMENT) is None


# ---------------------------------------------------------------------------------------------
# hand-made edge cases
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,expected", [
    ("", []),
    ("   \n\n  ", []),
    ("1. book a flight\n2. find a hotel", ["book a flight", "find a hotel"]),
    ("1) book a flight\n2) find a hotel", ["book a flight", "find a hotel"]),
    ("(1) book a flight\n(2) find a hotel", ["book a flight", "find a hotel"]),
    ("- book a flight\n* find a hotel\n\u2022 rent a car", ["book a flight", "find a hotel", "rent a car"]),
    ("a. book a flight\nb) find a hotel", ["book a flight", "find a hotel"]),
    ("Sure, here are the intents:\n1. book a flight\n2. find a hotel\nThese intents cover the user's request.",
     ["book a flight", "find a hotel"]),
    ("Here are the extracted intents:\n\n- book a flight\n- find a hotel\n\nI hope this helps!",
     ["book a flight", "find a hotel"]),
    ("Intent 1: book a flight\nIntent 2: find a hotel", ["book a flight", "find a hotel"]),
    ("Intent:\nbook a flight", ["book a flight"]),
    ("- **Intent 1:** book a flight\n- **Intent 2:** find a hotel", ["book a flight", "find a hotel"]),
    ('"book a flight"\n\'find a hotel\'', ["book a flight", "find a hotel"]),
    ("```\nbook a flight\nfind a hotel\n```", ["book a flight", "find a hotel"]),
    ("book a flight\nBook a flight.\nfind a hotel", ["book a flight", "find a hotel"]),          # duplicates
    ("book a flight\n\nQuery: I want pizza\n\nIntent:\norder a pizza", ["book a flight"]),         # pattern continued
    ("Query: echo of the input\nIntent:\nbook a flight", ["book a flight"]),
    ("### Intents\nbook a flight", ["book a flight"]),
    ("book a flight\n---\nfind a hotel", ["book a flight", "find a hotel"]),
    # real Qwen-1.5B answer: an intent that starts like a closing remark is kept
    ("play some soothing music\nlet me know if it's going to rain later in the day",
     ["play some soothing music", "let me know if it's going to rain later in the day"]),
    ("book a flight\nLet me know if you need anything else!", ["book a flight"]),
    ("book a flight\nNote: the dates are flexible", ["book a flight"]),
])
def test_parse_intents_cases(text, expected):
    assert P.parse_intents(text) == expected


def test_parse_lines_max_items_and_numbers_inside_items():
    assert P.parse_lines("a\nb\nc\nd\ne\nf\ng", max_items=5) == list("abcde")
    assert P.parse_intents("convert 100 USD to EUR\nbook 2 tickets") == ["convert 100 USD to EUR", "book 2 tickets"]
    assert P.parse_intents("2023 tax filing help") == ["2023 tax filing help"]


def test_api_descriptions_skip_explanations_and_cap_at_five():
    text = ("Sure, I can help with that. Here are the API descriptions:\n1. Search flights by date\n2. Book a hotel room\n"
            "3. Get weather forecast\n4. Convert currency\n5. Find restaurants\n6. Rent a car\n"
            "These APIs will help the user plan the trip.")
    assert P.parse_api_descriptions(text) == ["Search flights by date", "Book a hotel room", "Get weather forecast",
                                              "Convert currency", "Find restaurants"]
    assert P.parse_api_descriptions("Human: what now?\nAnswer: x") == ["x"]
    assert P.parse_api_descriptions("API to search news\nHuman: next request") == ["API to search news"]


@pytest.mark.parametrize("text", ["N/A", "n/a", "N/A.", '"N/A"', "NA", "None", "No refinement needed.",
                                  "**N/A**", "N/A - all goals are solved", " n / a "])
def test_refinement_na(text):
    assert P.parse_refinement(text) is None
    assert P.is_na(text)


@pytest.mark.parametrize("text,expected", [
    ("Find a pet-friendly hotel in Paris for next weekend.", "Find a pet-friendly hotel in Paris for next weekend."),
    ("Refined instruction: Find a pet-friendly hotel in Paris.", "Find a pet-friendly hotel in Paris."),
    ('Sure, here is the refined instruction:\n\n"Find a pet-friendly hotel in Paris."\n\nThis adds detail.',
     "Find a pet-friendly hotel in Paris."),
    ("Refined Instruction:\nFind a hotel\nin Paris", "Find a hotel in Paris"),
    # headings and bold labels before the instruction are not the instruction
    ("**Refined Instruction:**\n\nI want to organize an event.", "I want to organize an event."),
    ("### Refined Instruction\nFind hotels in Rome.\n\nThis refinement adds the city.", "Find hotels in Rome."),
    # paragraphs of one instruction are joined, up to a comment or a new section
    ("Find flights to Rome.\n\nUse economy class.\n\nNote: dates matter.", "Find flights to Rome. Use economy class."),
    ("I need the weather.\n\n### Explanation\nIt adds things.", "I need the weather."),
])
def test_refinement_text(text, expected):
    assert P.parse_refinement(text) == expected


@pytest.mark.parametrize("text,expected", [
    ("Show me news about AI from the past week.", "Show me news about AI from the past week."),
    ("The relevant query is: Show me news about AI.", "Show me news about AI."),
    ('"Show me news about AI."', "Show me news about AI."),
    ("User query:\nShow me news\nabout AI.", "Show me news about AI."),
    ("Sure! Here's a query:\n\nShow me news about AI.\n\nNote: this uses pageSize.", "Show me news about AI."),
    ("", ""),
])
def test_synthetic_query_cases(text, expected):
    assert P.parse_synthetic_query(text) == expected


def test_hyde_name_description():
    # the Fig. 6 example's missing comma, an escaped quote, a parameter called "name" after the api fields
    doc = ('{\n  "api_name": "flights",\n  "api_description": "Search the \\"cheapest\\" flight."\n'
           '  "required_parameters": [{"name": "to", "description": "The city."}]\n}')
    assert P.hyde_name_description(doc) == 'flights: Search the "cheapest" flight.'
    assert P.hyde_name_description('{"api_description": "only this"}') == "only this"
    assert P.hyde_name_description('{"api_name": "x"}') == "x"
    assert P.hyde_name_description("no fields at all") == "no fields at all"
    assert P.hyde_name_description("") == ""


def test_hyde_variants():
    fenced = 'Here is the documentation:\n```json\n{"api_name": "x"}\n```\nThis API ...'
    assert P.parse_hyde_document(fenced) == '{"api_name": "x"}'
    assert P.parse_hyde_document('The API documentation is: {"a": {"b": 1}} done') == '{"a": {"b": 1}}'
    assert P.parse_hyde_document("api_name: flights\napi_description: search flights") \
        == "api_name: flights api_description: search flights"
    assert P.parse_hyde_document("") == ""


def test_intents_or_query_falls_back_to_the_query():
    assert P.intents_or_query("", "book a flight") == ["book a flight"]
    assert P.intents_or_query("Here are the intents:", "book a flight") == ["book a flight"]
    assert P.intents_or_query("find a hotel", "q") == ["find a hotel"]


def test_parsers_never_execute_anything():
    evil = "__import__('os').system('echo pwned')\n{'a': __import__('os')}"
    assert P.parse_intents(evil)[0].startswith("__import__")     # returned as text, nothing evaluated
    assert P.parse_hyde_document(evil).startswith("{'a'")


def test_copies_of_the_fig5_examples_are_detected():
    from toolkit.llm.parsers import copied_examples, few_shot_intent_lines
    ex = few_shot_intent_lines()
    assert "book a round trip flight ticket in economy class to paris next weekend" in ex and len(ex) == 5
    got = copied_examples(["Book a round-trip flight ticket in economy class to Paris next weekend.",
                           "find the weather in Rome"])
    assert got == ["Book a round-trip flight ticket in economy class to Paris next weekend."]


@pytest.mark.parametrize("text,expected", [
    ("1) yes\n2) no", ("yes", "no")),
    ("**1)** No.\n**2)** Yes", ("no", "yes")),
    ("1. Have all the goals been solved? No, the weather is missing.\n2. yes", ("no", "yes")),
    ("1) No. 2) Yes.", ("no", "yes")),
    ("Q1: no Q2: no", ("no", "no")),
    ("1)\nYes\n2)\nNo", ("yes", "no")),
    ("Yes, no", ("yes", "no")),                          # no markers: the words in order
    ("1) yes", ("yes", "?")),                            # question 2 unanswered
    ("1) yes or no\n2) yes", ("?", "yes")),              # an echoed "yes or no" is no answer
    ("N/A", ("yes", "yes")),                             # the paper's no-refinement token
    ("", ("?", "?")),
])
def test_parse_decision_reads_the_two_answers(text, expected):
    assert P.parse_decision(text) == expected
