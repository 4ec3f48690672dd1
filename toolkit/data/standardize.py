"""ToolBench's name standardization, in one place.

Copied in behaviour (not imported) from ``toolbench/utils.py`` of OpenBMB/ToolBench @ d56fdd89:
``standardize`` (tool and API names), ``change_name`` (API names that are Python keywords or
``id``), ``standardize_category``. The library table (``apis.jsonl``) stores these forms, so any
display name from a query file maps to a library key with :func:`api_key`.
"""
from __future__ import annotations

import re

_NON_NAME = re.compile("[^\\u4e00-\\u9fa5^a-z^A-Z^0-9^_]")  # as ToolBench: '^' is literal inside []
_RESERVED = {"from", "class", "return", "false", "true", "id", "and"}


def standardize(name: str) -> str:
    """Tool/API display name -> ToolBench identifier: non-word chars to '_', runs of '_'
    collapsed, lower-cased, '_' stripped at both ends, ``get_`` before a leading digit."""
    s = _NON_NAME.sub("_", name)
    s = re.sub(r"(_)\1+", "_", s).lower().strip("_")
    if s and s[0].isdigit():
        s = "get_" + s
    return s


def change_name(name: str) -> str:
    """Reserved words get an ``is_`` prefix (ToolBench's ``change_name``)."""
    return "is_" + name if name in _RESERVED else name


def standardize_category(category: str) -> str:
    """Category display name -> folder name (spaces, commas and slashes to '_', '__' once to '_')."""
    s = category.replace(" ", "_").replace(",", "_").replace("/", "_")
    while " " in s or "," in s:
        s = s.replace(" ", "_").replace(",", "_")
    return s.replace("__", "_")


def api_key(category_name: str, tool_name: str, api_name: str) -> str:
    """Document id of an API: ``<category>/<tool>/<api>`` in standardized form."""
    return f"{standardize_category(category_name)}/{standardize(tool_name)}/{change_name(standardize(api_name))}"


def function_name(tool: str, api: str) -> str:
    """ToolBench's function name ``<api>_for_<tool>`` cut to its last 64 characters
    (the form of ``available_tools`` in the official default_evalset)."""
    return f"{api}_for_{tool}"[-64:]
