"""memory_planner stays pure Python: importing all of it loads no TVM."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

MODULES = [
    "memory_planner",
    "memory_planner.check",
    "memory_planner.from_plan",
    "memory_planner.order",
    "memory_planner.picture",
    "memory_planner.strategies",
]


def test_importing_memory_planner_does_not_import_tvm() -> None:
    code = "import sys\n" + "".join(f"import {m}\n" for m in MODULES) + "assert 'tvm' not in sys.modules, 'tvm'\n"
    repo = Path(__file__).resolve().parent.parent
    subprocess.run([sys.executable, "-c", code], cwd=repo, check=True)
