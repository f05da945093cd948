"""A bundle run on many inputs, in sequence (a model with state carries it from one case to the next, as an
application runs it): its self-test program replaced by a driver that runs the model on each embedded case and
either compares every output byte with the embedded expected one (on an emulated board: exit status 1 on any
difference) or prints every output's bytes (on the host, whose printout is the expected outputs). Any number of
inputs and outputs (the run function's struct form for more than one of either); inputs and outputs in the
caller's buffers (not planned into the arena, not read row by row)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from emulator.qemu import QemuResult, run_qemu
from emulator.selftest import build_selftest_elf
from emulator.boards import Board

C_TYPES = {"float32": "float", "int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "int32": "int32_t",
           "uint32": "uint32_t", "bool": "bool"}

PASS_LINE = "many inputs: PASS"
"""The comparing driver's last line when every output byte of every case matched."""

_HELPERS = """\
/* The first byte of `got` that differs from `want` (n bytes), printed; 1 when there is one. */
static int differs(unsigned c, unsigned k, const void *got, const void *want, size_t n)
{
  const unsigned char *g = (const unsigned char *)got, *w = (const unsigned char *)want;
  size_t i;
  for (i = 0; i < n; i++) {
    if (g[i] != w[i]) {
      printf("case %u output %u: byte %lu is %02x, expected %02x\\n", c, k, (unsigned long)i, g[i], w[i]);
      return 1;
    }
  }
  return 0;
}
"""

_PRINT_HELPER = """\
/* The n bytes at `p` in hexadecimal, on one line. */
static void print_hex(const void *p, size_t n)
{
  const unsigned char *b = (const unsigned char *)p;
  size_t i;
  for (i = 0; i < n; i++) printf("%02x", b[i]);
  printf("\\n");
}
"""


def c_array(name: str, values: np.ndarray) -> str:
    """A C array of ``values`` whose bytes equal theirs (floats by their bit patterns)."""
    flat = values.reshape(-1)
    if flat.dtype == np.float32:
        words = ", ".join(f"0x{word:08x}u" for word in flat.view(np.uint32))
        return f"static const uint32_t {name}[{flat.size}] = {{{words}}};"
    return f"static const {C_TYPES[flat.dtype.name]} {name}[{flat.size}] = {{{', '.join(str(int(v)) for v in flat)}}};"


def sequence_driver_c(model: str, cases: Sequence[Sequence[np.ndarray]], outputs: Sequence[tuple[str, int]],
                      expected: Optional[Sequence[Sequence[np.ndarray]]] = None) -> str:
    """C of a program running ``<model>_run`` on each case in turn (``cases[c]``: one array per model input),
    never resetting the model's state; ``outputs``: each output's dtype name and elements. With ``expected``
    (``expected[c]``: one array per output) it compares every output byte and exits 1 on any difference, naming
    the first differing byte of each differing output, its last line PASS_LINE or "many inputs: FAIL"; without,
    it prints each output's bytes in hexadecimal, one line per output, case after case (`printed_outputs` reads
    them back). Exit status 2 when a run call fails."""
    single = len(cases[0]) == 1 and len(outputs) == 1
    lines = ["#include <stdbool.h>", "#include <stddef.h>", "#include <stdint.h>", "#include <stdio.h>",
             f'#include "{model}.h"', ""]
    for c, inputs in enumerate(cases):
        lines += [c_array(f"case{c}_input{k}", x) for k, x in enumerate(inputs)]
        if expected is not None:
            lines += [c_array(f"case{c}_expected{k}", y) for k, y in enumerate(expected[c])]
    lines += [f"static {C_TYPES[dtype]} output{k}[{elements}];" for k, (dtype, elements) in enumerate(outputs)]
    lines += ["", _HELPERS if expected is not None else _PRINT_HELPER, "int main(void)", "{", "  int failed = 0;"]
    if not single:
        lines += [f"  {model}_inputs_t inputs;", f"  {model}_outputs_t outputs;"]
        lines += [f"  outputs.output{k} = output{k};" for k in range(len(outputs))]
    for c, inputs in enumerate(cases):
        as_typed = [f"(const {C_TYPES[x.dtype.name]} *)(const void *)case{c}_input{k}" for k, x in enumerate(inputs)]
        if single:
            call = f"{model}_run({as_typed[0]}, output0)"
        else:
            lines += [f"  inputs.input{k} = {typed};" for k, typed in enumerate(as_typed)]
            call = f"{model}_run(&inputs, &outputs)"
        lines += [f"  if ({call} != 0) {{", f'    printf("case {c}: run failed\\n");', "    return 2;", "  }"]
        for k in range(len(outputs)):
            if expected is None:
                lines.append(f"  print_hex(output{k}, sizeof output{k});")
            else:
                lines.append(f"  failed |= differs({c}u, {k}u, output{k}, case{c}_expected{k}, sizeof output{k});")
    if expected is not None:
        lines.append('  printf("many inputs: %s\\n", failed ? "FAIL" : "PASS");')
    lines += ["  return failed;", "}", ""]
    return "\n".join(lines)


