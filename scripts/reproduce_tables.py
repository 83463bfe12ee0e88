"""Reproduce the papers' tables from raw data: run every cell's missing seeds, then write the tables.

    python scripts/reproduce_tables.py --plan                     # every cell: runs done / left, ETA
    python scripts/reproduce_tables.py                            # GAGA Tables 2, 3, 5, 6, 20 runs each
    python scripts/reproduce_tables.py --tables 2 --runs 5 --methods original acs gaga --jobs 2
    python scripts/reproduce_tables.py --tables 9 13 op2 op3      # any table of the three papers
    python scripts/reproduce_tables.py --tables 11 --where model.params.C=0.5 model.params.C=1.0
    python scripts/reproduce_tables.py --executor submitit --slurm-partition cpu --jobs 64
    python scripts/reproduce_tables.py --tables 2 3 --methods gaga --current-rule   # GAGA reruns, new candidates
    python scripts/reproduce_tables.py --tables 11 --methods mospl --current-rule   # MOSPL reruns, current rule
    python scripts/reproduce_tables.py --report-only              # tables from the committed rows only
    python scripts/reproduce_tables.py --smoke                    # regenerate results/reference/smoke.csv

Per-seed rows go to ``results/rows/<experiment>/`` (commit them: the next run, on any machine,
skips the seeds already there); tables, figures and ``coverage.csv`` to ``results/tables/``, and one
page of them all to ``results/index.html``.
In Tables 2-3 the run of a GAGA or ACS cell also writes its equal-candidates row from the same
fit (``--no-shared-fits``: not); ``--current-rule`` reruns GAGA cells under the route-independent
candidates beside the committed step-rule rows (docs/gaga.md, "Routes and candidates"), and MOSPL
cells under its current rule beside the rows of its old one (docs/mospl.md, "The full fit and the
kernel product").
Every row file carries a check trailer (row count and SHA-256); a damaged one stops the script
with one line naming it (``spl-bench verify results/rows`` lists them all).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from spl_bench.errors import SplBenchError, environment_error
from spl_bench.runner.cells import method_of, old_rule_reruns, table_cells
from spl_bench.runner.plan import cell_states, made_before, plan_lines, target_runs
from spl_bench.runner.reproduce import companion_states, log_line, pending_tasks, refresh_indexes, run_tables
from spl_bench.table_registry import OLD_RULES, PROTOCOL_VARIANTS, TABLES, step_rule_key

DEFAULT_TABLES = ["2", "3", "5", "6"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", nargs="+", default=None, choices=list(TABLES),
                    help=f"default: {' '.join(DEFAULT_TABLES)}; with --report-only every table (it writes every "
                         "table, so every index follows its table's rule: a table leaving an old rule is read "
                         "on its new rows)")
    ap.add_argument("--runs", type=int, default=None,
                    help="runs per cell (default: each table's paper's run count, GAGA 20, Outlier-Path 10)")
    ap.add_argument("--methods", nargs="+", default=None, help="only these methods")
    ap.add_argument("--data", nargs="+", default=None, help="only these datasets")
    ap.add_argument("--where", nargs="+", default=None, metavar="KEY=VALUE",
                    help="only cells with these sweep values (e.g. model.params.C=0.5 model.params.C=1.0)")
    ap.add_argument("--jobs", type=int, default=1, help="parallel runs (joblib processes, or submitit array tasks)")
    ap.add_argument("--executor", choices=["joblib", "submitit"], default="joblib")
    ap.add_argument("--slurm-partition", default=None, help="with --executor submitit: run on this SLURM partition")
    ap.add_argument("--max-cell-seconds", type=float, default=None,
                    help="give a cell no new seed once its seconds per run, as the plan estimates them (--plan), "
                         "exceed this (reduced runs)")
    ap.add_argument("--checkpoint-dir", default="runs/checkpoints",
                    help="GAGA runs save their path's state here every 10 min and a rerun resumes from it "
                         "('none': no checkpoints)")
    ap.add_argument("--blas-threads", type=int, default=1,
                    help="BLAS threads of each GAGA run (a long path on an otherwise idle machine; the "
                         "BLAS library needs as many, e.g. OPENBLAS_NUM_THREADS)")
    ap.add_argument("--plan", action="store_true", help="print every cell: runs done / left and an ETA; run nothing")
    ap.add_argument("--report-only", action="store_true", help="write the tables from the committed rows; run nothing")
    ap.add_argument("--no-report", action="store_true",
                    help="run the cells' seeds and write their rows only, not the tables (a part of a sweep, e.g. "
                         "one of several worktrees or cluster jobs; --report-only writes the tables from all rows "
                         "once they are merged)")
    ap.add_argument("--variant", default="", choices=["", *PROTOCOL_VARIANTS],
                    help="run the cells under a protocol variant (authors: the GAGA authors' noise; clean: each "
                         "row's plain model on clean training labels, the reference of what the model reaches); "
                         "rows kept apart")
    ap.add_argument("--current-rule", action="store_true",
                    help="the cells of GAGA and MOSPL only, under their current rule where the table's committed "
                         "rows are on an old one (GAGA: step-point candidates; MOSPL: the model's full fit and the "
                         "kernel matrix's product): the reruns of issue 62, written beside those rows, not read by "
                         "the tables until the table leaves the method's keys in table_registry.OLD_RULES. Without "
                         "it a sweep (and its --plan) makes the cells that owe such a rerun under the current rule "
                         "too, beside the other methods' cells, so that no run is made twice")
    ap.add_argument("--no-shared-fits", action="store_true",
                    help="do not write a GAGA / ACS cell's equal-candidates rows from its own fits (Tables 2-3)")
    ap.add_argument("--refresh-made-before", default=None, metavar="COMMIT",
                    help="run again the seeds whose rows were made by code without COMMIT (a fix that kept the "
                         "configuration hash, e.g. aeaaaff: ACS's degenerate ages); their rows are replaced as "
                         "each run finishes (docs/reproducing.md, 'Refreshing rows made before a fix')")
    ap.add_argument("--smoke", action="store_true", help="regenerate the drift-check reference")
    args = ap.parse_args()
    if args.tables is None:
        args.tables = list(TABLES) if args.report_only else DEFAULT_TABLES

    if args.smoke:
        return _smoke()
    try:
        cells = [c for t in args.tables
                 for c in table_cells(t, args.methods, args.data, args.variant, args.where, args.current_rule)]
        if not args.report_only and not args.current_rule:
            # a cell still on an old rule whose rows the current rule changes is made under the current
            # rule (beside the rows the table reads until it leaves the rule), so no run is made twice
            owed = {replace(c, current_rule=False): c for c in old_rule_reruns(cells)}
            cells = [owed.get(c, c) for c in cells]
        if args.report_only:
            # the index follows the configs: rows written by several machines / worktrees merge here; a cell's
            # equal-candidates rows come from its fits and follow its candidate rule, so their index too
            refresh_indexes(cell_states(cells))
        else:
            states = cell_states(cells)
            runs = args.runs
            if args.refresh_made_before:
                states, old = made_before(states, args.refresh_made_before)
                print(f"refresh: {sum(len(s) for s in old.values())} seeds in {len(old)} cells were made by code "
                      f"without {args.refresh_made_before}; they are run again and their rows replaced")
            if args.plan:
                for line in plan_lines(states, runs, args.jobs):
                    print(line)
                twins = companion_states(states)
                whole = not args.data and not args.where  # every such cell of the tables
                for table in args.tables if whole else ():
                    key = step_rule_key(table, args.variant)  # a variant's cells leave an old rule on their own
                    for method, (keys, _) in OLD_RULES.items():
                        mine = [st for st in states if st.cell.table == table and method_of(st.cell) == method
                                and st.cell.current_rule]
                        mine += [t for st in mine for t in twins.get(st.cell, [])]
                        if mine and all(set(range(target_runs(st.cell, runs))) <= st.done for st in mine) \
                                and key in keys:
                            at = f"{runs} runs" if runs is not None else "its paper's run count"
                            print(f"table {key}: every {method} cell (and its equal-candidates cell) rerun under "
                                  f"the current rule at {at}; {key!r} can leave its method's keys in "
                                  f"table_registry.OLD_RULES")
                equal = companion_states(states, same_config=False)  # the equal-candidates cells alone
                if equal and not args.no_shared_fits:
                    more = len(pending_tasks(states, runs, None, equal)) - len(pending_tasks(states, runs, None))
                    print(f"shared fits: the runs above also write {sum(len(t) for t in equal.values())} "
                          f"equal-candidates cells' rows; {more} more fits for seeds only those lack")
                return 0
            slurm = {"slurm_partition": args.slurm_partition} if args.slurm_partition else None
            ckpt = None if args.checkpoint_dir.lower() == "none" else Path(args.checkpoint_dir)
            if ckpt is not None and not ckpt.is_absolute():
                from spl_bench.paths import repo_root

                ckpt = repo_root() / ckpt
            failures = run_tables(states, runs, args.jobs, args.executor, args.max_cell_seconds, slurm,
                                  log=log_line, checkpoint_dir=ckpt, blas_threads=args.blas_threads,
                                  shared_fits=not args.no_shared_fits)  # fmt: skip
            for label, why in failures.items():
                print(f"failed: {label}: {why}", file=sys.stderr)
            if args.no_report:
                print("rows written; tables not written (--no-report): scripts/reproduce_tables.py --report-only")
                return 0
        from spl_bench.paths import repo_root
        from spl_bench.report.reproduction import write_all
        from spl_bench.report.site import write_site

        for path in write_all(readme=repo_root() / "README.md", findings=repo_root() / "results" / "FINDINGS.md"):
            print(f"wrote {path}")
        print(f"wrote {write_site()}")  # results/index.html, from the tables just written
    except SplBenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a full disk, a read-only folder, no permission: one line, no traceback
        problem = environment_error(exc, hint="the rows written before are kept and a rerun resumes from them")
        if problem is None:
            raise
        print(f"error: {problem}", file=sys.stderr)
        return 2
    return 0


def _smoke() -> int:
    import tempfile

    from spl_bench.atomic import atomic_write_text
    from spl_bench.paths import repo_root
    from spl_bench.runner.smoke import run_smoke

    with tempfile.TemporaryDirectory() as tmp:
        frame = run_smoke(tmp)
    out = repo_root() / "results" / "reference" / "smoke.csv"
    atomic_write_text(out, frame.to_csv(index=False))
    print(f"wrote {out} ({len(frame)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
