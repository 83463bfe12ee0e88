"""What GAGA's route-independent candidates moved: each rerun seed beside the step rule's (issue 62).

    python scripts/candidate_rule_change.py                 # Tables 2-3 and their equal-candidates rows
    python scripts/candidate_rule_change.py --tables 5 6
    python scripts/candidate_rule_change.py --method mospl --tables 11 12 15 16   # MOSPL's rules

Pairs every seed a GAGA cell has under both rules (the step rule's committed rows and the rows of
``reproduce_tables.py --current-rule``), and writes them to ``results/reruns/candidate_rule_pairs.csv``
with a summary per rows folder in ``results/reruns/candidate_rule.md`` (values moved beyond 1e-8
relative, the largest move, ages moved, candidates per rule).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spl_bench.atomic import atomic_write_text
from spl_bench.errors import SplBenchError
from spl_bench.paths import repo_root
from spl_bench.report.markdown import to_markdown
from spl_bench.runner.cells import table_cells
from spl_bench.runner.rule_change import MOVED_REL, moved_values, rule_pairs, rule_summary
from spl_bench.table_registry import EQUAL_VARIANT, OLD_RULES, TABLES


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", nargs="+", default=["2", "3"], choices=list(TABLES))
    ap.add_argument("--method", default="gaga", choices=sorted(OLD_RULES),
                    help="mospl: its current rule against its old one (docs/mospl.md, 'The full fit and the "
                         "kernel product'), written to full_fit_rule*.")
    ap.add_argument("--out", default=str(repo_root() / "results" / "reruns"))
    args = ap.parse_args()
    gaga = args.method == "gaga"
    try:
        variants = ("", EQUAL_VARIANT) if gaga else ("",)
        pairs = rule_pairs([c for t in args.tables for v in variants for c in table_cells(t, [args.method], variant=v)])
    except SplBenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    summary, moved = rule_summary(pairs), moved_values(pairs)
    if gaga:
        stem = "candidate_rule"
        intro = ("# GAGA's candidates: step rule against the route-independent rule, seed by seed\n\n"
                 f"Tables {', '.join(args.tables)}; `scripts/candidate_rule_change.py`. A value moved when it differs "
                 f"by more than {MOVED_REL:g} relative; every seed rerun so far is paired with its step-rule row. "
                 "`paths_changed`: seeds whose path has another number of critical points in the two rows (the "
                 "step rule's row was made by older code, and the path changed since; the candidate rule does not "
                 "change a path); `values_moved_same_path`: the moved values among the other seeds, those the "
                 "candidate rule moved.\n\n")
    else:  # no path, no candidates to count
        stem = "full_fit_rule"
        summary = summary.drop(columns=["paths_changed", "values_moved_same_path", "median_candidates_step",
                                        "median_candidates_current"])
        moved = moved[["rows", "cell", "seed", "metric", "value_step", "value_current", "code_step"]]
        intro = ("# MOSPL's old rule against its current one, seed by seed\n\n"
                 f"Tables {', '.join(args.tables)}; `scripts/candidate_rule_change.py --method mospl`. Columns "
                 "`*_step`: the committed rows (`full_fit=model`, `kernel_product=matrix`); `*_current`: the reruns "
                 "(`full_fit=exact`, `kernel_product=factor`). A "
                 f"value moved when it differs by more than {MOVED_REL:g} relative. The search compares objective "
                 "values exactly, so either change gives another Pareto set (docs/mospl.md, \"The full fit and "
                 "the kernel product\").\n\n")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / f"{stem}_pairs.csv", pairs.to_csv(index=False))
    text = (intro + to_markdown(summary.map(lambda v: f"{v:.3g}" if isinstance(v, float) else v))
            + "\n\n## The moved values\n\n"
            + (to_markdown(moved.map(lambda v: f"{v:.6g}" if isinstance(v, float) else v)) if len(moved)
               else "None.\n"))
    atomic_write_text(out / f"{stem}.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