def printed_outputs(printed: str, outputs: Sequence[tuple[str, int]]) -> list[list[np.ndarray]]:
    """What a printing `sequence_driver_c` printed, read back: per case, one flat array per output."""
    lines = printed.split()
    arrays = [np.frombuffer(bytes.fromhex(line), np.dtype(outputs[index % len(outputs)][0]))
              for index, line in enumerate(lines)]
    return [arrays[start:start + len(outputs)] for start in range(0, len(arrays), len(outputs))]


def bundle_outputs(bundle) -> list[tuple[str, int]]:
    """Each output of ``bundle`` (a compiled Bundle): its dtype name and elements, in the model's order."""
    return [(bundle.plan.tensors[name].dtype, bundle.plan.tensors[name].elements) for name in bundle.plan.outputs]


def host_outputs(bundle, cases: Sequence[Sequence[np.ndarray]], work: Path) -> list[list[np.ndarray]]:
    """The outputs of the host-built ``bundle`` on each case in turn (`sequence_driver_c` printing them, built in
    ``work`` with the host's cc and the bundle's library), read back by `printed_outputs`."""
    work.mkdir()
    (work / "driver.c").write_text(sequence_driver_c(bundle.plan.model, cases, bundle_outputs(bundle)))
    program = work / "driver"
    subprocess.run(["cc", "-std=c99", "-I", str(bundle.out_dir), str(work / "driver.c"), str(bundle.library), "-lm",
                    "-o", str(program)], check=True)
    printed = subprocess.run([str(program)], check=True, capture_output=True, text=True).stdout
    return printed_outputs(printed, bundle_outputs(bundle))


def emulated_run(runner, bundle, cases: Sequence[Sequence[np.ndarray]],
                 expected: Sequence[Sequence[np.ndarray]], work: Path, cross_build: Optional[Path] = None):
    """The comparing `sequence_driver_c`'s run of ``bundle`` on ``runner`` (the profile's emulated runner), built
    by the bundle's own cross build from a copy in ``work``; an EmulatedRun (PASS_LINE in its output when every
    byte matched). ``cross_build``: the bundle's self-test's cross build (conftest.cross_build_of), copied in with
    its times, so that make recompiles only the driver (the bundle's objects are newer than their sources); None
    builds every object."""
    copy = work / bundle.out_dir.name
    shutil.copytree(bundle.out_dir, copy)
    if cross_build is not None:
        shutil.copytree(cross_build, copy / runner.build_dir)
    (copy / "selftest.c").write_text(sequence_driver_c(bundle.plan.model, cases, bundle_outputs(bundle), expected))
    return runner.run_program(runner.build(copy), timeout_s=1800)


def driver_c(model: str, inputs: list[np.ndarray], expected: list[np.ndarray]) -> str:
    """C of a program running ``<model>_run`` (one input, one output) on each input, exit status 1 on any output
    byte that differs from its expected one."""
    return sequence_driver_c(model, [[x] for x in inputs], [(expected[0].dtype.name, expected[0].size)],
                             [[y] for y in expected])


def run_on_qemu(bundle_dir: Path, work_dir: Path, model: str, inputs: list[np.ndarray],
                expected: list[np.ndarray], board: Board) -> QemuResult:
    """Copy the bundle, make its self-test the driver, build it with the bundle's own cross build and run it on
    `board` through our sandboxed runner; its exit status is 0 when every output matched."""
    copy = work_dir / bundle_dir.name
    shutil.copytree(bundle_dir, copy)
    (copy / "selftest.c").write_text(driver_c(model, inputs, expected))
    return run_qemu(build_selftest_elf(copy), board, timeout_s=1800)
