"""Reciprocal-rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009) of several methods' runs:

    RRF(d) = sum_i 1 / (k + rank_i(d)),   rank_i(d) = 1, 2, ... in run i (d absent from run i adds nothing)

with k = 60 (the paper's constant) over each run's first ``depth`` documents. Each run is ranked by
:func:`toolkit.metrics.rank` (its score order, ties broken as the metrics break them), so fusion sees
the ranking the metrics see; the fused run's ties are again broken by the metrics' rule.
"""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

from toolkit.data.contract import Run
from toolkit.methods.base import Cost, Method

RRF_K = 60


def rrf(runs: Sequence[Run], k: int = RRF_K, depth: int = 100, weights: Sequence[float] | None = None) -> Run:
    """The fused run over the queries of the first run (every run must hold them: a query a run lacks is an
    error, not a silent single-run answer)."""
    if not runs:
        raise ValueError("rrf: no runs to fuse")
    if k < 0 or depth < 1:
        raise ValueError(f"rrf: k must be >= 0 and depth >= 1, got k={k}, depth={depth}")
    weights = list(weights) if weights is not None else [1.0] * len(runs)
    if len(weights) != len(runs):
        raise ValueError(f"rrf: {len(weights)} weights for {len(runs)} runs")
    from toolkit.metrics import rank
    out: Run = {}
    for q in runs[0]:
        fused: dict[str, float] = {}
        for i, run in enumerate(runs):
            if q not in run:
                raise KeyError(f"rrf: run {i} has no results for query {q!r}")
            for r, d in enumerate(rank(run[q], depth), 1):
                fused[d] = fused.get(d, 0.0) + weights[i] / (k + r)
        out[q] = dict(sorted(fused.items(), key=lambda x: (-x[1], x[0])))
    return out


class Fusion(Method):
    """A combination: its parts run on the same corpus and queries, their runs fused by :func:`rrf`. Its cost is
    the sum of the parts' (run one after the other); a pending part makes the combination pending."""
    combination = True

    def __init__(self, name: str, parts: Sequence[Callable[[], Method]], k: int = RRF_K, depth: int = 100):
        super().__init__()
        self.name, self.k, self.depth = name, k, depth
        self.factories = list(parts)        # the benchmark finds each part's own row by its factory
        self.parts = [p() for p in parts]
        self.cheap = all(p.cheap for p in self.parts)

    def offline(self, corpus) -> None:
        for p in self.parts:
            p.offline(corpus)

    def online(self, queries: Mapping[str, str]) -> Run:
        return rrf([p.online(queries) for p in self.parts], k=self.k, depth=self.depth)

    def part_costs(self) -> list[tuple[str, Cost]]:
        return [(p.name, p.cost) for p in self.parts]
