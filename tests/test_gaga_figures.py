"""``scripts/gaga_figures.py --quick`` (GAGA Figures 4 and 5) in a temporary directory.

Checks the tidy CSV columns, the PNGs, and that GAGA's exact path and ACS give the same test
error at ACS's grid ages wherever both sit on the same partial optimum (the script's
``same_point``: ACS converged, GAGA's point there is a partial optimum with the same sample
partition {i : v*_i > 0}).

Tolerance 1e-6 (absolute, on a test MSE of ~0.2-0.5 on the standardised target): GAGA's dense
output is accurate to ~1e-7 relative in the coefficients (``dense_tol``), ACS stops at a v change
≤ 1e-10 or a KKT violation ≤ 1e-7 (relative to n α), and the test MSE moves by at most about
2·sqrt(MSE)·rms(X_test Δw), i.e. ~1e-6 for such errors on standardised music features.  Measured:
3.5e-8.  Comparing the wrong ages, the wrong test rows, or two different partial optima gives
differences of 2e-3 to 1e-1 (measured at the ages where ``same_point`` is false), far above it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pandas as pd

from spl_bench.paths import repo_root

SCRIPT = repo_root() / "scripts" / "gaga_figures.py"
FIG4_COLUMNS = ["noise_rate", "method", "seed", "lam", "test_error", "point", "same_point"]
FIG5_COLUMNS = ["panel", "method", "n", "lam_max", "seed", "cpu_s", "n_critical_points", "n_ages", "extrapolated"]
TOL = 1e-6


def test_quick_figures(tmp_path, data_dir):
    env = {**os.environ, "SPL_BENCH_DATA_DIR": str(data_dir), "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    t0 = time.process_time()
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--out", str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert time.process_time() - t0 < 5  # the work is in the child
    assert "[fig4] noise=0.3 seed=0 GAGA" in proc.stdout and "[fig5] n=60" in proc.stdout

    for fig in (4, 5):
        assert (tmp_path / f"gaga_fig{fig}.png").stat().st_size > 10_000
        assert not (tmp_path / f"gaga_fig{fig}.csv.tmp").exists()

    f4 = pd.read_csv(tmp_path / "gaga_fig4.csv")
    assert list(f4.columns) == FIG4_COLUMNS
    assert set(f4.method) == {"GAGA", "ACS (step 0.5)"}
    assert set(f4.point) == {"grid", "critical", "acs_age"}
    assert np.isfinite(f4.test_error).all() and (f4.test_error > 0).all()
    for (_rate, _seed), d in f4.groupby(["noise_rate", "seed"]):
        acs = d[d.method == "ACS (step 0.5)"].set_index("lam")
        gaga = d[(d.method == "GAGA") & (d.point == "acs_age")].set_index("lam")
        assert np.allclose(acs.index, gaga.index)
        same = acs.same_point.astype(bool).to_numpy()
        diff = np.abs(acs.test_error.to_numpy() - gaga.test_error.to_numpy())
        assert same.sum() >= 3 and same.mean() >= 0.5, f"only {same.sum()} of {len(same)} ages on the same point"
        assert diff[same].max() <= TOL, f"GAGA and ACS differ by {diff[same].max():.2e} on the same partial optimum"
        # the path's curve on the dense grid passes through its values at ACS's ages (same path, same test rows)
        grid = d[(d.method == "GAGA") & (d.point == "grid")].sort_values("lam")
        assert grid.lam.is_monotonic_increasing and grid.lam.iloc[0] == acs.index[0]

    f5 = pd.read_csv(tmp_path / "gaga_fig5.csv")
    assert list(f5.columns) == FIG5_COLUMNS
    assert set(f5.panel) == {"a", "b"}
    assert set(f5.method) == {"GAGA", "ACS (step 0.5)", "ACS (step 0.01)"}
    assert (f5.cpu_s > 0).all()
    g = f5[f5.method == "GAGA"]
    assert (g.n_critical_points > 0).all() and f5[f5.method != "GAGA"].n_critical_points.isna().all()
    fine = f5[f5.method == "ACS (step 0.01)"]
    assert (fine.extrapolated.astype(bool) == (fine.n_ages > 10)).all()  # the --quick cap: 10 ages
    assert sorted(f5[f5.panel == "a"].n.unique()) == [60, 100]
