"""toolkit.significance: the randomization test against scipy's, and its refusals."""
from __future__ import annotations

import numpy as np
import pytest

from toolkit.significance import macro_paired_randomization, paired_randomization, win_tie_loss


def _systems(shift: float, n: int = 120, seed: int = 0):
    r = np.random.default_rng(seed)
    a = {f"q{i}": float(v) for i, v in enumerate(r.random(n))}
    b = {q: float(np.clip(v + shift + r.normal(0, 0.2), 0, 1)) for q, v in a.items()}
    return a, b


def test_a_large_paired_shift_is_significant_and_noise_is_not():
    a, b = _systems(0.2)
    t = paired_randomization(b, a)
    assert t.n == 120 and t.diff == pytest.approx(np.mean(list(b.values())) - np.mean(list(a.values())))
    assert t.p < 0.01
    a, b = _systems(0.0, seed=3)
    assert paired_randomization(a, b).p > 0.05


def test_p_value_agrees_with_scipys_paired_permutation_test():
    from scipy.stats import permutation_test
    a, b = _systems(0.03, seed=1)
    qids = sorted(a)
    x, y = np.array([a[q] for q in qids]), np.array([b[q] for q in qids])
    ref = permutation_test((x, y), lambda u, v: u.mean() - v.mean(), permutation_type="samples",
                           n_resamples=20_000, random_state=0).pvalue
    assert paired_randomization(a, b, n_permutations=20_000).p == pytest.approx(ref, abs=0.02)


@pytest.mark.reference  # ranx JIT-compiles with numba; scipy's test above is the reference make test runs
def test_p_value_agrees_with_ranx():
    from ranx.statistical_tests import fisher_randomization_test
    a, b = _systems(0.03, seed=1)
    qids = sorted(a)
    x, y = np.array([a[q] for q in qids]), np.array([b[q] for q in qids])
    ref, _ = fisher_randomization_test(x, y, 20_000, 0.05, 42)
    assert paired_randomization(a, b, n_permutations=20_000).p == pytest.approx(ref, abs=0.02)


def test_p_value_repeats_exactly_and_uses_its_seed():
    a, b = _systems(0.03, seed=1)
    # a claims table prints the same p on every run (ranx's numba threads do not: see the module docstring)
    assert [paired_randomization(a, b).p for _ in range(3)] == [paired_randomization(a, b).p] * 3
    assert paired_randomization(a, b, seed=7).p != paired_randomization(a, b, seed=8).p   # the seed is used


def test_identical_systems_give_p_one():
    a, _ = _systems(0.0)
    assert paired_randomization(a, dict(a)).p == 1.0


def test_different_query_sets_are_refused_with_the_offending_ids():
    a, b = _systems(0.1)
    b.pop("q7")
    with pytest.raises(ValueError, match=r"same queries.*1 only in the first.*q7"):
        paired_randomization(a, b)
    with pytest.raises(ValueError, match="no queries"):
        paired_randomization({}, {})
    with pytest.raises(ValueError, match="n_permutations"):
        paired_randomization(a, a, n_permutations=0)


def test_the_macro_test_weights_each_group_equally_and_agrees_with_scipy():
    from scipy.stats import permutation_test
    small_a, small_b = _systems(0.25, n=10, seed=4)        # a big gain on a small group ...
    big_a, big_b = _systems(0.0, n=200, seed=5)            # ... and none on a big one
    a, b = {"small": small_b, "big": big_a}, {"small": small_a, "big": big_b}
    t = macro_paired_randomization(a, b, n_permutations=20_000)
    means = [np.mean(list(a[g].values())) - np.mean(list(b[g].values())) for g in ("small", "big")]
    assert t.n == 210 and t.diff == pytest.approx(np.mean(means))
    keys = [(g, q) for g in sorted(a) for q in sorted(a[g])]
    x = np.array([a[g][q] for g, q in keys])
    y = np.array([b[g][q] for g, q in keys])
    w = np.array([1 / (2 * len(a[g])) for g, _ in keys])
    ref = permutation_test((x, y), lambda u, v, axis=-1: np.sum(w * (u - v), axis=axis), permutation_type="samples",
                           n_resamples=20_000, vectorized=True, random_state=0).pvalue
    assert t.p == pytest.approx(ref, abs=0.02)
    # pooled per query, the big group's 200 queries drown the small group's gain
    pooled = paired_randomization({f"{g}/{q}": v for g in a for q, v in a[g].items()},
                                  {f"{g}/{q}": v for g in b for q, v in b[g].items()})
    assert abs(pooled.diff) < abs(t.diff)
    with pytest.raises(ValueError, match="same groups"):
        macro_paired_randomization(a, {"small": small_a})
    with pytest.raises(ValueError, match="in group 'big'"):
        macro_paired_randomization(a, {"small": small_a, "big": {"q0": 0.0}})


