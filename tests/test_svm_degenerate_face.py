"""The event log of a linear-kernel SVM path is complete (issue 59, point 7).

On digits 3 against 8 (250 rows, 25 % flips, mixture SP) an independent ACS scan seeded from the
path found samples changing sets with no recorded event, and events whose moves differed from
the scan's set change, with KKT holding everywhere.  Measured: every such change was made by a
warm start, which re-derives the sets from the margins (after a jump, and after a run of
chattering events), and which ``moves`` does not list.  Each SVM event now carries
``set_change``, the net set change up to the next segment (warm start included), and
``degenerate_face``, the moved samples whose margin does not move with their set (``a_i`` at a
bound, only its label changed: invisible to ``w`` and ``b``).

The check here does not use the engine's sets: at ages between the events ACS is run from the
path's ``at(lam)`` with the exact weighted-dual fits (each certified by the natural residual, as
in ``test_gaga_linear_kernel``) and every sample is placed by its *margin* ``g = 1 - y f(x)``
(unique at each weighted optimum, unlike the dual coefficients): below, on or above the margin,
and above it by the SP partition of its loss.  Between two consecutive ages the samples that
changed place must be exactly those of the recorded set changes in between, up to the samples a
recorded event lists in ``degenerate_face``.  A change with no event is a missing event.
"""

from __future__ import annotations

import numpy as np
import pytest

from gaga_reference import svm_natural_residual
from spl_bench.gaga import age_path
from spl_bench.gaga.core.path import AgePath
from spl_bench.methods._acs_solvers import ExactSVMFits
from spl_bench.models import Params, get_model
from spl_bench.sp import EASY, MIXED, get_sp
from test_gaga_linear_kernel import MARGIN_TOL, REF_KKT, C, digits_3_vs_8, margins

SP_PARAMS = {"gamma": 0.5}
LAM_RANGE = (0.1, 20.0)
#: the engine's set names, by the place of the margin they imply (E_Z: on it)
PLACE = {"E_N": "below", "E_Z": "on", "E_P": "easy", "M": "mixed", "D": "hard"}


@pytest.fixture(scope="module")
def digits_path() -> tuple[AgePath, np.ndarray, np.ndarray]:
    X, y = digits_3_vs_8(250, flip=0.25)
    path = age_path(X, y, model="svm", sp="mixture", sp_params=SP_PARAMS, lam_range=LAM_RANGE, C=C,
                    kernel="linear")
    return path, X, y


@pytest.fixture(scope="module")
def scanned(digits_path) -> list:
    path, X, y = digits_path
    return scan(path, X, y, n_ages=160)


def places(g: np.ndarray, lam: float, sp) -> tuple[np.ndarray, np.ndarray]:
    """Place of each margin (below / on / easy / mixed / hard) and whether it is within
    ``MARGIN_TOL`` of a boundary of another place (left out of the comparison)."""
    ell = C * np.maximum(g, 0.0)
    part = sp.partition(ell, lam)
    out = np.where(part == EASY, "easy", np.where(part == MIXED, "mixed", "hard")).astype(object)
    out[g < 0] = "below"
    out[np.abs(g) <= MARGIN_TOL] = "on"
    lo, hi = sp.thresholds(lam)
    near = ((np.abs(g) > MARGIN_TOL) & (np.abs(g) <= 10 * MARGIN_TOL)) | (np.abs(ell - lo) < MARGIN_TOL) \
        | (np.abs(ell - hi) < MARGIN_TOL)
    return out, near


def scan(path: AgePath, X: np.ndarray, y: np.ndarray, n_ages: int) -> list[tuple[float, np.ndarray, np.ndarray]]:
    """ACS (exact weighted-dual fits, 4 iterations) from ``at(lam)`` at ``n_ages`` ages between the
    events: ``(lam, place, near)`` of the ACS margins, each fit certified to ``REF_KKT``."""
    sp = get_sp("mixture", **SP_PARAMS)
    fits = ExactSVMFits(get_model("svm", C=C, kernel="linear"), X, y)
    crit = np.array([e["lam"] for e in path.events] + [e.get("lam_sets", e["lam"]) for e in path.events])
    ages = np.geomspace(path.lambdas[0] * 1.0005, path.lambdas[-1] * 0.9995, n_ages)
    ages = ages[np.all(np.abs(ages[:, None] - crit[None, :]) > 1e-4 * np.maximum(1.0, ages)[:, None], axis=1)]
    A, B = path.at(ages)
    out = []
    for lam, a, b in zip(ages, A, B, strict=True):
        v = sp.v_star(C * np.maximum(margins(X, y, a, b), 0.0), lam)
        p = Params(dual_coef=a, intercept=float(b), X_fit=X, y_fit=y, extra={"gamma": 1.0})
        for _ in range(4):
            p = fits.fit_weighted(X, y, v, warm=p)
            g = margins(X, y, p.dual_coef, p.intercept)
            assert svm_natural_residual(p.dual_coef, g, v, y, C) <= REF_KKT
            v = sp.v_star(C * np.maximum(g, 0.0), lam)
        out.append((float(lam), *places(g, lam, sp)))
    return out


