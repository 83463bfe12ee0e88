"""Figures of aggregated results: grouped bars with ± std error bars per dataset and method."""

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
