"""A paper's claims judged on one run: a verdict, the evidence and the paired p of every comparison behind it.

A claim such as "Re-Invoke beats dense retrieval on every data set" rests on paired comparisons ``a > b``, one
per set, each on the same queries (:func:`toolkit.significance.compared`: two-sided randomization test, Smucker
et al. 2007). With significance level alpha (default 0.05) the verdict is

    held          every comparison goes the claimed way and each has p < alpha
    not held      at least one comparison goes the opposite way with p < alpha
    within noise  neither: the directions are mixed, or some difference is below what the queries resolve
    pending       no comparison could be computed yet (its runs are missing)

so "held" needs every set to resolve the claimed difference, and "not held" needs a resolved contradiction; a
reversed difference the sample cannot resolve is "within noise", not evidence against the paper. A claim that is
not a paired comparison (a threshold, an unpaired contrast) passes its own verdict in and gets no paired p.

    from toolkit.claims import Claims
    c = Claims()
    c.paired("Re-Invoke beats dense retrieval on every set (nDCG@5)",
             [("toole-multi", per_query_reinvoke, per_query_dense), ...], paper="held")
    c.frame()        # claim, paper, here, evidence, p, tests
"""
from __future__ import annotations

from typing import Mapping, Sequence

import pandas as pd

from toolkit.significance import compared, p_text

VERDICTS = ("held", "not held", "within noise", "pending")


def verdict(tests: Sequence[dict], alpha: float = 0.05) -> str:
    """The verdict of a claim that every ``a > b`` in ``tests`` (:func:`toolkit.significance.compared` dicts,
    ``diff = mean_a - mean_b``) holds; see the module docstring."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if not tests:
        return "pending"
    if any(t["diff"] < 0 and t["p"] < alpha for t in tests):
        return "not held"
    if all(t["diff"] > 0 and t["p"] < alpha for t in tests):
        return "held"
    return "within noise"


def direction(pairs: Sequence[tuple[float | None, float | None]]) -> str:
    """A claim judged by direction alone (the paper's printed numbers carry no per-query values): "held" when
    every ``a > b``, "not held" when any ``a <= b``, "pending" when a value is missing."""
    if not pairs or any(a is None or b is None for a, b in pairs):
        return "pending"
    return "held" if all(a > b for a, b in pairs) else "not held"


class Claims:
    """The claims table of one notebook run, built one claim at a time."""

    def __init__(self, alpha: float = 0.05):
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        self.alpha = alpha
        self.rows: list[dict] = []

    def paired(self, claim: str, comparisons: Sequence[tuple[str, Mapping | None, Mapping | None]],
               paper: str = "", note: str = "") -> dict:
        """A claim that every ``a > b``: ``comparisons`` are ``(label, {qid: score of a}, {qid: score of b})``,
        ``None`` for a run not computed yet (listed as pending in the evidence, left out of the verdict)."""
        tests, waiting = [], []
        for label, a, b in comparisons:
            if a is None or b is None:
                waiting.append(label)
                continue
            if set(a) != set(b):
                raise ValueError(f"claim {claim!r}, comparison {label!r}: the two runs score different queries "
                                 f"({len(a)} vs {len(b)}); a paired test needs the same queries")
            tests.append(compared(label, a, b))
        evidence = "; ".join(f"{t['comparison']}: {t['mean_a']:.3f} vs {t['mean_b']:.3f} ({t['diff']:+.3f}, n={t['n']})"
                             for t in tests)
        if waiting:
            evidence += ("; " if evidence else "") + "pending: " + ", ".join(waiting)
        return self._add(claim, paper, verdict(tests, self.alpha), evidence + (f"; {note}" if note else ""), tests)

    def judged(self, claim: str, here: str, evidence: str, paper: str = "", tests: Sequence[dict] = ()) -> dict:
        """A claim whose verdict is not a set of paired ``a > b`` comparisons (a threshold, an unpaired
        contrast); ``here`` must be one of :data:`VERDICTS`."""
        if here not in VERDICTS:
            raise ValueError(f"claim {claim!r}: verdict must be one of {VERDICTS}, got {here!r}")
        return self._add(claim, paper, here, evidence, list(tests))

    def _add(self, claim, paper, here, evidence, tests) -> dict:
        row = {"claim": claim, "paper": paper, "here": here, "evidence": evidence, "p": p_text(tests),
               "tests": tests}
        self.rows.append(row)
        return row

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=["claim", "paper", "here", "evidence", "p", "tests"])

    def records(self) -> list[dict]:
        """The rows as ``results/<nb>/<profile>.json`` stores them (``rec.extra["claims"]``)."""
        return [dict(r) for r in self.rows]

    def summary(self) -> str:
        """``"3 held, 1 not held, 2 within noise of 6 claims"``"""
        n = {v: sum(r["here"] == v for r in self.rows) for v in VERDICTS}
        return ", ".join(f"{n[v]} {v}" for v in VERDICTS if n[v]) + f" of {len(self.rows)} claims"


def reading(rows: Sequence[Mapping], numbered: bool = True) -> str:
    """The claims as markdown prose, one line each, formatted from the rows (never typed): "1. *claim* — here:
    **verdict** (paper: verdict); evidence; p"."""
    out = []
    for i, r in enumerate(rows, 1):
        p = f"; {r['p']}" if r.get("p") else ""
        paper = f" (paper's numbers: {r['paper']})" if r.get("paper") else ""
        out.append(f"{f'{i}. ' if numbered else '- '}*{r['claim']}* — here: **{r['here']}**{paper}. "
                   f"{r['evidence']}{p}.")
    return "\n".join(out)
