"""The engine's numerical settings (:class:`EngineOptions`) and the steppers it accepts."""

from __future__ import annotations

from dataclasses import dataclass

from scipy.integrate import BDF, DOP853, LSODA, RK45, OdeSolver


@dataclass
class EngineOptions:
    """Numerical settings of the engine."""

    # the route that follows a segment (a speed choice: every route gives the same critical points,
    # and GAGA's candidates are those and a fixed grid through the dense output, docs/gaga.md):
    # "fastest" (the default): the fastest route measured exact for each system: the compiled
    # follower where the system has one (the lasso: gaga/glm/segment_nb.py), the route of
    # FASTEST_STEPPER for a model it names (none today), "auto" elsewhere and for the segments the
    # follower hands back (docs/gaga.md "Routes and candidates");
    # "PC", the predictor-corrector continuation (gaga/core/continuation.py); "compiled": the
    # compiled follower where the system has one, "auto" elsewhere; a scipy OdeSolver: "auto" (RK45;
    # LSODA from a segment's step ``stiff_steps`` on), LSODA, BDF, RK45 or DOP853.  Every route
    # hands a fold to the predictor-corrector, which locates it on the branch (stepping.py)
    method: str = "fastest"
    stiff_steps: int = 40
    rtol: float = 1e-7
    atol: float = 1e-9
    max_step: float = 0.25
    delta: float = 1e-5  # relative offset of a warm start after a jump point
    newton_tol: float = 1e-12  # relative residual of F
    # points are added inside a solver step until the Hermite interpolant of the recorded points
    # (AgePath.at) matches the solver's dense output to this (relative to 1 + max |values|)
    dense_tol: float = 1e-7
    dense_max_depth: int = 4  # at most 2**depth - 1 added points per step
    # what the interpolant is checked against at a step's middle: "projected", the middle point
    # projected onto F = 0 (a point of the path, whatever the route); "solver", the solver's own
    # dense output (its error is of the order of rtol; the rule of the rows made before 2026-11-29)
    dense_check: str = "projected"
    event_tol: float = 1e-10  # relative tolerance of an event function
    max_events: int = 200_000
    acs_tol: float = 1e-7
    blas_threads: int | None = 1  # BLAS threads while the path is computed (None: library default)
    acs_max_iter: int = 2000
    # over-relaxed ACS steps while escaping after a jump (GLM models): faster, but the warm
    # start may then settle on another partial optimum than plain ACS (GAGA's definition)
    acs_extrapolate: bool = False
    acs_extrapolate_max: float = 4096.0  # largest over-relaxation factor tried
    # warm-start each ACS step's v-weighted fit at the linear extrapolation 2 w_t - w_{t-1} of the
    # last two iterates instead of w_t, where the fit's minimiser is unique (smooth GLM fits): the
    # same ACS iterates to the fit's tolerance, fewer Newton steps (the cell proxy of Tables 5-6,
    # bench_families: 280 -> 229 CPU-s, the same 45 critical points, ages within 4e-9).  Seed 0 of
    # every GAGA cell that takes it (logistic, Tables 5-6) reproduces its committed values with it
    acs_warm_extrapolate: bool = True
    # SVM ACS steps by the exact warm-started active-set solver (svm.inner.WeightedSVMDual), libsvm
    # when it gives up; False: libsvm for every step
    svm_active_set: bool = True
    # warm starts: where the ACS map is affine while the sets hold (SVM with the linear or hard
    # SP), creeping iterations are skipped by extrapolating its dominant mode up to just before
    # the first set change (WarmStarts.acs_skip_ahead); False: every ACS iteration is computed
    acs_skip: bool = True
    # trial polishes of warm starts give up once the re-assignment of the sets returns to a set
    # assignment it has had (it cycles, typically A -> B -> A); False: every trial runs all its rounds
    polish_cycle_exit: bool = True
    # directory of checkpoint files: the path's state is saved there every ``checkpoint_every``
    # seconds (between segments) and a later call with the same inputs resumes from it
    # (:func:`age_path`); None: no checkpoints
    checkpoint_dir: str | None = None
    checkpoint_every: float = 600.0
    # the start when ACS from the v = 1 fit ends on a degenerate partial optimum at lam_min (one class
    # selected, Model.degenerate_selection): "advance" starts the path at the first age where it
    # does not (scanned, then bisected to ``start_rtol``; docs/gaga.md "Degenerate partial
    # optima"); "lam_min" starts at lam_min whatever ACS gives there (the rows before 2026-11-28)
    degenerate_start: str = "advance"
    start_rtol: float = 1e-2
    # a warm start after a jump that ends with one class selected is retried from the v = 1 fit at
    # the same age (the start's rule); False: the path goes on from it (the rows before 2026-11-28)
    degenerate_retry: bool = True
    # warn when more right-hand sides than this share (and ``lstsq_warn_min``) were solved by least squares
    lstsq_warn_share: float = 0.1
    lstsq_warn_min: int = 50


#: options that do not change the path (left out of the checkpoint key)
_RUN_ONLY_OPTIONS = ("checkpoint_dir", "checkpoint_every", "blas_threads", "lstsq_warn_share", "lstsq_warn_min")

#: scipy ODE solvers the engine can drive step by step (``EngineOptions.method``)
ODE_SOLVERS: dict[str, type[OdeSolver]] = {"LSODA": LSODA, "BDF": BDF, "RK45": RK45, "DOP853": DOP853}
#: accepted values of ``EngineOptions.method``
ODE_METHODS = ("fastest", "auto", *ODE_SOLVERS, "PC", "compiled")
#: routes that take a segment by the compiled follower where the system has one
COMPILED_ROUTES = ("fastest", "compiled")
#: routes whose step-by-step segments are RK45, handed to LSODA on stiff segments
AUTO_ROUTES = ("auto", "fastest", "compiled")


#: the step-by-step route ``"fastest"`` takes for a model (``Model.name``), where it is measured exact (the same
#: critical points as ``"auto"``) and faster; the other models: ``"auto"``.  Empty: the predictor-corrector is
#: exact on the logistic model since its folds are (results/bench/gaga_pc_log.md), but measured 0.93x auto's
#: CPU on one proxy run and 1.6x slower on the wide proxy before the fix: not faster until an A/B says so
FASTEST_STEPPER: dict[str, str] = {}


def stepper_name(method: str, model: str = "") -> str:
    """The step-by-step route of a segment under ``method`` (where no compiled follower takes it) for
    the model named ``model``: for ``"fastest"`` the model's :data:`FASTEST_STEPPER` entry if it has
    one; ``"RK45"`` for ``"auto"``, ``"fastest"`` and ``"compiled"`` (switching to LSODA on stiff
    segments: :data:`AUTO_ROUTES`), else ``method`` itself."""
    if method == "fastest" and model in FASTEST_STEPPER:
        return FASTEST_STEPPER[model]
    return "RK45" if method in AUTO_ROUTES else method
