"""memory_planner, packager, emulator and the backends' data (their `Backend` objects, C helpers and bundle files;
not their schedules) stay free of TVM: importing every module of them loads neither TVM nor tvm_ext (the plan
they read, memory_planner.plan, is plain data). memory_planner also names none of them in any import statement,
at any depth: an import inside a function or a TYPE_CHECKING block escapes the runtime check."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys

from conftest import REPO


def modules_of(package: str) -> list[str]:
    path = REPO / package.replace(".", "/")
    return [package] + [f"{package}.{info.name}" for info in pkgutil.iter_modules([str(path)])]


MODULES = [*modules_of("memory_planner"), *modules_of("memory_planner.strategies"),
           *modules_of("packager"), *modules_of("emulator"), "backends", "backends.backend", "backends.generic_c",
           "backends.cortex_m", *modules_of("backends.cortex_m.helpers"), *modules_of("backends.cortex_m.bundle_files")]


def test_planner_packager_and_emulator_load_no_tvm_and_no_tvm_ext() -> None:
    code = ("import sys\n" + "".join(f"import {m}\n" for m in MODULES)
            + "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('tvm', 'tvm_ext'))\n"
            + "assert not loaded, loaded\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert len(MODULES) > 20
    assert {f"emulator.{m}" for m in ("boards", "qemu", "selftest", "sizes", "stack", "tools")} <= set(MODULES)


FORBIDDEN_TOP_PACKAGES = frozenset({"tvm", "tvm_ffi", "tvm_ext"})


def forbidden_imports(source: str, filename: str) -> list[str]:
    """`line: module` for each import statement in `source`, at any depth, naming a FORBIDDEN_TOP_PACKAGES module."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
            names = [node.module]
        else:
            continue
        found += [f"{node.lineno}: {name}" for name in names if name.split(".")[0] in FORBIDDEN_TOP_PACKAGES]
    return found


def test_forbidden_imports_sees_function_level_and_type_checking_imports() -> None:
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tvm_ext.plan import macs\n"
              "def f():\n    import tvm.relax as r\n    from tvm_ffi import x\n    import tvmx, memory_planner\n")
    assert forbidden_imports(source, "<test>") == ["3: tvm_ext.plan", "5: tvm.relax", "6: tvm_ffi"]


def test_memory_planner_imports_no_tvm_nor_tvm_ext_statically() -> None:
    files = sorted((REPO / "memory_planner").rglob("*.py"))
    assert {"plan.py", "planner.py", "exact.py"} <= {f.name for f in files}
    found = {str(f.relative_to(REPO)): hits for f in files
             if (hits := forbidden_imports(f.read_text(encoding="utf-8"), str(f)))}
    assert not found, found
