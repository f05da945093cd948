"""A Cortex-M bundle run on QEMU on many inputs: its self-test program replaced by one that runs the model on each
embedded input and compares every output byte with the embedded expected one (the bundle's own self-test runs
one input)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from emulator.qemu import QemuResult, run_qemu
from emulator.selftest import build_selftest_elf
from emulator.boards import Board

C_TYPES = {"float32": "float", "int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "int32": "int32_t"}


def c_array(name: str, values: np.ndarray) -> str:
    """A C array of ``values`` whose bytes equal theirs (floats by their bit patterns)."""
    flat = values.reshape(-1)
    if flat.dtype == np.float32:
        words = ", ".join(f"0x{word:08x}u" for word in flat.view(np.uint32))
        return f"static const uint32_t {name}[{flat.size}] = {{{words}}};"
    return f"static const {C_TYPES[flat.dtype.name]} {name}[{flat.size}] = {{{', '.join(str(int(v)) for v in flat)}}};"


def driver_c(model: str, inputs: list[np.ndarray], expected: list[np.ndarray]) -> str:
    """C of a program running ``<model>_run`` (one input, one output) on each input, exit status 1 on any output
    byte that differs from its expected one."""
    lines = ["#include <stdint.h>", "#include <stdio.h>", "#include <string.h>", f'#include "{model}.h"', ""]
    for index, (x, y) in enumerate(zip(inputs, expected)):
        lines += [c_array(f"input{index}", x), c_array(f"expected{index}", y)]
    out_type = C_TYPES[expected[0].dtype.name]
    in_type = C_TYPES[inputs[0].dtype.name]
    lines += [f"static {out_type} output[{expected[0].size}];", "", "int main(void)", "{", "  int failed = 0;"]
    for index in range(len(inputs)):
        lines += [f"  if ({model}_run((const {in_type} *)(const void *)input{index}, output) != 0 ||",
                  f"      memcmp(output, expected{index}, sizeof output) != 0) {{",
                  f'    printf("input {index}: differs\\n");', "    failed = 1;", "  }"]
    lines += ['  printf("many inputs: %s\\n", failed ? "FAIL" : "PASS");', "  return failed;", "}", ""]
    return "\n".join(lines)


def run_on_qemu(bundle_dir: Path, work_dir: Path, model: str, inputs: list[np.ndarray],
                expected: list[np.ndarray], board: Board) -> QemuResult:
    """Copy the bundle, make its self-test the driver, build it with the bundle's own cross build and run it on
    `board` through our sandboxed runner; its exit status is 0 when every output matched."""
    copy = work_dir / bundle_dir.name
    shutil.copytree(bundle_dir, copy)
    (copy / "selftest.c").write_text(driver_c(model, inputs, expected))
    return run_qemu(build_selftest_elf(copy), board, timeout_s=1800)
