"""Is a difference between two systems on the same queries more than noise?

Fisher's (approximate) randomization test, two-sided, as recommended for IR evaluation by Smucker,
Allan & Carterette (CIKM 2007). Under the null hypothesis the two systems' scores on each query are
exchangeable; swapping them flips the sign of that query's difference, and the p-value is the share
of random sign flips whose absolute mean difference reaches the observed one, counting the observed
assignment itself (Phipson & Smyth 2010: a Monte Carlo p-value is never 0; scipy's permutation_test
does the same):

    p = (1 + sum_{i=1..P} [ |sum_q w_q s_q^(i) d_q| >= |sum_q w_q d_q| ]) / (P + 1),
    d_q = a_q - b_q,  s_q^(i) = +-1

with w_q = 1/n for a plain mean. With P = 10,000 the smallest p is about 1e-4, printed "p<0.001".

    t = paired_randomization(per_query["A"], per_query["B"])     # {qid: score} each, same qids
    t.diff, t.p

Averages over groups (a paper's "Average" column: the mean of per-subset means) weight each query
by 1 / (G * n_g); :func:`macro_paired_randomization` tests that statistic with the same sign flips.

Why not ranx's ``fisher_randomization_test``: it draws its swaps in numba ``prange`` threads, whose
random states its ``random_seed`` does not reach, so the same call returns different p-values
(0.595 / 0.604 / 0.601 / 0.596 on one pair of 30-query systems). A claims table must print the same
p on every run; the numpy version here is seeded and vectorised, and tests/test_significance.py
checks it against scipy's permutation test and ranx's.

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
    for which, scores in (("first", a), ("second", b)):
        bad = [q for q, v in scores.items() if not np.isfinite(float(v))]
        if bad:
            raise ValueError(f"paired_randomization: the {which} system's score is not a finite number for {len(bad)} "
                             f"quer{'y' if len(bad) == 1 else 'ies'}{what} (e.g. {bad[0]!r}: {scores[bad[0]]}); a NaN "
                             "would make every sign flip miss and give the smallest p -- score the query or drop it "
                             "from both systems")


def _sign_flip_p(wd: np.ndarray, n_permutations: int, seed: int) -> float:
    """share of random sign flips of the weighted differences ``wd`` whose |sum| reaches the observed, the
    observed assignment counted among them"""
    observed = abs(wd.sum())
    if not np.any(wd):
        return 1.0                    # every flip reproduces the observed difference of 0
    rng = np.random.default_rng(seed)
    hits, done = 0, 0
    while done < n_permutations:      # batches keep the sign matrix small
        m = min(2_000, n_permutations - done)
        signs = rng.integers(0, 2, size=(m, wd.size), dtype=np.int8) * 2 - 1
        hits += int((np.abs(signs @ wd) >= observed - 1e-12).sum())
        done += m
    return (hits + 1) / (n_permutations + 1)


def paired_randomization(a: Mapping[str, float], b: Mapping[str, float], n_permutations: int = 10_000,
                         seed: int = 42) -> PairedTest:
    """Two-sided randomization test of ``mean(a) - mean(b)`` over the queries both hold. ``a`` and
    ``b`` must score exactly the same queries (a paired test on different requests would compare
    samples, not systems)."""
    _check(a, b, n_permutations)
    qids = sorted(a)
    x = np.array([a[q] for q in qids], dtype=np.float64)
    y = np.array([b[q] for q in qids], dtype=np.float64)
    p = _sign_flip_p((x - y) / len(qids), n_permutations, seed)
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
    p = _sign_flip_p(np.concatenate(w) * np.concatenate(d), n_permutations, seed)
    n = sum(len(v) for v in a.values())
    return PairedTest(n=n, mean_a=float(ma), mean_b=float(mb), diff=float(ma - mb), p=float(p))


def relative_gain_undefined(b1: Mapping[str, float], b2: Mapping[str, float]) -> str | None:
    """Why :func:`relative_gain_difference` has no statistic for baselines ``b1`` / ``b2`` (a baseline that scores
    0 on its whole set: its relative gain, a paper's "% improve", is NaN), or None when it has one."""
    bad = [name for name, b in (("set 1", b1), ("set 2", b2)) if not any(b.values())]
    return f"system b scores 0 on {' and '.join(bad)}, its relative gain is undefined" if bad else None


def relative_gain_difference(a1: Mapping[str, float], b1: Mapping[str, float], a2: Mapping[str, float],
                             b2: Mapping[str, float], n_permutations: int = 10_000, seed: int = 42) -> PairedTest:
    """Is system a's relative gain over b larger on query set 2 than on set 1? Two independent sets (I1 and I2: no
    query in both), each scored by both systems. Statistic (a paper's "% improve" of set 2 minus that of set 1):

        g = (mean_2(a) / mean_2(b) - 1) - (mean_1(a) / mean_1(b) - 1)

    Under the null hypothesis the gain does not depend on the set, so a query's (a, b) pair is exchangeable between
    the sets: the p-value is the share of random reassignments of the pooled pairs to sets of the same sizes whose
    |g| reaches the observed one, the observed assignment counted (a two-sided permutation test, as
    :func:`paired_randomization`). ``mean_a`` / ``mean_b`` are set 2's and set 1's gains, ``n`` the pooled queries."""
    _check(a1, b1, n_permutations, " in set 1")
    _check(a2, b2, n_permutations, " in set 2")
    if why := relative_gain_undefined(b1, b2):
        raise ValueError(f"relative_gain_difference: {why}")
    if set(a1) & set(a2):
        raise ValueError(f"relative_gain_difference: the two sets must not share queries, "
                         f"{len(set(a1) & set(a2))} do (e.g. {sorted(set(a1) & set(a2))[:3]})")
    q1, q2 = sorted(a1), sorted(a2)
    x = np.array([a1[q] for q in q1] + [a2[q] for q in q2], dtype=np.float64)
    y = np.array([b1[q] for q in q1] + [b2[q] for q in q2], dtype=np.float64)
    n1, n = len(q1), len(q1) + len(q2)

    def gain(sx, sy, cx, cy):   # sums over set 2, counts cancel within a ratio of means
        with np.errstate(divide="ignore", invalid="ignore"):
            return sx / sy - (cx - sx) / (cy - sy)
    tx, ty = x.sum(), y.sum()
    g2 = x[n1:].mean() / y[n1:].mean() - 1
    g1 = x[:n1].mean() / y[:n1].mean() - 1
    observed = g2 - g1
    rng = np.random.default_rng(seed)
    hits, done = 0, 0
    while done < n_permutations:
        m = min(2_000, n_permutations - done)
        in2 = np.argsort(rng.random((m, n)), axis=1)[:, : n - n1]      # a random set 2 of the same size
        g = gain(x[in2].sum(1), y[in2].sum(1), tx, ty)
        hits += int((np.nan_to_num(np.abs(g), nan=np.inf) >= abs(observed) - 1e-12).sum())
        done += m
    return PairedTest(n=n, mean_a=float(g2), mean_b=float(g1), diff=float(observed),
                      p=float((hits + 1) / (n_permutations + 1)))


def paired_bootstrap_ci(a: Mapping, b: Mapping, level: float = 0.95, n_boot: int = 2_000,
                        seed: int = 42) -> tuple[float, float]:
    """Percentile interval of ``mean(a) - mean(b)`` under a paired bootstrap over queries: each of ``n_boot``
    resamples draws the queries with replacement and keeps each query's (a, b) pair together,

        d* = mean_{q in resample} (a_q - b_q),   CI = [quantile_{(1-level)/2}(d*), quantile_{(1+level)/2}(d*)].

    ``a`` and ``b`` are ``{qid: score}`` on the same queries, or ``{group: {qid: score}}`` for the mean of
    per-group means (each group resampled on its own, stratified, as the macro average weights it)."""
    if not 0 < level < 1:
        raise ValueError(f"paired_bootstrap_ci: level must be in (0, 1), got {level}")
    groups = ({g: (a[g], b[g]) for g in sorted(a)} if any(isinstance(v, Mapping) for v in a.values())
              else {"": (a, b)})
    rng = np.random.default_rng(seed)
    total = np.zeros(n_boot)
    for g, (x, y) in groups.items():
        _check(x, y, 1, f" in group {g!r}" if g else "")
        qids = sorted(x)
        d = np.array([x[q] - y[q] for q in qids], dtype=np.float64)
        idx = rng.integers(0, len(d), size=(n_boot, len(d)))
        total += d[idx].mean(axis=1) / len(groups)
    lo, hi = np.quantile(total, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def compared(label: str, a: Mapping, b: Mapping, n_permutations: int = 10_000, seed: int = 42) -> dict:
    """One comparison of a claims table as data: ``{"comparison": label, "n", "mean_a", "mean_b", "diff",
    "p", "ci"}``. ``a`` and ``b`` are ``{qid: score}`` (:func:`paired_randomization`) or ``{group: {qid: score}}``
    (:func:`macro_paired_randomization`, the mean of per-group means); ``ci``: the 95 % paired-bootstrap interval
    of ``diff`` (:func:`paired_bootstrap_ci`)."""
    macro = any(isinstance(v, Mapping) for v in a.values())
    rec = as_record(label, (macro_paired_randomization if macro else paired_randomization)(a, b, n_permutations,
                                                                                           seed))
    rec["ci"] = list(paired_bootstrap_ci(a, b, seed=seed))
    return rec


def as_record(label: str, t: PairedTest) -> dict:
    """A test as a claims table's comparison: ``{"comparison": label, "n", "mean_a", "mean_b", "diff", "p"}``."""
    return {"comparison": label, "n": t.n, "mean_a": t.mean_a, "mean_b": t.mean_b, "diff": t.diff, "p": t.p}


def compared_on_common(label: str, a: Mapping | None, b: Mapping | None, **kw) -> dict | None:
    """:func:`compared` on the queries both ``{qid: score}`` maps hold (two answered samples that may
    differ by a few unanswered requests); None when either is missing or they share no query."""
    if not isinstance(a, Mapping) or not isinstance(b, Mapping):
        return None
    common = sorted(set(a) & set(b))
    if not common:
        return None
    return compared(label, {q: a[q] for q in common}, {q: b[q] for q in common}, **kw)


def win_tie_loss(a: Mapping, b: Mapping, tol: float = 1e-9) -> dict:
    """Per query, is ``a`` above, equal to (within ``tol``) or below ``b``: ``{"n", "better", "equal", "worse"}``
    over the queries both ``{qid: score}`` maps hold -- the paired test's mean difference split into how many
    queries move each way (a small mean change can be many queries moving both ways, or a few moving one)."""
    common = [q for q in a if q in b]
    d = np.array([a[q] - b[q] for q in common], dtype=float)
    return {"n": len(common), "better": int((d > tol).sum()), "equal": int((abs(d) <= tol).sum()),
            "worse": int((d < -tol).sum())}


def p_label(p: float) -> str:
    """``"p=0.012"``, ``"p<0.001"`` below what 10,000 permutations resolve, ``"p=n/a"`` for a p that is not a number
    (no test: NaN compares False with everything, so it must not fall into the "p<0.001" branch)."""
    if p is None or not np.isfinite(p):
        return "p=n/a"
    return f"p={p:.3f}" if p >= 0.001 else "p<0.001"


def p_text(tests: list[dict], sep: str = "; ") -> str:
    """``"A vs B p=0.012; C vs D p<0.001"``: the claims tables' ``p`` column, formatted from :func:`compared`."""
    return sep.join(f"{t['comparison']} {p_label(t['p'])}" for t in tests)


def within_noise(tests: list[dict], alpha: float = 0.05) -> list[dict]:
    """The comparisons whose difference the sample cannot resolve (p >= ``alpha``; a p that is not a number, no test,
    counts as unresolved)."""
    return [t for t in tests if t["p"] is None or not np.isfinite(t["p"]) or t["p"] >= alpha]
