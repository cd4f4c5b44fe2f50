"""The shape of the gpusim package: its import graph has no cycles and every part imports only the parts below it.

The graph is read from the source with ``ast``: every ``import`` / ``from ... import``, at module level or inside
a function (a lazy import that goes back up is still a cycle).  A part is a subpackage or a top-level module of
``gpusim`` (``gpusim.triton``, ``gpusim.trace`` ...).  Layers, bottom to top (``MAY_IMPORT`` says it per part):

    base (errors, chip_specs, config, _host, progress, occupancy)  <-  trace  <-  front ends (cuda, triton), timing  <-  metrics
    <-  viz, api  <-  kernelfile  <-  sweep_spec <- sweeper <- side_by_side, bench, explain  <-  tuner  <-  validate  <-  scenario_catalog <- scenario  <-  cli

``compilers`` (the real compilers in the loop) stands on the base alone (errors; Triton and numba-cuda are
optional and lazily imported); the front ends, ``api``, ``validate`` and ``cli`` may use it.

Every part is held to this (``CHECKED``).  ``cli`` is the entry point over everything, ``validate`` included.
``offenders(part)`` lists what a part does wrong; ``offenders("gpusim")`` gives the cycles of the whole package.
"""
from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = "gpusim"

BASE = {"gpusim.errors", "gpusim.chip_specs", "gpusim.config", "gpusim._host", "gpusim.progress", "gpusim.occupancy"}
FRONT_ENDS = {"gpusim.cuda", "gpusim.triton"}
COMPILERS = {"gpusim.compilers"}
MAY_IMPORT: dict[str, set[str]] = {
    **{p: set() for p in BASE},
    "gpusim.config": {"gpusim.errors", "gpusim.chip_specs"},     # its ConfigError is a GpusimError; the sections
    "gpusim.occupancy": {"gpusim.config", "gpusim.errors"},      # the occupancy calculator: arithmetic on a config
    "gpusim.compilers": {"gpusim.errors", "gpusim.config", "gpusim._host"},   # the real compilers in the loop
    "gpusim.trace": BASE,
    "gpusim.cuda": BASE | COMPILERS | {"gpusim.trace"},
    "gpusim.triton": BASE | COMPILERS | {"gpusim.trace"},
    "gpusim.timing": BASE | {"gpusim.trace"},
    "gpusim.metrics": BASE | {"gpusim.trace", "gpusim.timing"},
    "gpusim.viz": BASE | {"gpusim.trace", "gpusim.timing", "gpusim.metrics"},
    "gpusim.api": BASE | FRONT_ENDS | COMPILERS | {"gpusim.trace", "gpusim.timing", "gpusim.metrics", "gpusim.viz"},
    # the user's kernel file (import by path, launch() parameters): used by the command line, sweeps, tuning
    "gpusim.kernelfile": BASE | FRONT_ENDS | COMPILERS | {"gpusim.trace", "gpusim.timing", "gpusim.metrics", "gpusim.api"},
    # sweeps and tuning: many simulations of a kernel file, tables and plots of them; a sweep's spec (the TOML read
    # into axes, launch() parameters checked against the kernel file)
    "gpusim.sweep_spec": BASE | FRONT_ENDS | COMPILERS | {"gpusim.trace", "gpusim.timing", "gpusim.metrics", "gpusim.api",
                                              "gpusim.kernelfile"},
    "gpusim.sweeper": BASE | FRONT_ENDS | COMPILERS | {"gpusim.trace", "gpusim.timing", "gpusim.metrics", "gpusim.viz",
                                           "gpusim.api", "gpusim.kernelfile", "gpusim.sweep_spec"},
    # gpusim run FILE --gpu a,b: one kernel file on several presets, side by side
    "gpusim.side_by_side": BASE | FRONT_ENDS | COMPILERS | {"gpusim.trace", "gpusim.timing", "gpusim.metrics",
                                                "gpusim.api", "gpusim.kernelfile", "gpusim.sweeper"},
    "gpusim.tuner": BASE | FRONT_ENDS | COMPILERS | {"gpusim.trace", "gpusim.timing", "gpusim.metrics", "gpusim.viz",
                                         "gpusim.api", "gpusim.kernelfile", "gpusim.sweeper"},
    # the `gpusim explain` command: a kernel file's launches re-simulated on idealized chips (Report.explain)
    "gpusim.explain": BASE | FRONT_ENDS | COMPILERS | {"gpusim.trace", "gpusim.timing", "gpusim.metrics", "gpusim.viz",
                                           "gpusim.api", "gpusim.kernelfile"},
    # the `gpusim scenario` command: the lecture scenarios, suite cases simulated and held against the records
    "gpusim.scenario": BASE | {"gpusim.trace", "gpusim.timing", "gpusim.metrics", "gpusim.viz", "gpusim.api",
                               "gpusim.validate", "gpusim.scenario_catalog"},
    # the scenarios as data (lessons, variants: suite cases, headlines)
    "gpusim.scenario_catalog": BASE | {"gpusim.validate"},
    # a Triton tutorial's benchmark section run with triton aliased to gpusim.triton
    "gpusim.bench": BASE | FRONT_ENDS | COMPILERS | {"gpusim.kernelfile"},
    # validate holds everything below cli against the records (tune_check: the tuner's picks vs the H100's)
    "gpusim.validate": BASE | FRONT_ENDS | COMPILERS | {"gpusim.trace", "gpusim.timing", "gpusim.metrics", "gpusim.viz",
                                            "gpusim.api", "gpusim.kernelfile", "gpusim.sweeper", "gpusim.tuner"},
    "gpusim.cli": BASE | FRONT_ENDS | COMPILERS | {"gpusim.trace", "gpusim.timing", "gpusim.metrics", "gpusim.viz", "gpusim.api",
                                       "gpusim.validate", "gpusim.kernelfile", "gpusim.sweeper", "gpusim.tuner",
                                       "gpusim.bench", "gpusim.explain", "gpusim.scenario", "gpusim.side_by_side",
                                       "gpusim.sweep_spec"},
    # the package's root also installs the timing engine, lazily, as trace.benchmarker (for autotune, do_bench)
    "gpusim": {"gpusim.api", "gpusim.config", "gpusim.errors", "gpusim.progress", "gpusim.trace", "gpusim.sweeper",
               "gpusim.tuner"},
}
CHECKED = sorted(MAY_IMPORT)


