"""Where one model's instructions go on an emulated Cortex-M: instructions per kernel function (not a test).

    python scripts/bench_kernels.py MODEL [--target cortex-m4f]

Compiles MODEL, then for each kernel function of the bundle runs the self-test once more with that
kernel's calls left out of the run function: the difference to the full run is what its calls cost
(instructions under QEMU -icount, not cycles). An estimate: the later kernels then read other data, and
data-dependent code (the requantization's branches, softmax) runs slightly differently; the self-test
verdict of these runs means nothing.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

from emulator.boards import BOARDS
from emulator.qemu import run_qemu
from emulator.selftest import build_selftest_elf


def kernel_calls(run_source: str, model: str) -> dict[str, int]:
    """Kernel function name -> how many calls of it the run function makes (one call per line)."""
    calls: dict[str, int] = {}
    for name in re.findall(rf"^  ({re.escape(model)}_\w+)\(", run_source, flags=re.MULTILINE):
        calls[name] = calls.get(name, 0) + 1
    return calls


def instructions_without(out_dir: Path, model: str, kernel: str | None, board_name: str, scratch: Path) -> int:
    """Instructions of one self-test run of a copy of `out_dir` whose run function skips `kernel`'s calls."""
    copy = scratch / (kernel or "all")
    shutil.copytree(out_dir, copy)
    run_file = copy / f"{model}_model.c"
    if kernel is not None:
        lines = run_file.read_text().splitlines(keepends=True)
        run_file.write_text("".join(line for line in lines if not line.startswith(f"  {kernel}(")))
    result = run_qemu(build_selftest_elf(copy), BOARDS[board_name])
    if result.instructions is None:
        raise RuntimeError(f"{copy}: the self-test printed no instruction count")
    return result.instructions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--target", default="cortex-m4f")
    args = parser.parse_args()
    from tvm_ext.compile import compile

    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        bundle = compile(args.model, args.target, scratch / "bundle", force=True)
        model = bundle.plan.model
        board = json.loads((bundle.out_dir / "manifest.json").read_text())["cortex_m"]["board"]
        calls = kernel_calls((bundle.out_dir / f"{model}_model.c").read_text(), model)
        total = instructions_without(bundle.out_dir, model, None, board, scratch)
        print(f"{model} on {args.target}: {total:,} instructions per inference (QEMU -icount, not cycles)")
        print("| kernel | calls | instructions (estimate) | share |")
        print("|---|---|---|---|")
        for kernel, count in calls.items():
            cost = total - instructions_without(bundle.out_dir, model, kernel, board, scratch)
            print(f"| {kernel} | {count} | {cost:,} | {cost / total:.0%} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
