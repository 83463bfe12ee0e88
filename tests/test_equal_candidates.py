"""Equal candidates (issue 65): GAGA's exact path and ACS evaluated at the same ages.

On a lasso row with the linear SP, ACS warm-started along the paper's grid and GAGA's path follow
the same partial optima, so with the same candidates (the grid's ages) their candidates, and the
value a validation split selects, agree; the reference is ACS's own fits, not the path.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_diabetes

from spl_bench.errors import ConfigError
from spl_bench.methods.acs import ACS
from spl_bench.methods.gaga import GAGA
from spl_bench.methods.original import Original


def _noisy_diabetes() -> tuple[np.ndarray, np.ndarray]:
    X, y = load_diabetes(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    y = (y - y.mean()) / y.std()
    rng = np.random.default_rng(0)
    out = rng.random(len(y)) < 0.3
    y[out] = rng.normal(0.0, 3.0, out.sum())
    return X, y


KW = dict(model="lasso", model_params={"alpha": 0.005}, sp="linear", lam_min=0.1, lam_max=20.0)


def test_gaga_and_acs_give_the_same_candidates_and_selection_on_the_shared_grid():
    X, y = _noisy_diabetes()
    fit, val = np.arange(300), np.arange(300, len(y))
    acs = ACS(lam_step=0.5, **KW).fit(X[fit], y[fit])
    gaga = GAGA(**KW).fit(X[fit], y[fit])
    assert len(gaga.candidate_params_) > 10 * len(acs.candidate_params_)  # its own: thousands
    grid = acs.ages()
    gaga.use_ages(grid)
    acs.use_ages(grid)  # its own grid: unchanged
    assert [c["lam"] for c in gaga.candidate_params_] == pytest.approx([c["lam"] for c in acs.candidate_params_])
    W_g = np.array([m.coef for m in gaga.candidate_models_])
    W_a = np.array([m.coef for m in acs.candidate_models_])
    assert np.max(np.abs(W_g - W_a)) <= 1e-6 * (1 + np.abs(W_a).max())
    # the value a validation split selects, each method on its own candidates
    err = [np.mean((est.predict_candidates(X[val]) - y[val]) ** 2, axis=1) for est in (gaga, acs)]
    assert np.argmin(err[0]) == np.argmin(err[1])
    assert err[0].min() == pytest.approx(err[1].min(), rel=1e-6)
    assert gaga.run_info()["candidate_set"] == "shared_grid" and gaga.run_info()["n_candidates"] == len(grid)


def test_shared_ages_off_the_methods_solutions_are_refused():
    X, y = _noisy_diabetes()
    acs = ACS(lam_step=0.5, **{**KW, "lam_max": 2.0}).fit(X, y)
    with pytest.raises(ConfigError, match="another grid"):
        acs.use_ages([0.1, 0.35])
    with pytest.raises(ConfigError, match="no solutions indexed by age"):
        Original(model="lasso", model_params={"alpha": 0.005}).fit(X, y).use_ages([0.1])
    gaga = GAGA(**{**KW, "lam_min": 1.0, "lam_max": 2.0}).fit(X, y)
    gaga.use_ages([0.5, 1.0, 1.5, 3.0])  # ages off the path are no candidates
    assert [c["lam"] for c in gaga.candidate_params_] == [1.0, 1.5]


def test_protocol_shared_grid_gives_gaga_and_acs_the_same_selected_value_and_records_it():
    """``protocol.candidates=shared_grid`` through the protocol (split, noise, selection), diabetes."""
    from spl_bench.data.loaders import load_dataset
    from spl_bench.protocol.run import NoiseConfig, ProtocolConfig, run_once

    ds = load_dataset("diabetes")
    noise = NoiseConfig("target_gaussian", 0.3)
    proto = ProtocolConfig(candidates="shared_grid", n_runs=1)
    kw = {**KW, "model_params": {"alpha": 0.005}}
    out = {name: run_once(ds, make, proto, noise, 0)
           for name, make in (("gaga", lambda: GAGA(**kw)), ("acs", lambda: ACS(lam_step=0.5, **kw)))}
    assert out["gaga"].value == pytest.approx(out["acs"].value, rel=1e-6, abs=1e-9)
    assert out["gaga"].lam == pytest.approx(out["acs"].lam)
    for o in out.values():
        assert o.info["candidate_set"] == "shared_grid" and o.info["n_candidates"] == 40
    own = run_once(ds, lambda: GAGA(**kw), ProtocolConfig(n_runs=1), noise, 0)
    assert own.info["n_candidates"] > 40 and "candidate_set" not in own.info
    with pytest.raises(ConfigError, match="unknown protocol.candidates"):
        ProtocolConfig(candidates="equal")
    with pytest.raises(ConfigError, match="no solutions indexed by age|needs a method with an age range"):
        run_once(ds, lambda: Original(model="lasso", model_params={"alpha": 0.005}), proto, noise, 0)


def test_findings_set_each_lines_test_beside_its_equal_candidates_test(tmp_path):
    """A mixed Table 2 (GAGA ahead of ACS on both lines, tests/mixed_rows.py) plus equal-candidates rows
    of one line where GAGA and ACS are identical: of the two significant lines, one has such rows,
    and there the difference does not remain."""
    import shutil

    from mixed_rows import mixed_table, write_line
    from spl_bench.report import compare as cmp
    from spl_bench.report.candidate_count import candidate_count_section

    lines = mixed_table(tmp_path / "rows")
    same = list(lines["music†"]["acs"])
    write_line(tmp_path / "eq", "music", "target_gaussian@0.3", "gen_error", {"alpha": 0.005},
               {"acs": same, "gaga": same}, "t2_music_n30")
    shutil.move(tmp_path / "eq" / "gaga_table2", tmp_path / "rows" / "gaga_table2@equal_candidates")
    comp = cmp.compare_table("2", tmp_path / "rows")
    sig = comp.significance
    eq = sig[sig["selection"] == "validation@equal_candidates"]
    assert len(eq) == 1 and int(eq["n_nonzero"].iloc[0]) == 0 and not bool(eq["significant"].iloc[0])
    text = candidate_count_section([comp])
    assert "2 pooled lines show a significant difference between GAGA and ACS; 1 of them" in text
    assert "in 0 of those the same method is still significantly better" in text
    # test-selected = validation-selected values in these rows: no optimism for any method
    for name in ("GAGA", "ACS", "MOSPL", "Original"):
        assert f"| {name} | 2 | 0.0000 | 0.0000 | 0 |" in text


def test_numerical_ties_are_zero_differences_in_the_paired_tests():
    """Differences of a few 1e-10 (the exact path against converged ACS fits) are ties: no test
    rests on them; differences of 1e-6 are kept."""
    from spl_bench.report.significance import TIE_RTOL, _pair_record, paired_differences

    rng = np.random.default_rng(0)
    a = 0.2 + 0.01 * rng.random(20)
    tiny = a - 2e-10 * (1.0 + rng.random(20))  # one sign on every seed
    assert np.all(paired_differences(a, tiny) == 0.0) and 2e-10 * 2 < TIE_RTOL
    rec = _pair_record(a, tiny, higher=0.0)
    assert rec["n_nonzero"] == 0
    assert not rec["p_value"] < 0.05  # no p-value (NaN) or 1: nothing to test
    small = a - 1e-6 * (1.0 + rng.random(20))
    rec = _pair_record(a, small, higher=0.0)
    assert rec["n_nonzero"] == 20 and rec["p_value"] < 0.001
