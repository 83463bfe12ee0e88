"""The package's layers import one way only (issue 20): checked on the source with ``ast``.

Layers, bottom to top::

    (top-level helpers: errors, paths, progress, checks, rowfiles, _registry)
    data  ->  models / sp  ->  gaga  ->  methods  ->  protocol  ->  runner / report

Inside ``gaga`` (issue 41)::

    gaga/core  ->  gaga/glm , gaga/svm  ->  gaga (its top-level modules: api, systems, __init__)

``core`` imports neither ``glm`` nor ``svm``; ``glm`` and ``svm`` import ``core``, never each other;
none of the three imports a top-level ``gaga`` module (``spl_bench.gaga`` itself included: its
``__init__`` imports all three).

Inside ``gaga/core``, the path tracker's modules (issue 61), bottom to top::

    state  ->  equation  ->  record  ->  warm  ->  critical  ->  events  ->  stepping  ->  tracker

each imports only modules before it, and their classes derive from no other class: the tracker's
parts are collaborators on one shared state, each given what it calls in its constructor, not mixins.

Every ``import`` and ``from ... import`` of every module is read, also those inside functions
and under ``if TYPE_CHECKING`` (a deferred import is still a dependency), and relative imports
are resolved against the module's package.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import spl_bench

PACKAGE = Path(spl_bench.__file__).resolve().parent
LAYERS = ("data", "models", "sp", "gaga", "methods", "protocol", "runner", "report")

#: layer -> the layers it must not import
FORBIDDEN: dict[str, set[str]] = {
    "data": {"models", "sp", "gaga", "methods", "protocol", "runner", "report"},
    "models": {"gaga", "methods", "protocol", "runner", "report"},
    "sp": {"gaga", "methods", "protocol", "runner", "report"},
    "gaga": {"methods", "protocol", "runner", "report"},
    "methods": {"protocol", "runner", "report"},
    "protocol": {"runner", "report"},
    "report": {"runner"},
    # the shared helpers at the top of the package sit below every layer
    "": set(LAYERS),
}

#: (importing module, imported module) pairs accepted despite the rules, each with its reason.
#: Empty: every violation found (gaga -> methods.base, report -> runner.cli / runner.results)
#: was fixed by moving code (spl_bench.checks, spl_bench.rowfiles, spl_bench.runner.smoke).
ALLOWED: dict[tuple[str, str], str] = {}


def module_name(path: Path) -> str:
    parts = ("spl_bench", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports (absolute names), at any depth of the file."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join([*base, node.module] if node.module else base)
            else:
                mod = node.module or ""
            out.add(mod)
            # ``from spl_bench import runner`` imports the subpackage runner
            out.update(f"{mod}.{alias.name}" for alias in node.names if alias.name != "*")
    return out


def layer_of(module: str) -> str | None:
    """The layer of a ``spl_bench`` module ('' for the top-level helpers), None outside the package."""
    parts = module.split(".")
    if parts[0] != "spl_bench" or len(parts) == 1:
        return None
    if parts[1] in LAYERS:
        return parts[1]
    # a top-level module (errors, paths, ...); a name imported from the package root that is
    # neither a layer nor a module file (``from spl_bench import __version__``) is no layer
    return "" if (PACKAGE / f"{parts[1]}.py").is_file() else None


def violations() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        src = module_name(path)
        here = layer_of(src)
        if here is None:  # spl_bench/__init__.py: only the version and the docstring
            continue
        reported: list[str] = []
        for mod in sorted(imported_modules(path)):
            if any(mod.startswith(r + ".") for r in reported):  # ``from a.b import c``: a.b said it
                continue
            there = layer_of(mod)
            if there is not None and there in FORBIDDEN.get(here, set()) and (src, mod) not in ALLOWED:
                reported.append(mod)
                found.append(f"{src} imports {mod} ({here or 'top level'} must not import {there})")
    return found


#: the sub-layers of gaga; "" stands for its top-level modules (api, systems, the package itself)
GAGA_SUBLAYERS = ("core", "glm", "svm")

#: gaga sub-layer -> the gaga sub-layers it must not import
GAGA_FORBIDDEN: dict[str, set[str]] = {
    "core": {"glm", "svm", ""},
    "glm": {"svm", ""},
    "svm": {"glm", ""},
}


def gaga_sublayer_of(module: str) -> str | None:
    """The sub-layer of a ``spl_bench.gaga`` module ('' for its top level), None outside gaga."""
    parts = module.split(".")
    if parts[:2] != ["spl_bench", "gaga"]:
        return None
    return parts[2] if len(parts) > 2 and parts[2] in GAGA_SUBLAYERS else ""


def gaga_violations() -> list[str]:
    found = []
    for path in sorted((PACKAGE / "gaga").rglob("*.py")):
        src = module_name(path)
        here = gaga_sublayer_of(src)
        reported: list[str] = []
        for mod in sorted(imported_modules(path)):
            if any(mod.startswith(r + ".") for r in reported):
                continue
            there = gaga_sublayer_of(mod)
            if there is not None and there in GAGA_FORBIDDEN.get(here, set()):
                reported.append(mod)
                found.append(f"{src} imports {mod} (gaga/{here} must not import gaga/{there or 'top level'})")
    return found


def test_every_layer_imports_one_way():
    problems = violations()
    assert not problems, "imports against the layers:\n" + "\n".join(problems)


def test_allow_list_has_no_stale_entries():
    """Every accepted exception is still an import somewhere (else remove it)."""
    for src, mod in ALLOWED:
        path = PACKAGE.joinpath(*src.split(".")[1:])
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        assert mod in imported_modules(path), f"stale allow-list entry {src} -> {mod}"


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("from spl_bench.methods.base import check_finite_X", "spl_bench.methods.base"),
        ("def f():\n    from spl_bench.runner.cli import main", "spl_bench.runner.cli"),
        ("import spl_bench.runner.results", "spl_bench.runner.results"),
        ("from spl_bench import runner", "spl_bench.runner"),
        ("from ..runner import cli", "spl_bench.runner"),
    ],
)
def test_the_scan_sees_every_form_of_import(tmp_path, monkeypatch, code, expected):
    """The checker itself: absolute, deferred, dotted, package-level and relative imports."""
    fake = tmp_path / "spl_bench"
    (fake / "gaga").mkdir(parents=True)
    mod = fake / "gaga" / "x.py"
    mod.write_text(code + "\n")
    monkeypatch.setitem(globals(), "PACKAGE", fake)
    assert expected in imported_modules(mod)
    found = violations()
    assert found and all(v.startswith("spl_bench.gaga.x imports") and "gaga must not import" in v for v in found)


def test_gaga_sublayers_import_one_way():
    problems = gaga_violations()
    assert not problems, "imports against the gaga sub-layers:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    ("where", "code", "expected"),
    [
        ("core", "from spl_bench.gaga.glm.glm_system import GLMSystem", "gaga/core must not import gaga/glm"),
        ("core", "def f():\n    from spl_bench.gaga.svm import kkt", "gaga/core must not import gaga/svm"),
        ("core", "from spl_bench.gaga import age_path", "gaga/core must not import gaga/top level"),
        ("core", "from ..systems import make_system", "gaga/core must not import gaga/top level"),
        ("glm", "from ..svm.inner import WeightedSVMDual", "gaga/glm must not import gaga/svm"),
        ("svm", "import spl_bench.gaga.glm.segment_nb", "gaga/svm must not import gaga/glm"),
    ],
)
def test_the_gaga_scan_sees_every_sublayer(tmp_path, monkeypatch, where, code, expected):
    """The sub-layer checker: absolute, deferred, dotted, package-level and relative imports."""
    fake = tmp_path / "spl_bench"
    (fake / "gaga" / where).mkdir(parents=True)
    (fake / "gaga" / where / "x.py").write_text(code + "\n")
    (fake / "gaga" / "core" / "ok.py").parent.mkdir(exist_ok=True)
    (fake / "gaga" / "core" / "ok.py").write_text("from spl_bench.gaga.core import factors\n")
    monkeypatch.setitem(globals(), "PACKAGE", fake)
    found = gaga_violations()
    assert len(found) == 1 and found[0].startswith(f"spl_bench.gaga.{where}.x imports") and expected in found[0]


#: the path tracker's modules in gaga/core, bottom to top: each imports only those before it
TRACKER_MODULES = ("state", "equation", "record", "warm", "critical", "events", "stepping", "tracker")


def tracker_violations() -> list[str]:
    """Imports of a tracker module from one above it (or itself), and classes derived from another."""
    found = []
    names = [f"spl_bench.gaga.core.{m}" for m in TRACKER_MODULES]
    for i, name in enumerate(names):
        path = PACKAGE / "gaga" / "core" / f"{TRACKER_MODULES[i]}.py"
        if not path.is_file():
            continue
        found.extend(f"{name} imports {mod} (above it)" for mod in sorted(imported_modules(path)) if mod in names[i:])
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ClassDef) and node.bases:
                found.append(f"{name}.{node.name} derives from another class (collaborators, not mixins)")
    return found


def test_the_tracker_is_collaborators_that_import_one_way():
    problems = tracker_violations()
    assert not problems, "the tracker's modules:\n" + "\n".join(problems)


def test_the_tracker_scan_sees_upward_imports_and_mixins(tmp_path, monkeypatch):
    core = tmp_path / "spl_bench" / "gaga" / "core"
    core.mkdir(parents=True)
    (core / "state.py").write_text("class TrackState:\n    pass\n")
    (core / "equation.py").write_text("from spl_bench.gaga.core.state import TrackState\n")
    (core / "warm.py").write_text("def f():\n    from .stepping import Stepper\n")
    (core / "stepping.py").write_text("from .equation import PathEquation\nclass Stepper(PathEquation):\n    pass\n")
    monkeypatch.setitem(globals(), "PACKAGE", tmp_path / "spl_bench")
    assert sorted(tracker_violations()) == [
        "spl_bench.gaga.core.stepping.Stepper derives from another class (collaborators, not mixins)",
        "spl_bench.gaga.core.warm imports spl_bench.gaga.core.stepping (above it)",
    ]


# ----------------------------------------------------------------------------- runner and report (issue 61)
def import_graph(folders: tuple[str, ...]) -> dict[str, set[str]]:
    """Module -> the modules of the package it imports (at any depth), for the modules of ``folders``."""
    paths = [p for f in folders for p in sorted((PACKAGE / f).rglob("*.py"))]
    names = {module_name(p) for p in PACKAGE.rglob("*.py")}
    return {module_name(p): {m for m in imported_modules(p) if m in names and m != module_name(p)} for p in paths}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle among the graph's modules (depth first; each circle once, from its least name)."""
    found: set[tuple[str, ...]] = set()

    def walk(node: str, trail: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt in trail:
                loop = trail[trail.index(nxt):]
                k = loop.index(min(loop))
                found.add(tuple(loop[k:] + loop[:k]))
            elif nxt in graph:
                walk(nxt, [*trail, nxt])

    for start in sorted(graph):
        walk(start, [start])
    return [list(c) for c in sorted(found)]


def test_runner_and_report_have_no_import_circle():
    """No module of runner/ or report/ reaches itself through imports (``cli -> path_cmd -> cli`` was one);
    ``__init__`` modules are left out: a package importing its own modules is no circle of code."""
    graph = import_graph(("runner", "report"))
    graph = {k: {m for m in v if not m.endswith(("runner", "report"))} for k, v in graph.items()
             if not k.endswith(("runner", "report"))}  # fmt: skip
    assert cycles(graph) == []


def test_the_circle_search_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_report_reads_rows_only_through_the_row_store():
    """One reader: no module of report/ opens a row file or an index itself (rowfiles' readers are the store's)."""
    def names(path: Path) -> set[str]:
        tree = ast.parse(path.read_text())
        return {n.id if isinstance(n, ast.Name) else getattr(n, "attr", "") for n in ast.walk(tree)}

    readers = {"read_row_file", "read_row_index"}
    direct = sorted(module_name(p) for p in (PACKAGE / "report").rglob("*.py") if readers & names(p))
    assert direct == ["spl_bench.report.tables"]  # a single row file given on the command line