def modules(root: pathlib.Path = ROOT, package: str = PACKAGE) -> dict[str, pathlib.Path]:
    """Dotted module name -> source file, for every module of ``package`` (a package is its ``__init__``)."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports_of(source: str, name: str, is_package: bool, known: set[str], package: str = PACKAGE) -> set[str]:
    """The modules of ``package`` that module ``name`` imports anywhere in ``source`` (function bodies too).

    ``from X import y`` counts as an import of ``X.y`` when that is a module, else of ``X``."""
    here = name if is_package else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")[:len(here.split(".")) - (node.level - 1)]
                base = ".".join(base + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for a in node.names:
                out.add(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base)
    return {m for m in out if m == package or m.startswith(package + ".")}


def import_graph(root: pathlib.Path = ROOT, package: str = PACKAGE) -> dict[str, set[str]]:
    mods = modules(root, package)
    known = set(mods)
    return {name: imports_of(path.read_text(), name, path.name == "__init__.py", known, package) - {name}
            for name, path in mods.items()}


def within(module: str, part: str) -> bool:
    return module == part or module.startswith(part + ".")


def part_of(module: str, package: str = PACKAGE) -> str:
    """``gpusim.triton._core`` -> ``gpusim.triton``; ``gpusim`` itself is its own part."""
    return ".".join(module.split(".")[:2]) if module != package else package


def cycles(graph: dict[str, set[str]], part: str | None = None) -> list[list[str]]:
    """The import cycles (strongly connected components of more than one module) among the modules of ``part``
    (all of the graph if None), each sorted."""
    nodes = sorted(m for m in graph if part is None or within(m, part))
    inside = set(nodes)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v):                                    # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ()) & inside):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in nodes:
        if v not in index:
            visit(v)
    return sorted(found)


def upward_imports(graph: dict[str, set[str]], part: str) -> list[tuple[str, str]]:
    """(module, imported module) for each import from ``part`` into a part it may not import."""
    allowed = MAY_IMPORT[part] | {part}
    return sorted((m, t) for m, ts in graph.items() if within(m, part) and part_of(m) == part
                  for t in ts if part_of(t) not in allowed)


def offenders(part: str, graph: dict[str, set[str]] | None = None) -> dict:
    graph = import_graph() if graph is None else graph
    return {"cycles": cycles(graph, part), "upward": upward_imports(graph, part)}


@pytest.fixture(scope="module")
def graph():
    return import_graph()


@pytest.mark.parametrize("part", CHECKED)
def test_no_import_cycle(graph, part):
    assert cycles(graph, part) == []


@pytest.mark.parametrize("part", CHECKED)
def test_imports_only_downwards(graph, part):
    assert upward_imports(graph, part) == []


def test_every_part_has_a_layer(graph):
    assert {part_of(m) for m in graph} <= set(MAY_IMPORT)


def test_the_checks_see_lazy_imports_and_cycles():
    src = "from . import b\n\ndef f():\n    from ..timing import engine\n    import gpusim.viz\n"
    known = {"gpusim", "gpusim.x", "gpusim.x.a", "gpusim.x.b", "gpusim.timing", "gpusim.timing.engine", "gpusim.viz"}
    assert imports_of(src, "gpusim.x.a", False, known) == {"gpusim.x.b", "gpusim.timing.engine", "gpusim.viz"}
    g = {"gpusim.triton.a": {"gpusim.triton.b"}, "gpusim.triton.b": {"gpusim.triton.c"},
         "gpusim.triton.c": {"gpusim.triton.a", "gpusim.timing.engine"}, "gpusim.triton": {"gpusim.triton.a"}}
    assert cycles(g, "gpusim.triton") == [["gpusim.triton.a", "gpusim.triton.b", "gpusim.triton.c"]]
    assert upward_imports(g, "gpusim.triton") == [("gpusim.triton.c", "gpusim.timing.engine")]
