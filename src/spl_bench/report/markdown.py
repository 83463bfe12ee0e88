"""Markdown tables without an extra dependency (the reports and the README section use them)."""

from __future__ import annotations

import pandas as pd


def to_markdown(table: pd.DataFrame) -> str:
    """Render a table as GitHub Markdown (no extra dependency)."""
    cols = [str(c) for c in table.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in table.itertuples(index=False):
        lines.append("| " + " | ".join("" if pd.isna(v) else str(v) for v in row) + " |")
    return "\n".join(lines) + "\n"
