"""Figures of aggregated results: grouped bars with ± std error bars per dataset and method,
and the distribution of critical points by kind over runs (GAGA paper Fig. 6)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def bar_figure(summary: pd.DataFrame, path: str | Path) -> list[Path]:
    """One PNG per metric: mean ± std of every method on every (dataset, noise)."""
    written = []
    for metric, part in summary.groupby("metric"):
        part = part.assign(row=part["dataset"].astype(str) + "\n" + part["noise"].astype(str))
        rows = list(dict.fromkeys(part["row"]))
        methods = list(dict.fromkeys(part["method_label"]))
        width = 0.8 / max(len(methods), 1)
        fig, ax = plt.subplots(figsize=(max(4.0, 1.2 * len(rows) * max(1, len(methods)) / 2), 3.5))
        for j, m in enumerate(methods):
            sub = part[part["method_label"] == m].set_index("row").reindex(rows)
            ax.bar(np.arange(len(rows)) + j * width, sub["mean"], width, yerr=sub["std"], label=m, capsize=2)
        ax.set_xticks(np.arange(len(rows)) + 0.4 - width / 2, rows, fontsize=7)
        ax.set_ylabel(str(metric))
        ax.legend(fontsize=7)
        fig.tight_layout()
        out = Path(str(path).replace(".png", f"_{metric}.png"))
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=120)
        plt.close(fig)
        written.append(out)
    return written


def critical_point_figure(frame: pd.DataFrame, path: str | Path) -> list[Path]:
    """Histograms over runs of the number of turning and jump points per path (GAGA Fig. 6).

    One panel per (dataset, noise, method, SP) that reports ``n_critical_turning`` /
    ``n_critical_jump``; nothing is drawn (and ``[]`` returned) when no row has them.
    """
    cols = {"n_critical_turning": "turning", "n_critical_jump": "jump"}
    if not set(cols) <= set(frame.columns):
        return []
    rows = frame[~frame["metric"].astype(str).str.startswith("selection_")].dropna(subset=list(cols))
    rows = rows.drop_duplicates(subset=[c for c in ("dataset", "noise", "method", "sp", "config_hash", "seed")
                                        if c in rows.columns])
    if rows.empty:
        return []
    groups = list(rows.groupby(["dataset", "noise", "method", "sp"], dropna=False))
    fig, axes = plt.subplots(1, len(groups), figsize=(3.6 * len(groups), 3.0), squeeze=False)
    for ax, (key, part) in zip(axes[0], groups, strict=True):
        for col, label in cols.items():
            counts = part[col].to_numpy(dtype=float)
            ax.hist(counts, bins=min(15, max(3, len(counts) // 2)), alpha=0.6,
                    label=f"{label} (mean {counts.mean():.1f})")
        ax.set_title(" / ".join(str(k) for k in key), fontsize=8)
        ax.set_xlabel("critical points per path")
        ax.set_ylabel("runs")
        ax.legend(fontsize=7)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return [out]
