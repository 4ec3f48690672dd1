"""toolkit.significance: the randomization test against scipy's, and its refusals."""
from __future__ import annotations

import numpy as np
import pytest

from toolkit.significance import paired_randomization


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