def test_compared_is_the_claims_tables_record_of_a_test():
    from toolkit.significance import compared, p_text, within_noise
    a = {f"q{i}": 1.0 for i in range(30)}
    b = {f"q{i}": float(i % 2) for i in range(30)}
    t = compared("A vs B", a, b)
    assert t["comparison"] == "A vs B" and t["n"] == 30 and t["diff"] == pytest.approx(0.5)
    assert t["p"] == paired_randomization(a, b).p < 0.01
    # groups: the macro test, each group weighted equally
    m = compared("A vs B", {"g1": a, "g2": dict(b)}, {"g1": b, "g2": dict(b)})
    assert m["diff"] == pytest.approx(0.25) and m["p"] == macro_paired_randomization({"g1": a, "g2": b},
                                                                                         {"g1": b, "g2": b}).p
    tie = compared("C vs D", b, dict(b))
    assert t["p"] < 0.001 and p_text([t, tie]) == "A vs B p<0.001; C vs D p=1.000"
    assert within_noise([t, tie]) == [tie] and p_text([]) == ""


def test_win_tie_loss_counts_each_common_query_once_by_the_sign_of_its_difference():
    a = {"q1": 0.5, "q2": 0.2, "q3": 1.0, "q4": 0.3, "only_a": 1.0}
    b = {"q1": 0.1, "q2": 0.2 + 1e-12, "q3": 0.0, "q4": 0.9, "only_b": 0.0}
    assert win_tie_loss(a, b) == {"n": 4, "better": 2, "equal": 1, "worse": 1}
    assert win_tie_loss(b, a) == {"n": 4, "better": 1, "equal": 1, "worse": 2}


def test_a_p_value_is_never_zero_and_tiny_ones_print_as_below_a_thousandth():
    from toolkit.significance import compared, p_text
    a = {f"q{i}": 1.0 for i in range(60)}
    b = {q: 0.0 for q in a}                        # every query favours a: no sign flip reaches the observed sum
    t = compared("A vs B", a, b, n_permutations=999)
    assert t["p"] == pytest.approx(1 / 1000)      # (0 + 1) / (999 + 1): the observed assignment counts once
    assert p_text([compared("A vs B", a, b)]) == "A vs B p<0.001"
    assert p_text([{**t, "p": 0.0123}]) == "A vs B p=0.012"


def _two_sets(gain1: float, gain2: float, n1: int = 80, n2: int = 60, seed: int = 0):
    """two disjoint query sets, b's scores and a = b * (1 + gain) plus noise on each"""
    r = np.random.default_rng(seed)
    out = []
    for name, n, g in (("s1", n1, gain1), ("s2", n2, gain2)):
        b = {f"{name}-q{i}": float(v) for i, v in enumerate(r.uniform(0.2, 0.8, n))}
        a = {q: float(v * (1 + g) + r.normal(0, 0.1)) for q, v in b.items()}
        out += [a, b]
    return out


def test_relative_gain_difference_is_the_difference_of_the_sets_percent_improve_and_agrees_with_scipy():
    from scipy.stats import permutation_test

    from toolkit.significance import relative_gain_difference
    a1, b1, a2, b2 = _two_sets(0.0, 0.3)
    t = relative_gain_difference(a1, b1, a2, b2)
    g = lambda a, b: np.mean(list(a.values())) / np.mean(list(b.values())) - 1
    assert t.mean_a == pytest.approx(g(a2, b2)) and t.mean_b == pytest.approx(g(a1, b1)) and t.n == 140
    assert t.diff > 0.2 and t.p < 0.01
    a1, b1, a2, b2 = _two_sets(0.1, 0.1, seed=4)
    t = relative_gain_difference(a1, b1, a2, b2)
    # the same gain on both sets: within noise, and the same p as scipy's test of independent samples
    # scipy permutes the queries' indices into the pooled (a, b) pairs between the two sets
    xa = np.array([a1[q] for q in sorted(a1)] + [a2[q] for q in sorted(a2)])
    xb = np.array([b1[q] for q in sorted(b1)] + [b2[q] for q in sorted(b2)])
    i1, i2 = np.arange(len(a1)), np.arange(len(a1), len(xa))
    ref = permutation_test((i2, i1), lambda u, v: xa[u].mean() / xb[u].mean() - xa[v].mean() / xb[v].mean(),
                           permutation_type="independent", vectorized=False, n_resamples=4_000,
                           random_state=0).pvalue
    assert t.p > 0.05 and t.p == pytest.approx(ref, abs=0.03)
    with pytest.raises(ValueError, match="must not share queries"):
        relative_gain_difference(a1, b1, a1, b1)


def test_relative_gain_difference_refuses_a_baseline_at_zero_on_a_set():
    from toolkit.significance import relative_gain_difference, relative_gain_undefined
    a1, b1, a2, b2 = _two_sets(0.0, 0.3)
    assert relative_gain_undefined(b1, b2) is None
    zero = {q: 0.0 for q in b2}
    assert relative_gain_undefined(b1, zero) == "system b scores 0 on set 2, its relative gain is undefined"
    with pytest.raises(ValueError, match="scores 0 on set 2"):
        relative_gain_difference(a1, b1, a2, zero)
