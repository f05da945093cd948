"""No import cycles between the project's packages, function-level imports included.

A function-level import hides a cycle from Python (the module loads) but not from the design: two packages
that import each other are one package in two folders. The walk reads every module's source (ast, no
import), takes every `import`/`from ... import` at any depth (functions, `if TYPE_CHECKING:` blocks), and
groups modules into the nodes below; the graph of nodes must have no cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HOUSES = ("tvm_ext", "backends")
"""Top-level packages that are houses of packages: each of their sub-packages and top modules is a node
of its own (`tvm_ext.codegen`, `tvm_ext.layers`, `backends.cortex_m`); their `__init__.py` is the node
named after the house. Every other top-level package is one node (`packager`, `emulator`)."""


def project_packages() -> list[str]:
    """The repository's top-level Python packages (tests and scripts are not packages of the product)."""
    return sorted(path.parent.name for path in REPO.glob("*/__init__.py") if path.parent.name != "tests")


def module_files() -> dict[str, Path]:
    """Every module of the project's packages by its dotted name (a package by its name, not `.__init__`)."""
    modules = {}
    for package in project_packages():
        for path in sorted((REPO / package).rglob("*.py")):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def imported_modules(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules `name` (at `path`) imports anywhere in its source, relative imports resolved;
    `from package import module` counts as the module only, not as the package."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            submodules = {f"{base}.{alias.name}" for alias in node.names} & known
            found.update(submodules)
            if len(submodules) < len(node.names):  # a name defined in `base` itself
                found.add(base)
    return {module for module in found if module in known}


def node_of(module: str) -> str:
    """The node of the import graph that `module` belongs to (see HOUSES)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] in HOUSES else parts[0]


def package_graph() -> dict[str, set[str]]:
    """Node -> the other nodes its modules import."""
    modules = module_files()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges = graph.setdefault(node_of(name), set())
        edges.update(node_of(module) for module in imported_modules(name, path, set(modules)))
    for node, edges in graph.items():
        edges.discard(node)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def test_the_walk_sees_function_level_imports_and_cycles(tmp_path: Path) -> None:
    """The walk itself: an import inside a function is an edge, a relative one too, and two nodes importing each
    other a cycle."""
    module = tmp_path / "kernel_c.py"
    module.write_text("def f():\n    from packager import selftest\n    from .. import layers\n")
    known = {"packager", "packager.selftest", "tvm_ext.layers", "tvm_ext.codegen"}
    assert imported_modules("tvm_ext.codegen.kernel_c", module, known) == {"packager.selftest", "tvm_ext.layers"}
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert node_of("tvm_ext.codegen.codegen_c") == "tvm_ext.codegen"
    assert node_of("packager.selftest") == "packager"


KNOWN_CYCLE = ["backends.backend", "backends.cortex_m", "emulator", "packager", "tvm_ext.schedule", "tvm_ext.tir"]
"""The one cycle left (issue 27), to be broken by the backend seam's runner and bundle-files interface: the
packager builds and runs the Cortex-M self-test through emulator/ (packager.build -> emulator.selftest,
emulator.profile), which reads the bundle's Cortex-M file names from backends/cortex_m/bundle_files/support.py,
which writes its files with the packager's text tools (c_text, make_text, cmake_text, files, template_files,
selftest.PASS_LINE); backends.backend names emulator.boards' CortexMTarget. tvm_ext.schedule and tvm_ext.tir
are in it only through backends.backend (their MacSchedules and HelperLibrary). It may only shrink: the test
fails when it changes, so whoever breaks it deletes it here."""


def test_no_import_cycle_between_packages() -> None:
    graph = package_graph()
    assert "tvm_ext.compile" in graph and "packager" in graph
    found = [cycle for cycle in cycles(graph) if cycle != KNOWN_CYCLE]
    if found:
        pytest.fail("import cycles between packages: " + "; ".join(" <-> ".join(c) for c in found))
    assert KNOWN_CYCLE in cycles(graph), "the known cycle is gone or smaller: update KNOWN_CYCLE"


def test_every_emulator_module_imports_first() -> None:
    """Each module of `emulator` (in KNOWN_CYCLE with the backends' runners, and loading without TVM) imports
    in a fresh interpreter before any other: inside the cycle a `from module import name` of a module that is
    still loading fails (emulator.profile and emulator.selftest imported first once did, and so did
    tests/packager/test_layer_report.py run alone)."""
    import subprocess
    import sys

    names = [name for name in module_files() if name == "emulator" or name.startswith("emulator.")]
    failed = [name for name in names
              if subprocess.run([sys.executable, "-c", f"import {name}"], cwd=REPO, capture_output=True).returncode]
    assert names and not failed, f"these modules fail when imported first: {failed}"
