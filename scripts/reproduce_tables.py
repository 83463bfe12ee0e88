"""Reproduce the paper tables from raw data: run every row x method, then write the tables.

    python scripts/reproduce_tables.py                     # GAGA tables 2, 3, 5, 6 (hours on 2 cores)
    python scripts/reproduce_tables.py --tables 2 --runs 5 --methods original acs gaga
    python scripts/reproduce_tables.py --smoke             # regenerate results/reference/smoke.csv

Runs go to ``runs/`` (resumable: rerunning skips finished seeds); tables and figures to
``results/tables/<experiment>/``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TABLES = {"2": "gaga_table2", "3": "gaga_table3", "5": "gaga_table5", "6": "gaga_table6"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", nargs="+", default=list(TABLES), choices=list(TABLES))
    ap.add_argument("--runs", type=int, default=20, help="runs per cell (paper: 20)")
    ap.add_argument("--methods", nargs="+", default=None, help="subset of the methods (default: the table's)")
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
        cmd = [*exe, "run", "-m", f"experiment={exp}", f"protocol.n_runs={args.runs}",
               f"results_root={args.results_root}"]  # fmt: skip
        if args.methods:
            cmd.append(f"method={','.join(args.methods)}")
        if args.launcher:
            cmd.append(f"hydra/launcher={args.launcher}")
        print("+", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=False, cwd=ROOT)  # failed cells (e.g. no offline data) are reported, not fatal
        out = ROOT / "results" / "tables" / exp
        subprocess.run([*exe, "report", str(Path(args.results_root) / exp), "--out", str(out), "--name", exp],
                       check=True, cwd=ROOT)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
