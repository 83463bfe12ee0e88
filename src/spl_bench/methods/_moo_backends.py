"""Multi-objective evolutionary back-ends for MOSPL: NSGA-III from geatpy (default) or pymoo.

Both back-ends minimise a vectorised objective ``evaluate(G) -> F`` over a box
``xl <= g <= xu`` and return the same :class:`MOOResult` (final population and
its objective values), so :mod:`spl_bench.methods.mospl` does not depend on the
library.  geatpy (the toolbox of the GAGA paper, appendix D.2) comes from the
``geatpy-rs`` package (the original ``geatpy`` has no wheel for Python >= 3.11).

:func:`non_dominated` is the Pareto filter used on the final population (it
does not rely on the back-end's own notion of "optimum").
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from spl_bench.errors import ConfigError

Array = NDArray[np.float64]
Evaluate = Callable[[Array], Array]

BACKENDS = ("pymoo", "geatpy")
REF_DIRS = ("das-dennis", "energy")


@dataclass
class MOOResult:
    """Final population of a run of NSGA-III.

    Attributes
    ----------
    X : (p, n_var) array
        Decision vectors of the final population.
    F : (p, n_obj) array
        Their objective values (minimised).
    n_evals : int
        Number of objective evaluations (individuals) spent.
    seconds : float
        Wall-clock time of the evolutionary search.
    backend : str
        ``"pymoo"`` or ``"geatpy"``.
    """

    X: Array
    F: Array
    n_evals: int
    seconds: float
    backend: str


def geatpy_available() -> bool:
    """True when geatpy (package ``geatpy-rs``) can be imported."""
    try:
        import geatpy  # noqa: F401
    except Exception:  # ImportError, or a broken build raising at import
        return False
    return True


def non_dominated(F: Array) -> NDArray[np.int64]:
    """Indices of the rows of ``F`` that no other row Pareto-dominates (minimisation).

    Row ``a`` dominates row ``b`` when ``a <= b`` in every objective and ``a < b``
    in at least one.  Of exactly equal rows only the first is kept.  For two
    objectives this is the sweep of Kung et al. after a lexicographic sort
    (``O(p log p)``); for more objectives a pairwise check.
    """
    F = np.asarray(F, dtype=float)
    if F.ndim != 2:
        raise ValueError(f"F must be 2-D, got shape {F.shape}")
    if not np.all(np.isfinite(F)):
        raise FloatingPointError("non-finite objective value in the population")
    p, m = F.shape
    if p == 0:
        return np.empty(0, dtype=np.int64)
    if m == 2:
        order = np.lexsort((F[:, 1], F[:, 0]))  # by f1, ties by f2
        keep = []
        best_f2 = np.inf
        for i in order:
            if F[i, 1] < best_f2:
                keep.append(i)
                best_f2 = F[i, 1]
        return np.sort(np.asarray(keep, dtype=np.int64))
    keep = []
    for i in range(p):
        le = np.all(F <= F[i], axis=1)
        lt = np.any(F < F[i], axis=1)
        dominated = np.any(le & lt)
        duplicate_before = np.any(np.all(F[:i] == F[i], axis=1))
        if not dominated and not duplicate_before:
            keep.append(i)
    return np.asarray(keep, dtype=np.int64)


def reference_directions(kind: str, n_obj: int, n_points: int, seed: int) -> Array:
    """NSGA-III reference directions on the unit simplex (pymoo's factories).

    ``das-dennis``: the structured grid of Das and Dennis with ``n_points`` points
    for two objectives (more objectives: the largest grid not exceeding
    ``n_points``); ``energy``: Riesz s-energy points (Blank et al. 2021).
    """
    from pymoo.util.ref_dirs import get_reference_directions

    if n_points < 2:
        raise ConfigError(f"MOSPL needs pop_size >= 2 (one reference direction each), got {n_points}")
    if kind == "das-dennis":
        if n_obj == 2:
            return np.asarray(get_reference_directions("das-dennis", 2, n_partitions=n_points - 1))
        parts = 1
        from math import comb

        while comb(parts + 1 + n_obj - 1, n_obj - 1) <= n_points:
            parts += 1
        return np.asarray(get_reference_directions("das-dennis", n_obj, n_partitions=parts))
    if kind == "energy":
        return np.asarray(get_reference_directions("energy", n_obj, n_points, seed=seed))
    raise ConfigError(f"unknown MOSPL ref_dirs {kind!r}; valid: {', '.join(REF_DIRS)}")


def _check_box(xl: Array, xu: Array, init: Array | None, pop_size: int) -> tuple[Array, Array]:
    xl = np.asarray(xl, dtype=float)
    xu = np.asarray(xu, dtype=float)
    if xl.shape != xu.shape or xl.ndim != 1:
        raise ValueError("xl and xu must be 1-D arrays of the same length")
    if np.any(xu < xl) or not (np.all(np.isfinite(xl)) and np.all(np.isfinite(xu))):
        raise ValueError("the search box must be finite with xl <= xu")
    if init is not None and (init.shape != (pop_size, xl.size)):
        raise ValueError(f"initial population must have shape {(pop_size, xl.size)}, got {init.shape}")
    return xl, xu


def nsga3_pymoo(
    evaluate: Evaluate,
    xl: Array,
    xu: Array,
    n_obj: int,
    pop_size: int,
    n_gen: int,
    seed: int,
    init: Array | None = None,
    ref_dirs: str = "das-dennis",
) -> MOOResult:
    """NSGA-III (Deb and Jain 2014) with pymoo's SBX crossover and polynomial mutation.

    ``init`` (``(pop_size, n_var)``) replaces pymoo's uniform random initial
    population.  pymoo draws all random numbers from ``numpy.random.default_rng(seed)``,
    so a run is reproducible for a fixed seed.
    """
    from pymoo.algorithms.moo.nsga3 import NSGA3
    from pymoo.core.problem import Problem
    from pymoo.optimize import minimize

    xl, xu = _check_box(xl, xu, init, pop_size)
    counter = {"n": 0}

    class _Problem(Problem):
        def _evaluate(self, x, out, *args, **kwargs):  # noqa: ANN001 - pymoo's signature
            counter["n"] += x.shape[0]
            out["F"] = evaluate(np.asarray(x, dtype=float))

    problem = _Problem(n_var=xl.size, n_obj=n_obj, xl=xl, xu=xu)
    dirs = reference_directions(ref_dirs, n_obj, pop_size, seed)
    kwargs = {} if init is None else {"sampling": np.array(init, dtype=float)}
    algorithm = NSGA3(ref_dirs=dirs, pop_size=max(pop_size, len(dirs)), **kwargs)
    t0 = time.perf_counter()
    res = minimize(problem, algorithm, ("n_gen", int(n_gen)), seed=int(seed), verbose=False)
    seconds = time.perf_counter() - t0
    pop = res.pop
    return MOOResult(
        X=np.asarray(pop.get("X"), dtype=float),
        F=np.asarray(pop.get("F"), dtype=float),
        n_evals=counter["n"],
        seconds=seconds,
        backend="pymoo",
    )


def nsga3_geatpy(
    evaluate: Evaluate,
    xl: Array,
    xu: Array,
    n_obj: int,
    pop_size: int,
    n_gen: int,
    seed: int,
    init: Array | None = None,
    ref_dirs: str = "das-dennis",
) -> MOOResult:
    """NSGA-III of geatpy (``moea_NSGA3_templet``), the toolbox of the GAGA paper (appendix D.2).

    Uses the ``geatpy`` module of the ``geatpy-rs`` package (geatpy 2.7 API with a
    Rust core; abi3 wheel, installs on Python >= 3.11).  The template's own operators:
    SBX crossover (probability 1, ``n = 20``), polynomial mutation (``Pm = 1/n_var``,
    ``DisI = 20``), uniform random mating selection, no duplicate elimination, and
    geatpy's uniform reference points (``crtup``; for two objectives exactly
    ``pop_size`` of them; ``ref_dirs`` is ignored, and MOSPL accepts only
    ``das-dennis`` with this back-end).

    Budget: ``MAXGEN = n_gen`` counts the initial population as generation 0, so the
    run evaluates ``n_gen * pop_size`` individuals, like pymoo's ``("n_gen", n_gen)``.

    Seeding: geatpy draws every random number (initial population, selection,
    crossover, mutation; the Rust core seeds itself from numpy's legacy global
    generator) from ``numpy.random``'s global state, which ``ea.optimize(seed=...)``
    sets with ``np.random.seed``.  The global state is saved before the run and
    restored afterwards, so the caller's numpy RNG is untouched.

    ``init`` (``(pop_size, n_var)``, inside the box) is passed as geatpy's "prophet"
    population and replaces the uniform random initial population.
    """
    if not geatpy_available():
        raise ConfigError("method.backend=geatpy but geatpy cannot be imported (pip install geatpy-rs)")
    import geatpy as ea

    xl, xu = _check_box(xl, xu, init, pop_size)
    counter = {"n": 0}
    dim = xl.size

    class _Problem(ea.Problem):
        def __init__(self) -> None:
            ea.Problem.__init__(
                self, "mospl", n_obj, [1] * n_obj, dim, [0] * dim, list(xl), list(xu), [1] * dim, [1] * dim
            )

        def evalVars(self, Vars):  # noqa: N802, N803, ANN001 - geatpy's names
            counter["n"] += Vars.shape[0]
            return np.asarray(evaluate(np.asarray(Vars, dtype=float)), dtype=float)

    problem = _Problem()
    population = ea.Population(Encoding="RI", NIND=int(pop_size))
    algorithm = ea.moea_NSGA3_templet(problem, population, MAXGEN=int(n_gen), logTras=0, verbose=False, drawing=0)
    prophet = None if init is None else np.array(init, dtype=float)
    state = np.random.get_state()  # noqa: NPY002 - geatpy draws from the legacy global RNG
    t0 = time.perf_counter()
    try:
        res = ea.optimize(
            algorithm,
            seed=int(seed),
            prophet=prophet,
            verbose=False,
            drawing=0,
            outputMsg=False,
            drawLog=False,
            saveFlag=False,
        )
    finally:
        np.random.set_state(state)  # noqa: NPY002
    seconds = time.perf_counter() - t0
    last = res["lastPop"]
    return MOOResult(
        X=np.array(last.Phen, dtype=float),
        F=np.array(last.ObjV, dtype=float),
        n_evals=counter["n"],
        seconds=seconds,
        backend="geatpy",
    )


def run_nsga3(backend: str, *args: object, **kwargs: object) -> MOOResult:
    """Dispatch to :func:`nsga3_pymoo` or :func:`nsga3_geatpy` by name."""
    if backend == "pymoo":
        return nsga3_pymoo(*args, **kwargs)  # type: ignore[arg-type]
    if backend == "geatpy":
        return nsga3_geatpy(*args, **kwargs)  # type: ignore[arg-type]
    raise ConfigError(f"unknown MOSPL backend {backend!r}; valid: {', '.join(BACKENDS)}")