def mismatches(path: AgePath, scanned: list, field: str = "set_change") -> list[tuple[float, float, dict, dict]]:
    """Intervals between consecutive scanned ages where the samples that changed place differ from
    the recorded set changes (events' ``field``) in between, ``degenerate_face`` samples excepted."""
    bad = []
    for (l0, p0, n0), (l1, p1, n1) in zip(scanned, scanned[1:], strict=False):
        events = [e for e in path.events if l0 < e["lam"] < l1]
        face = {i for e in events for i in e.get("degenerate_face", [])}
        seen = {int(i): (p0[i], p1[i]) for i in np.flatnonzero((p0 != p1) & ~n0 & ~n1) if int(i) not in face}
        rec: dict[int, tuple[str, str]] = {}
        for e in events:
            for i, frm, to in e.get(field, []):
                rec[i] = (rec.get(i, (PLACE[frm], ""))[0], PLACE[to])
        rec = {i: ft for i, ft in rec.items() if ft[0] != ft[1] and i not in face and not (n0[i] or n1[i])}
        if seen != rec:
            bad.append((l0, l1, seen, rec))
    return bad


def test_event_log_matches_an_independent_scan(digits_path, scanned):
    path, X, y = digits_path
    assert len(scanned) >= 120
    assert all("set_change" in e and "degenerate_face" in e for e in path.events)
    assert mismatches(path, scanned) == []
    # the old log (the events' own moves) misses the warm starts' set changes: the scan sees that
    assert mismatches(path, scanned, field="moves")


def test_the_check_finds_a_missing_event(digits_path, scanned):
    """Dropping one recorded change that moves a margin (not in ``degenerate_face``) must fail."""
    path, X, y = digits_path
    lams = np.array([s[0] for s in scanned])
    # a turning point with a set change the scan can see: alone between two scanned ages
    k = -1
    for q, e in enumerate(path.events):
        j = int(np.searchsorted(lams, e["lam"]))
        if not 0 < j < lams.size or e["kind"] != "turning":
            continue
        inside = [f for f in path.events if lams[j - 1] < f["lam"] < lams[j]]
        visible = [m for m in e["set_change"] if m[0] not in e["degenerate_face"]]
        if len(inside) == 1 and visible:
            k = q
            break
    else:
        pytest.fail("no isolated turning point to remove")
    events = [dict(f) for f in path.events]
    events[k] = {**events[k], "set_change": [], "degenerate_face": []}
    tampered = AgePath(**{**path.__dict__, "events": events})
    bad = mismatches(tampered, scanned)
    assert len(bad) == 1 and bad[0][0] < path.events[k]["lam"] < bad[0][1]


def test_degenerate_face_is_recorded_and_saved(digits_path, tmp_path):
    path, X, y = digits_path
    faces = [e for e in path.events if e["degenerate_face"]]
    assert faces  # measured on this case: face moves at jumps and chattering exits
    for e in path.events:
        moved = {m[0] for m in e["set_change"]}
        assert set(e["degenerate_face"]) <= moved
        assert e["lam_sets"] >= e["lam"]
        assert e["rank_deficiency"] >= 0
    loaded = AgePath.load(path.save(tmp_path / "p.npz"))
    assert loaded.events == path.events
    assert "event_notes" not in loaded.meta  # the notes are keys of the events themselves


@pytest.mark.slow
def test_event_log_matches_a_dense_scan(digits_path):
    path, X, y = digits_path
    scanned = scan(path, X, y, n_ages=1200)
    assert mismatches(path, scanned) == []


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_the_margin_places_of_the_moved_rows_are_those_of_the_whole_margin(kernel):
    """``set_change_note`` places only the moved samples (``_margin_class`` on their rows); the places
    must be those of the margin ``g = 1 - y (K (a * y) + b)`` of every sample, formed here from the
    kernel directly, at points with samples exactly on the margin and with ``dg/dlam = 0`` among them."""
    from sklearn.metrics.pairwise import rbf_kernel

    from spl_bench.gaga.svm.svm_system import FACE_TOL, SVMSystem

    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 5))
    y = np.where(rng.random(60) < 0.5, -1.0, 1.0)
    sp = get_sp("mixture", **SP_PARAMS)
    model = get_model("svm", C=C, kernel=kernel, gamma=0.3)
    system = SVMSystem(model, sp, X, y)
    K = rbf_kernel(X, X, gamma=0.3) if kernel == "rbf" else X @ X.T
    for trial in range(20):
        a, da = rng.uniform(0, C, 60), rng.normal(size=60)
        b, db = float(rng.normal()), float(rng.normal())
        lam = float(rng.uniform(*LAM_RANGE))
        g = 1.0 - y * (K @ (a * y) + b)
        dg = -y * (K @ (da * y)) - y * db
        if trial % 2:  # put two samples on the margin, one staying there, within the face tolerance
            b = b + float(y[0] * g[0])
            g = 1.0 - y * (K @ (a * y) + b)
            db = db + float(y[0] * dg[0])
            dg = -y * (K @ (da * y)) - y * db
        side = np.where(np.abs(g) <= FACE_TOL, np.where(np.abs(dg) <= FACE_TOL, 0.0, dg), g)
        want = (2 + sp.partition(C * np.maximum(g, 0.0), lam)).astype(np.int8)
        want[side < 0] = 0
        want[side == 0] = 1
        rows = np.sort(rng.choice(60, size=7, replace=False))
        rows[0] = 0
        rows = np.unique(rows)
        got = system._margin_class((a, b, da, db), lam, rows)
        # a place differs only where the two margins sit within rounding of a boundary
        near = np.minimum(np.abs(np.abs(g) - FACE_TOL), np.abs(g))[rows] <= 1e-12
        assert np.all((got == want[rows]) | near)
        if trial % 2:
            assert got[0] == 1
