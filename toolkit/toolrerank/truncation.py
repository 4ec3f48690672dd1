"""Adaptive Truncation (ToolRerank §3.2).

Given the coarse-grained results C = [c_1, ..., c_m] of the retriever, keep c_i when its tool was
seen in training and i <= m_s, or when its tool is unseen and i <= m_u. The paper sets m_s < m_u:
the reranker does better with few candidates for seen tools and with many for unseen tools
(Figure 1(a)). m_s = m_u is plain Rerank-m truncation.
"""
from __future__ import annotations

from typing import Callable, Container, Sequence


def adaptive_truncate(candidates: Sequence[str], tool_of: Callable[[str], str], seen_tools: Container[str],
                      m_s: int, m_u: int) -> list[str]:
    """T = [c_i in C : i <= m_s if tool(c_i) is seen else i <= m_u] (positions 1-based, order kept)."""
    if m_s < 0 or m_u < 0:
        raise ValueError(f"m_s and m_u must be >= 0, got {m_s}, {m_u}")
    out = []
    for i, c in enumerate(candidates, 1):
        limit = m_s if tool_of(c) in seen_tools else m_u
        if i <= limit:
            out.append(c)
    return out
