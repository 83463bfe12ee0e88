"""What a refresh moved: each seed made before a fix beside the run that replaced it.

    python scripts/refresh_report.py --fix aeaaaff --before 67301b1

Pairs every seed of the row files that changed since ``--before`` (the last commit with the old
rows) whose old row lacks ``--fix`` and whose new row has it (``reproduce_tables.py
--refresh-made-before``), and writes the pairs to ``results/reruns/refresh_<fix>_pairs.csv`` and a
summary per cell to ``results/reruns/refresh_<fix>.md``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spl_bench.atomic import atomic_write_text
from spl_bench.paths import repo_root
from spl_bench.report.markdown import to_markdown
from spl_bench.runner import commits
from spl_bench.runner.refresh import refresh_pairs, refresh_summary
from spl_bench.runner.rule_change import MOVED_REL


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fix", required=True, help="the fix's commit (rows made without it were refreshed)")
    ap.add_argument("--before", required=True, help="the last commit with the old rows")
    ap.add_argument("--note", default="", help="a paragraph on the fix, after the title")
    ap.add_argument("--out", default=str(repo_root() / "results" / "reruns"))
    args = ap.parse_args()
    root = repo_root()
    changed = commits.changed_since(args.before, "results/rows")
    if changed is None:
        print(f"error: git cannot compare the rows with {args.before!r}", file=sys.stderr)
        return 2
    files = [root / f for f in changed if f.endswith(".csv") and not f.endswith("index.csv")]
    files = [f for f in files if f.is_file()]
    pairs = refresh_pairs(files, args.fix, args.before)
    summary = refresh_summary(pairs)
    moved = pairs[(pairs["value_new"] - pairs["value_old"]).abs()
                  > MOVED_REL * pairs["value_old"].abs().clip(lower=1.0)]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"refresh_{args.fix}"
    atomic_write_text(out / f"{stem}_pairs.csv", pairs.to_csv(index=False))
    fmt = (lambda v: f"{v:.6g}" if isinstance(v, float) else v)  # noqa: E731
    text = (f"# Rows made before {args.fix}, refreshed: each seed beside the run that replaced it\n\n"
            + (args.note + "\n\n" if args.note else "")
            + f"`scripts/refresh_report.py --fix {args.fix} --before {args.before}`: the row files changed since "
            f"{args.before}, paired by seed where the old row was made without {args.fix} and the new one with it. "
            f"A value moved when it differs by more than {MOVED_REL:g} relative; `seeds_degenerate`: new runs that "
            "met a one-class age (`n_degenerate_ages` > 0). Means are over the refreshed seeds.\n\n"
            + to_markdown(summary.map(fmt)) + "\n\n## The moved values\n\n"
            + (to_markdown(moved.map(fmt)) if len(moved) else "None.\n"))
    atomic_write_text(out / f"{stem}.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
