"""Is a difference between two systems on the same queries more than noise?

Fisher's (approximate) randomization test, two-sided, as recommended for IR evaluation by Smucker,
Allan & Carterette (CIKM 2007), through ranx's implementation
(``ranx.statistical_tests.fisher_randomization_test``). Under the null hypothesis the two systems'
scores on each query are exchangeable; the p-value is the share of random per-query swaps whose
absolute difference of means reaches the observed one:

    p = (1/P) * sum_{i=1..P} [ |mean(a^(i)) - mean(b^(i))| >= |mean(a) - mean(b)| ]

    t = paired_randomization(per_query["A"], per_query["B"])     # {qid: score} each, same qids
    t.diff, t.p

The test only says whether the two systems differ on *these* queries; with the 200-request samples of
the LLM conditions a Recall@5 difference of a few hundredths is often within noise, which is what
the notebooks' claims tables need to say beside a yes or no.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np


@dataclass(frozen=True)
class PairedTest:
    n: int            # queries scored by both systems
    mean_a: float
    mean_b: float
    diff: float       # mean_a - mean_b
    p: float          # two-sided randomization p-value


def paired_randomization(a: Mapping[str, float], b: Mapping[str, float], n_permutations: int = 10_000,
                         seed: int = 42) -> PairedTest:
    """Two-sided randomization test of ``mean(a) - mean(b)`` over the queries both hold. ``a`` and
    ``b`` must score exactly the same queries (a paired test on different requests would compare
    samples, not systems)."""
    if set(a) != set(b):
        only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
        raise ValueError(f"paired_randomization: the two systems must score the same queries; {len(only_a)} only "
                         f"in the first (e.g. {only_a[:3]}), {len(only_b)} only in the second (e.g. {only_b[:3]}) "
                         "- restrict both to the common requests first")
    if not a:
        raise ValueError("paired_randomization: no queries to compare")
    if n_permutations < 1:
        raise ValueError(f"paired_randomization: n_permutations must be >= 1, got {n_permutations}")
    qids = sorted(a)
    x = np.array([a[q] for q in qids], dtype=np.float64)
    y = np.array([b[q] for q in qids], dtype=np.float64)
    if np.array_equal(x, y):
        p = 1.0                       # every swap reproduces the observed difference of 0
    else:
        from ranx.statistical_tests import fisher_randomization_test
        p, _ = fisher_randomization_test(x, y, n_permutations, 0.05, seed)
    return PairedTest(n=len(qids), mean_a=float(x.mean()), mean_b=float(y.mean()), diff=float(x.mean() - y.mean()),
                      p=float(p))
