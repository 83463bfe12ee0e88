"""Figures of an age-path (GAGA paper Figs. 1, 2 and 6)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from spl_bench.gaga.core.path import AgePath

KIND_COLOURS = {"turning": "tab:green", "jump": "tab:red"}


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_age_path(path: AgePath, out: str | Path, max_curves: int = 40) -> Path:
    """Coefficient (or dual-coefficient) curves against the age, with vertical lines at the
    critical points coloured by kind (paper Fig. 2)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    V = path.values
    idx = np.argsort(-np.abs(V).max(axis=0))[:max_curves]
    for s in np.unique(path.segment):  # draw each smooth piece separately (jumps stay visible)
        m = path.segment == s
        ax.plot(path.lambdas[m], V[m][:, idx], lw=0.9)
    for e in path.events:  # jumps are few and matter most: dashed, over the curves
        jump = e["kind"] == "jump"
        ax.axvline(e["lam"], color=KIND_COLOURS[e["kind"]], lw=1.0 if jump else 0.4,
                   alpha=0.9 if jump else 0.5, ls="--" if jump else "-", zorder=3 if jump else 0)
    ax.set_xlabel("age λ")
    ax.set_ylabel("dual coefficient a" if path.dual_coef is not None else "coefficient w")
    cc = path.critical_counts()
    ax.set_title(f"{path.meta.get('model')} / {path.meta.get('sp')}: {cc['turning']} turning (green), "
                 f"{cc['jump']} jump (red) points")
    ax.set_xscale("log")
    fig.tight_layout()
    out = Path(out)
    fig.savefig(out, dpi=130)
    plt.close(fig)
    return out


def plot_learning_curve(lams: NDArray[np.float64], errors: dict[str, NDArray[np.float64]], out: str | Path,
                        ylabel: str = "error") -> Path:
    """Validation / test error against the age (paper Fig. 1)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, err in errors.items():
        ax.plot(lams, err, label=name, lw=1.2)
    ax.set_xlabel("age λ")
    ax.set_ylabel(ylabel)
    ax.set_xscale("log")
    ax.legend()
    fig.tight_layout()
    out = Path(out)
    fig.savefig(out, dpi=130)
    plt.close(fig)
    return out


def plot_critical_histogram(path: AgePath, out: str | Path) -> Path:
    """Histogram of critical points by kind along the age (paper Fig. 6)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4))
    lo, hi = path.lambdas[0], path.lambdas[-1]
    bins = np.geomspace(lo, hi, 30)
    data = [[e["lam"] for e in path.events if e["kind"] == k] for k in ("turning", "jump")]
    ax.hist(data, bins=bins, stacked=True, color=[KIND_COLOURS["turning"], KIND_COLOURS["jump"]],
            label=[f"turning ({len(data[0])})", f"jump ({len(data[1])})"])
    ax.set_xscale("log")
    ax.set_xlabel("age λ")
    ax.set_ylabel("critical points")
    ax.legend()
    fig.tight_layout()
    out = Path(out)
    fig.savefig(out, dpi=130)
    plt.close(fig)
    return out
