"""Reproduce the paper tables from raw data: run every row x method, then write the tables.

    python scripts/reproduce_tables.py                     # GAGA tables 2, 3, 5, 6 (hours on 2 cores)
    python scripts/reproduce_tables.py --tables 2 --runs 5 --methods original acs gaga
    python scripts/reproduce_tables.py --smoke             # regenerate results/reference/smoke.csv
    python scripts/reproduce_tables.py --tables op2 op3 --runs 10   # Outlier-Path Tables 2 / 3
    python scripts/reproduce_tables.py --tables op3 --data breast_cancer australian

Runs go to ``runs/`` (resumable: rerunning skips finished seeds); tables and figures to
``results/tables/<experiment>/``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TABLES = {"2": "gaga_table2", "3": "gaga_table3", "5": "gaga_table5", "6": "gaga_table6",
          "op2": "outlier_path_table2", "op3": "outlier_path_table3"}
#: extra sweeps of a table (the C-SVM column of the Outlier-Path tables has no variant)
EXTRA = {"op2": [["method=csvm", "method.variant=-"]], "op3": [["method=csvm", "method.variant=-"]]}
#: rows of the paper's table with no offline copy here (listed in the table as not available)
UNAVAILABLE = {"op2": ["gisette", "w5a", "a6a", "a7a"], "op3": ["gisette", "w5a", "a6a", "a7a"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", nargs="+", default=list(TABLES), choices=list(TABLES))
    ap.add_argument("--runs", type=int, default=20, help="runs per cell (paper: 20)")
    ap.add_argument("--methods", nargs="+", default=None, help="subset of the methods (default: the table's)")
    ap.add_argument("--data", nargs="+", default=None, help="subset of the datasets (default: the table's)")
    ap.add_argument("--results-root", default=str(ROOT / "runs"))
    ap.add_argument("--launcher", default=None, help="Hydra launcher, e.g. joblib or submitit_slurm")
    ap.add_argument("--smoke", action="store_true", help="regenerate the drift-check reference")
    args = ap.parse_args()
    exe = [sys.executable, "-m", "spl_bench.runner.cli"]

    if args.smoke:
        import tempfile

        from spl_bench.report.drift import run_smoke

        with tempfile.TemporaryDirectory() as tmp:
            frame = run_smoke(tmp)
        out = ROOT / "results" / "reference" / "smoke.csv"
        out.parent.mkdir(parents=True, exist_ok=True)
        frame.to_csv(out, index=False)
        print(f"wrote {out} ({len(frame)} rows)")
        return 0

    for t in args.tables:
        exp = TABLES[t]
        base = [*exe, "run", "-m", f"experiment={exp}", f"protocol.n_runs={args.runs}",
                f"results_root={args.results_root}", "progress=false"]  # fmt: skip
        if args.data:
            base.append(f"data={','.join(args.data)}")
        if args.launcher:
            base.append(f"hydra/launcher={args.launcher}")
        sweeps = [[f"method={','.join(args.methods)}"] if args.methods else []]
        if not args.methods:
            sweeps += EXTRA.get(t, [])
        for extra in sweeps:
            cmd = [*base, *extra]
            print("+", " ".join(cmd), flush=True)
            subprocess.run(cmd, check=False, cwd=ROOT)  # failed cells (e.g. no offline data) are reported, not fatal
        out = ROOT / "results" / "tables" / exp
        report = [*exe, "report", str(Path(args.results_root) / exp), "--out", str(out), "--name", exp]
        if UNAVAILABLE.get(t):
            report += ["--unavailable", *UNAVAILABLE[t]]
        subprocess.run(report, check=True, cwd=ROOT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
