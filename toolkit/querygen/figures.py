"""Figure 4 of the query-generation paper: Recall@5 over alignment iterations (left) and the
distribution of draft rewards on the training requests per iteration (right)."""
from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

LABELS = {"querygen-in-domain": "in-domain", "querygen-out-of-domain": "out-of-domain"}


def figure4(recall: pd.DataFrame, history: list[dict], references: Mapping[str, Mapping[str, float]] | None = None):
    """``recall``: :func:`toolkit.querygen.tables.fig4`; ``history``: the alignment history;
    ``references``: ``{method: {test set: value}}`` drawn as dashed lines (e.g. SFT, the utterance)."""
    import matplotlib.pyplot as plt
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.4))
    colors = {}
    for ds in recall.columns:
        (line,) = left.plot(recall.index, recall[ds], marker="o", label=f"Alignment, {LABELS.get(ds, ds)}")
        colors[ds] = line.get_color()
    for (method, per_set), style in zip((references or {}).items(), ("--", ":", "-.")):
        for ds, v in per_set.items():
            if ds in colors and v is not None:
                left.axhline(v, ls=style, color=colors[ds], lw=1, label=f"{method}, {LABELS.get(ds, ds)}")
    left.set(xlabel="alignment iteration", ylabel="Recall@5", title="Recall@5 on the test samples")
    if len(recall.index):
        left.set_xticks(list(recall.index))
    left.legend(fontsize=7)
    width = 0.8 / max(len(history), 1)
    edges = np.linspace(0, 1, 11)
    for i, h in enumerate(history):
        hist = np.asarray(h.get("histogram", [0] * 10), dtype=float)
        share = hist / hist.sum() if hist.sum() else hist
        right.bar(np.arange(10) + (i - (len(history) - 1) / 2) * width, share, width=width,
                  label=f"iteration {h['iteration']} (mean {h['mean']:.3f})")
    right.set_xticks(np.arange(10), [f"{edges[j]:.1f}" for j in range(10)], fontsize=7)
    right.set(xlabel="draft reward (MMRR), bin start", ylabel="share of drafts", title="Reward distribution")
    if history:
        right.legend(fontsize=7)
    fig.tight_layout()
    return fig
