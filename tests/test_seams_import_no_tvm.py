"""memory_planner, packager, emulator and the backends' data (their `Backend` objects, C helpers and bundle files;
not their schedules) stay free of TVM: importing every module of them loads neither TVM nor tvm_ext (the plan
they read, memory_planner.plan, is plain data)."""

from __future__ import annotations

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
