"""The suite's claims at a glance: per paper, every claim's verdict with its reason, the counts of held /
not held / within noise / pending, and the forest plot of the main comparisons, all read from the notebooks'
``results/<nb>/<profile>.json`` (``claims``, judged by :mod:`toolkit.claims`).

    python -m toolkit compare --markdown > RESULTS.md     # opens with verdict_markdown()
    python -m toolkit.verdicts --figure                   # figures/claims/forest_<profile>.png
    verdict_counts()                                      # {"ToolRerank": {"held": 0, "not held": 4, ...}, ...}

A notebook that judges a claim under several setups (notebook 30: fair LLM, capped LLM) marks its headline rows
(``headline``); the counts and the forest plot read those, the tables show every row.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from toolkit import paths
from toolkit.claims import VERDICTS, counts, number, table

CLAIM_NOTEBOOKS = {"10_toolrerank": "ToolRerank", "20_reinvoke": "Re-Invoke", "30_feedback": "Iterative feedback",
                   "40_querygen": "LLM query generation"}
FIGURE_DIR = paths.REPO / "figures" / "claims"


def stale(profile: str = "standard", results_dir: str | Path | None = None) -> dict[str, str]:
    """``{paper label: the command that re-runs it}`` for each claims notebook whose results still hold verdicts
    outside :data:`toolkit.claims.VERDICTS` (written before the shared rule)."""
    root = Path(results_dir) if results_dir is not None else paths.results_dir()
    out = {}
    for nb, label in CLAIM_NOTEBOOKS.items():
        path = root / nb / f"{profile}.json"
        if path.is_file():
            rows = json.loads(path.read_text(encoding="utf-8")).get("claims") or []
            if {str(r.get("here", r.get("holds"))) for r in rows} - set(VERDICTS):
                out[label] = f"python -m toolkit run {nb} --profile {profile}"
    return out


def load_claims(profile: str = "standard", results_dir: str | Path | None = None,
                skip_stale: bool = False) -> dict[str, list[dict]]:
    """``{paper label: claim records}`` from each claims notebook's ``results/<nb>/<profile>.json`` (a notebook not
    run yet is left out). A record whose verdict is not one of :data:`toolkit.claims.VERDICTS` is an error naming
    the file: it was written before the shared rule, re-run the notebook (``skip_stale``: leave that notebook out
    instead; :func:`stale` names it)."""
    root = Path(results_dir) if results_dir is not None else paths.results_dir()
    skipped = stale(profile, results_dir) if skip_stale else {}
    out = {}
    for nb, label in CLAIM_NOTEBOOKS.items():
        path = root / nb / f"{profile}.json"
        if not path.is_file() or label in skipped:
            continue
        rows = json.loads(path.read_text(encoding="utf-8")).get("claims") or []
        bad = sorted({str(r.get("here", r.get("holds"))) for r in rows} - set(VERDICTS))
        if bad:
            raise ValueError(f"{path}: claims with verdicts {bad} outside {VERDICTS} (written before the shared rule's "
                             f"shared rule); re-run it: python -m toolkit run {nb} --profile {profile}")
        out[label] = rows
    return out


def headline(rows: list[dict]) -> list[dict]:
    """The rows a paper's counts and forest plot read: its headline setup's (``headline`` True) where rows carry one."""
    return [r for r in rows if r.get("headline", True)]


def verdict_counts(profile: str = "standard", results_dir: str | Path | None = None) -> dict[str, dict[str, int]]:
    """Per paper, ``{verdict: number of claims}`` on its headline rows (:func:`toolkit.claims.counts`): what README's
    verdict block shows."""
    return {paper: counts(headline(rows)) for paper, rows in load_claims(profile, results_dir, skip_stale=True).items()}


def counts_line(c: dict[str, int]) -> str:
    """``"2 held, 3 not held, 1 within noise, 0 pending (6 claims)"``"""
    return ", ".join(f"{c[v]} {v}" for v in VERDICTS) + f" ({sum(c.values())} claims)"


def readme_block(profile: str = "standard", results_dir: str | Path | None = None) -> str:
    """The lines of README's ``<!-- verdicts -->`` block, formatted from :func:`verdict_counts` (never typed): one
    line per paper with its counts, then where the tables and the forest plot are."""
    lines = [f"- **{paper}**: {counts_line(c)}" for paper, c in verdict_counts(profile, results_dir).items()]
    return "\n".join(lines + ["", "Each claim with its verdict, p and reason: RESULTS.md (\"Verdicts at a glance\"); "
                               f"the forest plot: figures/claims/forest_{profile}.png."])


def _cell(x) -> str:
    return str(x if x is not None else "").replace("|", "/").replace("\n", " ")


def verdict_markdown(profile: str = "standard", results_dir: str | Path | None = None,
                     figure: str | None = None) -> str:
    """The verdicts section that opens RESULTS.md: the counts per paper, then per paper a table (claim, paper's
    verdict and number, ours with its 95 % interval, verdict, p, reason, condition); ``figure``: the forest plot's
    path relative to RESULTS.md, linked when given."""
    claims = load_claims(profile, results_dir, skip_stale=True)
    lines = ["## Verdicts at a glance", "",
             "Every paper's claims judged by one rule (`toolkit.claims`): **held** (every paired comparison goes the "
             "claimed way with p < 0.05), **not held** (one goes the opposite way with p < 0.05), **within noise** "
             "(neither; a tie included), **pending** (a run it needs is missing). *ours*: the main comparison's "
             "difference with its 95 % paired-bootstrap interval over queries, or \"(direction)\" where the comparison "
             "has no per-query values; *reason*: the control rows that account for a verdict other than held.", "",
             "| paper | " + " | ".join(VERDICTS) + " | claims |", "|---|" + "---|" * (len(VERDICTS) + 1)]
    for paper, rows in claims.items():
        c = counts(headline(rows))
        lines.append(f"| {paper} | " + " | ".join(str(c[v]) for v in VERDICTS) + f" | {sum(c.values())} |")
    for paper, cmd in stale(profile, results_dir).items():
        lines.append(f"| {paper} | not judged by the shared rule yet: `{cmd}` |" + " |" * len(VERDICTS))
    lines.append("")
    if figure:
        lines += [f"![forest plot: each claim's main difference, ours with its 95 % interval beside the paper's]"
                  f"({figure})", ""]
    for paper, rows in claims.items():
        t = table(rows)
        lines += [f"### {paper}", "", "| " + " | ".join(t.columns) + " |", "|" + "---|" * len(t.columns)]
        lines += ["| " + " | ".join(_cell(x) for x in r) + " |" for r in t.itertuples(index=False)]
        lines.append("")
    return "\n".join(lines)


def forest_rows(profile: str = "standard", results_dir: str | Path | None = None) -> list[dict]:
    """One row per headline claim with a main comparison: paper, claim, ours, ci (None: judged by direction),
    paper_number, verdict."""
    out = []
    for paper, rows in load_claims(profile, results_dir, skip_stale=True).items():
        for r in headline(rows):
            ours, theirs = number(r.get("ours")), number(r.get("paper_number"))
            if (ours is None and theirs is None) or r.get("unit") or abs(ours or 0) > 1 or abs(theirs or 0) > 1:
                continue      # no number, or not a difference of two metrics in [0, 1] (seconds, candidates)
            out.append({"paper": paper, "claim": r["claim"], "ours": ours, "ci": r["ci"] if isinstance(r.get("ci"), list) else None,
                        "paper_number": theirs, "verdict": r["here"]})
    return out


def forest_plot(rows: list[dict], path: str | Path | None = None):
    """The forest plot: per claim, our main difference (a - b, the claimed direction positive) with its 95 %
    paired-bootstrap interval (a bare point where the claim was judged by direction: no per-query values), and the
    paper's printed difference for the same comparison (a cross), grouped by paper; coloured by our verdict.
    Saved to ``path`` when given; returns the figure."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    colour = {"held": "tab:green", "not held": "tab:red", "within noise": "tab:gray", "pending": "white"}
    fig, ax = plt.subplots(figsize=(9, 0.32 * len(rows) + 1.5))
    labels = []
    for i, r in enumerate(rows[::-1]):
        y = i
        if r["ours"] is not None:
            if r["ci"]:
                ax.plot(r["ci"], [y, y], color=colour[r["verdict"]], lw=2)
            ax.plot([r["ours"]], [y], "o", color=colour[r["verdict"]], mec="black",
                    mfc=colour[r["verdict"]] if r["ci"] else "white")
        if r["paper_number"] is not None:
            ax.plot([r["paper_number"]], [y], "x", color="black")
        claim = r["claim"] if len(r["claim"]) <= 70 else r["claim"][:67] + "..."
        labels.append(f"{r['paper']}: {claim}")
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_xlabel("a - b, claimed direction > 0")
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], color=c, marker="o", lw=2, label=v) for v, c in colour.items() if v != "pending"]
    handles += [Line2D([], [], color="black", marker="o", mfc="white", lw=0, label="ours, by direction (no interval)"),
                Line2D([], [], color="black", marker="x", lw=0, label="paper's printed difference")]
    ax.legend(handles=handles, fontsize=7, loc="lower right")
    ax.set_title("Main comparison per claim: ours (95 % bootstrap CI) vs paper", fontsize=9)
    fig.tight_layout()
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=120)
    return fig


def forest_path(profile: str = "standard") -> Path:
    return FIGURE_DIR / f"forest_{profile}.png"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m toolkit.verdicts", description=__doc__.split("\n\n")[0])
    p.add_argument("--profile", default="standard")
    p.add_argument("--figure", action="store_true", help=f"write the forest plot to {FIGURE_DIR}/forest_<profile>.png")
    p.add_argument("--counts", action="store_true", help="print the counts per paper as JSON (README's verdict block)")
    p.add_argument("--readme", action="store_true", help="print README's verdict block (readme_block)")
    args = p.parse_args(argv)
    if args.figure:
        rows = forest_rows(args.profile)
        if not rows:
            p.error(f"no claims in results/*/{args.profile}.json; run notebooks 10-40 first")
        forest_plot(rows, forest_path(args.profile))
        print(forest_path(args.profile))
    if args.readme:
        print(readme_block(args.profile))
    if args.counts or not (args.figure or args.readme):
        print(json.dumps(verdict_counts(args.profile), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
