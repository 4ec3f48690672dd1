"""A paper's claims judged on one run: a verdict, the evidence and the paired p of every comparison behind it.

A claim such as "Re-Invoke beats dense retrieval on every data set" rests on paired comparisons ``a > b``, one
per set, each on the same queries (:func:`toolkit.significance.compared`: two-sided randomization test, Smucker
et al. 2007). With significance level alpha (default 0.05) the verdict is

    held          every comparison goes the claimed way and each has p < alpha
    not held      at least one comparison goes the opposite way with p < alpha
    within noise  neither: the directions are mixed, or some difference is below what the queries resolve
    pending       no comparison could be computed yet (its runs are missing)

so "held" needs every set to resolve the claimed difference, and "not held" needs a resolved contradiction; a
reversed difference the sample cannot resolve is "within noise", not evidence against the paper; a tie (difference
0) is "within noise". A claim that is not a paired comparison (a threshold, an unpaired contrast) passes its own
verdict in and gets no paired p; a claim whose comparison has no per-query values is judged by :func:`direction` on
the two numbers and says so (``basis``).

Every record also carries what the reproduction changed and why a verdict came out as it did:

    condition     what differs from the paper in the component the claim rests on ("LLM Qwen2.5-Coder-1.5B Q4
                  (paper: GPT-3.5)"), named by each paper's ``tables.py``;
    explained_by  for every claim not held: the control rows that account for it, with their numbers and p
                  (:func:`explanation`), or "not explained" when no control does;
    ours, ci      the claim's main comparison (the first): our difference a - b and its 95 % paired-bootstrap
                  interval over queries (:func:`toolkit.significance.paired_bootstrap_ci`; none by direction);
    paper_number  the paper's printed difference for the same comparison (:func:`with_paper`).

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
COLUMNS = ["claim", "paper", "here", "p", "explained_by", "condition", "evidence", "basis", "main", "ours", "ci",
           "paper_number", "tests"]


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
    """A claim judged by direction alone (the paper's printed numbers, or a comparison without per-query values):
    "held" when every ``a > b``, "not held" when any ``a < b``, "within noise" when none is below but one is a tie
    (``a == b``: a tie is never a verdict), "pending" when a value is missing."""
    if not pairs or any(a is None or b is None or a != a or b != b for a, b in pairs):
        return "pending"
    if any(a < b for a, b in pairs):
        return "not held"
    return "held" if all(a > b for a, b in pairs) else "within noise"


BY_TEST = "paired test"
BY_DIRECTION = "direction (no per-query values)"
NOT_EXPLAINED = "not explained"


def control(label: str, diff: float | None, p: float | None = None, n: int | None = None) -> dict:
    """A control row that may explain a verdict: ``{"label", "diff", "p", "n"}`` (``diff``: its number, a
    difference or a value; ``p``: its paired p, None when it has none)."""
    return {"label": label, "diff": None if diff is None else float(diff), "p": None if p is None else float(p),
            "n": n}


def control_text(c: Mapping) -> str:
    """``"oracle feedback - ToolRetriever +0.142 (p<0.001, n=60)"``"""
    from toolkit.significance import p_label
    if c.get("diff") is None:
        return f"{c['label']}: pending"
    inner = ", ".join(x for x in (p_label(c["p"]) if c.get("p") is not None else "",
                                  f"n={c['n']}" if c.get("n") else "") if x)
    return f"{c['label']} {c['diff']:+.3f}" + (f" ({inner})" if inner else "")


def explanation(here: str, controls: Sequence[Mapping] = (), conclusion: str = "") -> str:
    """The ``explained_by`` of a claim with verdict ``here``: "" when held; for any other verdict the control rows
    (:func:`control`) with their numbers and p, then ``conclusion`` ("LLM-limited"); "not explained" when no
    control row is known (a finding too, never a blank); a pending claim says its runs are missing."""
    if here == "held":
        return ""
    if here == "pending":
        return "pending: a run it rests on is missing, so nothing to explain yet"
    shown = [c for c in controls if c is not None]
    if not shown:
        return NOT_EXPLAINED
    return "; ".join(control_text(c) for c in shown) + (f": {conclusion}" if conclusion else "")


def oriented(test: Mapping) -> dict:
    """A :func:`toolkit.significance.compared` record read the other way round (``b vs a``): the verdict rule reads
    every comparison as "a > b is claimed", so a claim "a is below b" passes its tests through this."""
    out = dict(test)
    a, _, b = str(test["comparison"]).partition(" vs ")
    out["comparison"] = f"{b} vs {a}" if b else f"reversed {test['comparison']}"
    out["mean_a"], out["mean_b"], out["diff"] = test["mean_b"], test["mean_a"], -test["diff"]
    if test.get("ci") is not None:
        out["ci"] = [-test["ci"][1], -test["ci"][0]]
    return out


def record(claim: str, tests: Sequence[dict | None] = (), pairs: Sequence[tuple] = (), evidence: str = "",
           paper: str = "", condition: str = "", controls: Sequence[Mapping] = (), conclusion: str = "",
           pending: bool = False, alpha: float = 0.05, **extra) -> dict:
    """One claim record under the shared rule. ``tests``: its paired comparisons, each oriented "a > b is claimed"
    (:func:`oriented` otherwise); ``pairs``: the same comparisons' two values ``(a, b)``, judged by
    :func:`direction` when no test is available (``None`` entries: a value is missing). The first comparison is the
    main one (``ours``, ``ci``). ``pending``: an input is incomplete. ``extra`` fields are kept (e.g. ``setup``)."""
    from toolkit.significance import p_text
    tests = [t for t in tests if t]
    pairs = list(pairs)
    if pending or (not tests and not pairs):
        here, basis, tests = "pending", "", []
    elif tests and len(tests) >= len(pairs):
        here, basis = verdict(tests, alpha), BY_TEST
    else:
        here, basis = direction(pairs), BY_DIRECTION
        tests = []
    ours = ci = None
    if basis == BY_TEST:
        ours, ci = tests[0]["diff"], tests[0].get("ci")
    elif basis == BY_DIRECTION and pairs and None not in pairs[0]:
        ours = float(pairs[0][0]) - float(pairs[0][1])
    if basis == BY_DIRECTION:
        evidence = f"{evidence}; judged by direction: no per-query values" if evidence else \
            "judged by direction: no per-query values"
    return {"claim": claim, "paper": paper, "here": here, "basis": basis, "evidence": evidence, "p": p_text(tests),
            "tests": tests, "main": tests[0]["comparison"] if basis == BY_TEST else "", "ours": ours,
            "ci": list(ci) if ci is not None else None, "paper_number": None, "condition": condition,
            "explained_by": explanation(here, controls, conclusion), **extra}


def with_paper(ours: Sequence[dict], on_paper: Sequence[dict]) -> list[dict]:
    """``ours`` with each claim's verdict and main difference on the paper's printed numbers (``on_paper``: the
    same claims judged on the paper's tables, by direction, in the same order): fields ``paper`` (kept when
    ``on_paper`` has no verdict) and ``paper_number``."""
    if len(on_paper) != len(ours):
        raise ValueError(f"with_paper: {len(ours)} claims here but {len(on_paper)} on the paper's numbers; judge the "
                         "same claims on both")
    out = []
    for r, p in zip(ours, on_paper):
        r = dict(r)
        if p.get("here") and p["here"] != "pending":
            r["paper"] = p["here"]
        r["paper_number"] = number(p.get("ours"))
        out.append(r)
    return out


def counts(rows: Sequence[Mapping]) -> dict[str, int]:
    """``{verdict: number of claims}`` over :data:`VERDICTS` (every verdict present, 0 when none)."""
    bad = sorted({str(r.get("here")) for r in rows} - set(VERDICTS))
    if bad:
        raise ValueError(f"claims with a verdict outside {VERDICTS}: {bad}; judge them with toolkit.claims")
    return {v: sum(r["here"] == v for r in rows) for v in VERDICTS}


class Claims:
    """The claims table of one notebook run, built one claim at a time."""

    def __init__(self, alpha: float = 0.05):
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        self.alpha = alpha
        self.rows: list[dict] = []

    def paired(self, claim: str, comparisons: Sequence[tuple[str, Mapping | None, Mapping | None]],
               paper: str = "", note: str = "", condition: str = "", controls: Sequence[Mapping] = (),
               conclusion: str = "", paper_number: float | None = None) -> dict:
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
        return self._add(claim, paper, verdict(tests, self.alpha), evidence + (f"; {note}" if note else ""), tests,
                         condition, controls, conclusion, paper_number)

    def judged(self, claim: str, here: str, evidence: str, paper: str = "", tests: Sequence[dict] = (),
               condition: str = "", controls: Sequence[Mapping] = (), conclusion: str = "",
               paper_number: float | None = None) -> dict:
        """A claim whose verdict is not a set of paired ``a > b`` comparisons (a threshold, an unpaired
        contrast); ``here`` must be one of :data:`VERDICTS`."""
        if here not in VERDICTS:
            raise ValueError(f"claim {claim!r}: verdict must be one of {VERDICTS}, got {here!r}")
        return self._add(claim, paper, here, evidence, list(tests), condition, controls, conclusion, paper_number)

    def _add(self, claim, paper, here, evidence, tests, condition="", controls=(), conclusion="",
             paper_number=None) -> dict:
        row = {"claim": claim, "paper": paper, "here": here, "basis": BY_TEST if tests else "",
               "evidence": evidence, "p": p_text(tests), "tests": tests,
               "main": tests[0]["comparison"] if tests else "", "ours": tests[0]["diff"] if tests else None,
               "ci": list(tests[0]["ci"]) if tests and tests[0].get("ci") is not None else None,
               "paper_number": paper_number, "condition": condition,
               "explained_by": explanation(here, controls, conclusion)}
        self.rows.append(row)
        return row

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=COLUMNS)

    def records(self) -> list[dict]:
        """The rows as ``results/<nb>/<profile>.json`` stores them (``rec.extra["claims"]``)."""
        return [dict(r) for r in self.rows]

    def summary(self) -> str:
        """``"3 held, 1 not held, 2 within noise of 6 claims"``"""
        return summary(self.rows)


def summary(rows: Sequence[Mapping]) -> str:
    """``"3 held, 1 not held, 2 within noise of 6 claims"``"""
    n = counts(rows)
    return ", ".join(f"{n[v]} {v}" for v in VERDICTS if n[v]) + f" of {len(rows)} claims"


def number(x) -> float | None:
    """``x`` as a float, or None when it is missing (None, NaN: a frame's empty cell)."""
    return None if x is None or x != x else float(x)


def table(rows: Sequence[Mapping]) -> pd.DataFrame:
    """The verdicts at a glance (RESULTS.md, the notebooks' claims cells): claim, paper's verdict and number, ours
    (the main comparison's difference with its 95 % interval), verdict, p, reason (``explained_by``), condition."""
    def ours(r):
        if number(r.get("ours")) is None:
            return ""
        ci = r.get("ci") if isinstance(r.get("ci"), (list, tuple)) else None
        return f"{r['ours']:+.3f}" + (f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else " (direction)")
    out = [{"claim": r["claim"] + (f" ({r['setup']})" if r.get("setup") else ""),
            "paper": r.get("paper", ""),
            "paper's number": "" if number(r.get("paper_number")) is None else f"{r['paper_number']:+.3f}",
            "ours": ours(r), "verdict": r["here"], "p": r.get("p", ""), "reason": r.get("explained_by", ""),
            "condition": r.get("condition", "")} for r in rows]
    return pd.DataFrame(out, columns=["claim", "paper", "paper's number", "ours", "verdict", "p", "reason",
                                      "condition"])


def reading(rows: Sequence[Mapping], numbered: bool = True) -> str:
    """The claims as markdown prose, one line each, formatted from the rows (never typed): "1. *claim* — here:
    **verdict** (paper: verdict); evidence; p"."""
    out = []
    for i, r in enumerate(rows, 1):
        p = f"; {r['p']}" if r.get("p") else ""
        paper = f" (paper's numbers: {r['paper']})" if r.get("paper") else ""
        why = f" Why: {r['explained_by']}." if r.get("explained_by") else ""
        out.append(f"{f'{i}. ' if numbered else '- '}*{r['claim']}* — here: **{r['here']}**{paper}. "
                   f"{r['evidence']}{p}.{why}")
    return "\n".join(out)
