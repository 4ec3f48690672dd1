"""Is a difference between two systems on the same queries more than noise?

Fisher's (approximate) randomization test, two-sided, as recommended for IR evaluation by Smucker,
Allan & Carterette (CIKM 2007), through ranx's implementation
(``ranx.statistical_tests.fisher_randomization_test``). Under the null hypothesis the two systems'
scores on each query are exchangeable; the p-value is the share of random per-query swaps whose
absolute difference of means reaches the observed one:

    p = (1/P) * sum_{i=1..P} [ |mean(a^(i)) - mean(b^(i))| >= |mean(a) - mean(b)| ]

    t = paired_randomization(per_query["A"], per_query["B"])     # {qid: score} each, same qids
    t.diff, t.p

Averages over groups (a paper's "Average" column: the mean of per-subset means) weight each query
by 1 / (G * n_g); :func:`macro_paired_randomization` tests that statistic with the same per-query
swaps (each query's sign flipped at random, weighted, vectorised in numpy; ranx's test has no weights).

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


def _check(a: Mapping, b: Mapping, n_permutations: int, what: str = "") -> None:
    if set(a) != set(b):
        only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
        raise ValueError(f"paired_randomization: the two systems must score the same queries{what}; {len(only_a)} only "
                         f"in the first (e.g. {only_a[:3]}), {len(only_b)} only in the second (e.g. {only_b[:3]}) "
                         "- restrict both to the common requests first")
    if not a:
        raise ValueError(f"paired_randomization: no queries to compare{what}")
    if n_permutations < 1:
        raise ValueError(f"paired_randomization: n_permutations must be >= 1, got {n_permutations}")


def paired_randomization(a: Mapping[str, float], b: Mapping[str, float], n_permutations: int = 10_000,
                         seed: int = 42) -> PairedTest:
    """Two-sided randomization test of ``mean(a) - mean(b)`` over the queries both hold. ``a`` and
    ``b`` must score exactly the same queries (a paired test on different requests would compare
    samples, not systems)."""
    _check(a, b, n_permutations)
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


def macro_paired_randomization(a: Mapping[str, Mapping[str, float]], b: Mapping[str, Mapping[str, float]],
                               n_permutations: int = 10_000, seed: int = 42) -> PairedTest:
    """The same test for the mean of per-group means (``{group: {qid: score}}`` each, the same groups
    and queries): statistic ``sum_g mean_q(a - b) / G``, per-query sign flips weighted 1 / (G n_g).
    ``mean_a`` / ``mean_b`` are the two macro averages."""
    if set(a) != set(b) or not a:
        raise ValueError(f"macro_paired_randomization: the two systems must cover the same groups, got "
                         f"{sorted(a)} and {sorted(b)}")
    d, w = [], []
    ma = mb = 0.0
    for g in sorted(a):
        _check(a[g], b[g], n_permutations, f" in group {g!r}")
        qids = sorted(a[g])
        x = np.array([a[g][q] for q in qids], dtype=np.float64)
        y = np.array([b[g][q] for q in qids], dtype=np.float64)
        d.append(x - y)
        w.append(np.full(len(qids), 1.0 / (len(a) * len(qids))))
        ma += x.mean() / len(a)
        mb += y.mean() / len(a)
    wd = np.concatenate(w) * np.concatenate(d)
    observed = abs(wd.sum())
    if not np.any(wd):
        p = 1.0
    else:
        rng = np.random.default_rng(seed)
        hits, done = 0, 0
        while done < n_permutations:            # batches keep the sign matrix small
            m = min(2_000, n_permutations - done)
            signs = rng.integers(0, 2, size=(m, wd.size), dtype=np.int8) * 2 - 1
            hits += int((np.abs(signs @ wd) >= observed - 1e-12).sum())
            done += m
        p = hits / n_permutations
    n = sum(len(v) for v in a.values())
    return PairedTest(n=n, mean_a=float(ma), mean_b=float(mb), diff=float(ma - mb), p=float(p))
