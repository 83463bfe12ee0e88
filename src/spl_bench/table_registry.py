"""The papers' tables this benchmark reproduces, and the protocol variants their cells run under.

The one home of these names: the sweep (:mod:`spl_bench.runner.reproduce` and its modules) and
the report (:mod:`spl_bench.report.compare` and its modules) both read them from here.  A
top-level module: it imports no layer of the package, so every layer may import it.

* :data:`TABLES`: table key -> (experiment config, paper, the paper's table number);
* :data:`PAPER_TABLES` / :data:`PAPER_FILES`: the papers' transcribed tables under ``results/paper/``;
* :data:`PROTOCOL_VARIANTS`: the overrides that run a table's cells under another protocol (the
  rows kept apart in ``results/rows/<experiment>@<variant>``); :data:`REPORTED_VARIANTS`: those the
  comparison tables show beside the default protocol;
* :data:`EXTRA_SWEEPS`, :data:`OLD_RULES` (GAGA's :data:`STEP_CANDIDATE_TABLES` /
  :data:`STEP_CANDIDATES`, MOSPL's :data:`MOSPL_OLD_TABLES` / :data:`MOSPL_OLD_RULE`): cells
  and overrides beyond a table's own sweep config.
"""

from __future__ import annotations

#: table key -> (experiment config, paper, paper table number)
TABLES: dict[str, tuple[str, str, int]] = {
    **{str(t): (f"gaga_table{t}", "gaga", t) for t in (2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)},
    "op2": ("outlier_path_table2", "outlier_path", 2),
    "op3": ("outlier_path_table3", "outlier_path", 3),
}
#: the papers, as a table's title names them
PAPER_TITLES = {"gaga": "GAGA (Qu et al., NeurIPS 2022)", "outlier_path": "Outlier-Path (Suzumura et al., ICML 2014)",
                "dspl": "DSPL"}  # fmt: skip
#: what each paper's table header says beyond the common legend
PAPER_NOTES = {
    "gaga": "*paper order holds*: our means keep the GAGA paper's ordering GAGA, MOSPL, ACS, Original. ",
    "outlier_path": "Rows D1-D10 are the paper's data sets (named beside); its metric is the test error "
    "(1 − our accuracy). ",
}
#: runs per cell in the papers (Outlier-Path: 10 repetitions; GAGA and DSPL: 20)
PAPER_RUNS = {"gaga": 20, "outlier_path": 10, "dspl": 20}

#: the papers (as named in the ``paper`` column) and the tables transcribed from each
PAPER_TABLES: dict[str, tuple[int, ...]] = {
    "gaga": (2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16),
    "outlier_path": (2, 3),
    "dspl": (2,),
}
#: (paper, table) -> CSV file name inside ``results/paper`` (:func:`spl_bench.report.paper.paper_dir`)
PAPER_FILES: dict[tuple[str, int], str] = {
    (paper, table): f"{paper}_table{table}.csv" for paper, tables in PAPER_TABLES.items() for table in tables
}

#: extra sweeps of a table beyond its config's sweeper (the C-SVM column of the Outlier-Path tables)
EXTRA_SWEEPS: dict[str, list[dict[str, list[str]]]] = {
    "op2": [{"method": ["csvm"], "method.variant": ["-"]}],
    "op3": [{"method": ["csvm"], "method.variant": ["-"]}],
}

#: protocol variants of a table, by task: the overrides that turn our protocol into the authors'
PROTOCOL_VARIANTS: dict[str, dict[str, tuple[str, ...]]] = {
    # the GAGA authors' noise (docs/protocol.md, Fidelity): classification labels flipped near a
    # linear SVM's hyperplane, rate x pool size rows, before the split (test labels noisy);
    # regression: N(0.2, 3^2) added to the features and target of the training rows
    "authors": {
        "classification": ("noise=near_boundary_flip", "noise.options.count=pool", "protocol.noise_scope=all"),
        "regression": ("noise=gaussian_shift",),
    },
    # the GAGA authors' whole protocol (docs/protocol.md, "The authors' protocol"): their noise as
    # above, their 20 shuffled KFold folds (random_state=40), features standardised and the target
    # min-max scaled on all rows, lasso without intercept (ours has none either), the age chosen on
    # the test fold, and their label coding of mfeat-pixel (first 500 rows in file order -> -1).
    # A "data=<name>" key adds overrides for that data set only.
    "authors_protocol": {
        "classification": ("protocol=authors", "noise=near_boundary_flip", "noise.options.count=pool",
                           "protocol.noise_scope=all"),
        "regression": ("protocol=authors", "noise=gaussian_shift"),
        "data=mfeat_pixel": ("~data.binarize", "+data.binarize={kind:first_rows,n:500}"),
    },
    # the clean-label reference of a table row: its plain model (method=original) fitted on the
    # row's splits with no corrupted training rows; one cell per row (CLEAN_VARIANT below)
    "clean": {
        "classification": ("noise.rate=0",),
        "regression": ("noise.rate=0",),
    },
    # the equal-candidates control (issue 65; docs/protocol.md, "What each selection rule measures"):
    # GAGA and ACS each offer their solutions at the same ages, the paper's ACS grid, so that a
    # difference of selected values measures the solutions, not how many candidates each offers;
    # only the methods whose solutions are indexed by age (EQUAL_CANDIDATE_METHODS) have such cells
    "equal_candidates": {
        "classification": ("protocol.candidates=shared_grid",),
        "regression": ("protocol.candidates=shared_grid",),
    },
}
#: the variant whose cells are one plain-model run per table row instead of every method's cell;
#: the report reads its rows as each row's clean-label reference, not as a column of its own
CLEAN_VARIANT = "clean"
#: the equal-candidates variant and the methods it applies to
EQUAL_VARIANT = "equal_candidates"
EQUAL_CANDIDATE_METHODS = ("gaga", "acs")
#: tables whose sweeps write the equal-candidates rows of a GAGA or ACS cell from the fit of its own
#: cell (one fit, two selections: :func:`spl_bench.runner.cells.companion_cells`; issue 65's tables)
EQUAL_CANDIDATE_TABLES = ("2", "3")
#: the protocol variants the comparison tables show, each in sections of its own
REPORTED_VARIANTS = ("authors", "authors_protocol", "equal_candidates")
#: variants whose regression cells the paper reports as RMSE (the authors' Evaluation.RMSE): the rows
#: hold the MSE the candidates were selected by, and the report takes the square root run by run
RMSE_VARIANTS = ("authors_protocol",)

