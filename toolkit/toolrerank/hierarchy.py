"""Hierarchy-Aware Reranking (ToolRerank §3.3): Algorithms 1 and 2, on plain lists.

Both take R = [r_1, ..., r_l], the truncated candidates sorted by the cross-encoder score
score(q, .) (best first), and return F = F_1 + F_2.

- :func:`har_single` (Algorithm 1, single-tool queries): X = {tool(r_1)} plus the tools of every
  r_i (i >= 2) with score(q, r_i) > tau_s; F_1 = the r_i whose tool is in X, F_2 = the rest.
  With ``extend`` (the *extended API list*), every tool x in X for which ``extend`` says so (by
  default: the unseen tools) contributes all its APIs from the whole library (``library_apis``);
  F_1 is then reranked by the cross-encoder (``score``) before F_2 is appended. An added API
  that also sits in F_2 cannot happen (F_2 holds only tools outside X); one outside T is new.
- :func:`har_multi` (Algorithm 2, multi-tool queries): a graph on R with an edge between r_i and
  r_j when tool(r_i) = tool(r_j) or sim(r_i, r_j) > tau_m (sim = the dual encoder's cosine);
  from every connected component keep the n best-scored results in S; F_1 = the r_i in S in R's
  order, F_2 = the rest.

Ties in score keep R's order (Python's sort is stable).
"""
from __future__ import annotations

from typing import Callable, Container, Iterable, Mapping, Sequence

import numpy as np


def har_single(R: Sequence[str], score: Mapping[str, float], tool_of: Callable[[str], str], tau_s: float,
               extend: Callable[[str], bool] | None = None,
               library_apis: Callable[[str], Iterable[str]] | None = None,
               score_fn: Callable[[list[str]], Mapping[str, float]] | None = None) -> list[str]:
    """Algorithm 1. ``score`` maps every r in R to score(q, r).

    Extended list: for each tool x in X with ``extend(x)`` true, the APIs ``library_apis(x)`` join
    F_1; ``score_fn(new_ids)`` gives score(q, .) for the ones not in ``score``; F_1 is sorted by
    score (stable). Returns F = F_1 + F_2 (longer than R when APIs were added).
    """
    if not R:
        return []
    X = {tool_of(R[0])}
    for r in R[1:]:
        if score[r] > tau_s:
            X.add(tool_of(r))
    F1 = [r for r in R if tool_of(r) in X]
    F2 = [r for r in R if tool_of(r) not in X]
    if extend is not None:
        if library_apis is None:
            raise ValueError("har_single: the extended API list needs library_apis")
        have = set(R)
        new = []
        for x in sorted(X, key=lambda t: [tool_of(r) for r in R].index(t)):
            if extend(x):
                new += [a for a in library_apis(x) if a not in have and a not in new]
        if new:
            scores = dict(score)
            missing = [a for a in new if a not in scores]
            if missing:
                if score_fn is None:
                    raise ValueError("har_single: APIs outside R need score_fn to be reranked")
                scores.update(score_fn(missing))
            F1 = sorted(F1 + new, key=lambda a: -scores[a])
    return F1 + F2


def connected_components(nodes: Sequence[str], edge: Callable[[int, int], bool] | np.ndarray) -> list[list[int]]:
    """Components of the graph on positions 0..len-1; each sorted, listed by first node.

    ``edge`` is a predicate on position pairs (union-find over every pair) or a boolean adjacency
    matrix (scipy's ``connected_components``, vectorised: the grid search calls this ~10^6 times)."""
    if isinstance(edge, np.ndarray):
        from scipy.sparse.csgraph import connected_components as scipy_components

        _, labels = scipy_components(edge, directed=False)
        comps: dict[int, list[int]] = {}
        for i, lab in enumerate(labels):
            comps.setdefault(int(lab), []).append(i)
        return sorted(comps.values(), key=lambda c: c[0])
    parent = list(range(len(nodes)))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for i in range(len(nodes) - 1):
        for j in range(i + 1, len(nodes)):
            if edge(i, j):
                ri, rj = find(i), find(j)
                if ri != rj:
                    parent[max(ri, rj)] = min(ri, rj)
    comps = {}
    for i in range(len(nodes)):
        comps.setdefault(find(i), []).append(i)
    return sorted(comps.values(), key=lambda c: c[0])


def har_multi(R: Sequence[str], score: Mapping[str, float], tool_of: Callable[[str], str],
              sim: Callable[[str, str], float] | np.ndarray, tau_m: float, n: int) -> list[str]:
    """Algorithm 2: at most ``n`` results per connected component go to F_1.

    ``sim`` is a pair function sim(r_i, r_j), or the matrix of sim(R[i], R[j]) (the fast path)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    tools = [tool_of(r) for r in R]
    if isinstance(sim, np.ndarray):
        if sim.shape != (len(R), len(R)):
            raise ValueError(f"har_multi: sim matrix has shape {sim.shape}, R has {len(R)} results")
        t = np.array(tools, dtype=object)
        edges = (t[:, None] == t[None, :]) | (sim > tau_m)
        comps = connected_components(R, edges)
    else:
        comps = connected_components(R, lambda i, j: tools[i] == tools[j] or sim(R[i], R[j]) > tau_m)
    S = set()
    for comp in comps:
        best = sorted(comp, key=lambda i: (-score[R[i]], i))[:n]
        S.update(best)
    return [R[i] for i in range(len(R)) if i in S] + [R[i] for i in range(len(R)) if i not in S]


def extend_unseen(seen_tools: Container[str], seen: bool = False, unseen: bool = True) -> Callable[[str], bool]:
    """The ``extend`` predicate of Table 7: build the extended list for seen and/or unseen tools."""
    return lambda tool: (seen if tool in seen_tools else unseen)