#: the cells whose committed GAGA rows were made under the step-point candidates and the RK45 route (the
#: rule before 2026-11-29, STEP_CANDIDATES below), keyed by :func:`step_rule_key`: ``"<table>"`` for a
#: table's own cells (its equal-candidates cells follow them: their rows come from the same fits) and
#: ``"<table>@<variant>"`` for the cells of another protocol variant, whose reruns are separate sweeps.
#: A key leaves this set once every GAGA cell under it has been rerun under the route-independent
#: candidates (issue 62; docs/gaga.md, "Routes and candidates").
STEP_CANDIDATE_TABLES = frozenset(
    {*TABLES, *(f"{t}@{v}" for t in TABLES for v in PROTOCOL_VARIANTS if v not in (EQUAL_VARIANT, CLEAN_VARIANT))}
) - {"2", "3", "10", "14", "7", "9", "13", "5", "12", "16", "8"}  # GAGA rerun at 20 seeds (11-29; 5, 12, 16, 8: 11-30)


def step_rule_key(table: str | None, variant: str = "") -> str:
    """The key of :data:`STEP_CANDIDATE_TABLES` that decides the candidate rule of a GAGA cell of
    ``table`` under protocol ``variant``: the table itself for its own and its equal-candidates cells
    (and under the clean variant, which has no GAGA cell), ``"<table>@<variant>"`` for another variant's."""
    return str(table) if variant in ("", EQUAL_VARIANT, CLEAN_VARIANT) else f"{table}@{variant}"


#: the overrides that give a GAGA cell the rule its committed rows were made under; a table's
#: equal-candidates cells follow its own cells (their rows come from the same fits, the shared ages by
#: the dense output), so they keep these overrides while the table is in STEP_CANDIDATE_TABLES
STEP_CANDIDATES = ("method.candidates=steps", "method.ode_method=auto")

#: the cells whose committed MOSPL rows were made under its rule before 2026-11-29 (MOSPL_OLD_RULE: the
#: search box from the model's own solver at v = 1, libsvm for the SVM, and a linear kernel's decision
#: values through the n x n kernel matrix), keyed as :data:`STEP_CANDIDATE_TABLES`.  The search compares
#: objective values exactly, so either change gives another Pareto set: a key leaves once its MOSPL cells
#: are rerun under the current rule (issue 62; docs/mospl.md, "The full fit and the kernel product").
MOSPL_OLD_TABLES = frozenset(
    {*TABLES, *(f"{t}@{v}" for t in TABLES for v in PROTOCOL_VARIANTS if v not in (EQUAL_VARIANT, CLEAN_VARIANT))}
) - {"15", "11", "12", "16"}  # rerun under the current rule at 20 seeds (2026-11-29)
#: the overrides that give a MOSPL cell the rule its committed rows were made under
MOSPL_OLD_RULE = ("method.full_fit=model", "method.kernel_product=matrix")

#: per method, the rule its committed rows were made under where its current one differs: (the keys of
#: :func:`step_rule_key` still on it, the overrides that give a cell that rule).  A cell under such a key
#: composes with the overrides; ``scripts/reproduce_tables.py --current-rule`` reruns it under the
#: current rule beside the committed rows, under a hash of its own.
OLD_RULES: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {
    "gaga": (STEP_CANDIDATE_TABLES, STEP_CANDIDATES),
    "mospl": (MOSPL_OLD_TABLES, MOSPL_OLD_RULE),
}
