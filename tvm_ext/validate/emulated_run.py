"""A built Cortex-M bundle run on its emulated core on the user's samples, by the bundle's own cross build and
the sandboxed QEMU runner of its self-test (`emulator.qemu.run_qemu`: no host capability, UART0 the only output).

The emulated program has no input, so the samples are embedded: in a temporary copy of the bundle, a driver
takes the place of selftest.c (the one source `cortex_m/qemu-test.mk` links besides the library and the board
support), holding each sample's inputs as bytes, running the bundle on each in turn and printing each output's
bytes in hexadecimal on a line `v <sample> <output> <hex>`. The driver is written from the bundle's header
macros and bytes only: no name from the model reaches C. Samples whose bytes pass MAX_EMBEDDED_BYTES are left
out (they sit in the weights' region, as the self-test's cases do: the boards' 4 MiB of flash, mps3-an547's 8 MiB
beside its 512 KiB boot memory).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np

from backends.backend import EmulatedRunner
from packager.c_text import array_body
from tvm_ext.validate.driver_c import io_buffers, run_one

MAX_EMBEDDED_BYTES = 1 << 20
"""The most input bytes embedded in the driver: the first samples that fit are run on the emulated core."""


class EmulatedRunError(Exception):
    """The bundle could not be built or run on the emulated core; one line saying why."""


def embedded_count(cases: list[list[np.ndarray]]) -> int:
    """How many of the first `cases` the driver embeds: those whose inputs fit MAX_EMBEDDED_BYTES together."""
    total = 0
    for count, case in enumerate(cases):
        total += sum(array.nbytes for array in case)
        if total > MAX_EMBEDDED_BYTES:
            return count
    return len(cases)


def _driver_c(name: str, cases: list[list[np.ndarray]], outputs: int, stateful: bool) -> str:
    inputs = len(cases[0])
    lines = ["#include <stdio.h>", "#include <string.h>", *io_buffers(name, inputs, outputs)]
    for k in range(inputs):
        data = b"".join(case[k].tobytes() for case in cases)
        lines.append(f"static const unsigned char samples{k}[{len(data)}] = "
                     f"{array_body(np.frombuffer(data, np.uint8), 'uint8')};")
    lines += ["static void print_bytes(int sample, int output, const void* data, size_t size) {",
              "  const unsigned char* bytes = (const unsigned char*)data;", "  size_t i;",
              '  printf("v %d %d ", sample, output);',
              '  for (i = 0; i < size; ++i) { printf("%02x", (unsigned)bytes[i]); }', '  printf("\\n");', "}"]
    lines += ["int main(void) {", "  int sample;", f"  for (sample = 0; sample < {len(cases)}; ++sample) {{",
              "    int status;"]
    lines += [f"    memcpy(in{k}, samples{k} + (size_t)sample * sizeof in{k}, sizeof in{k});" for k in range(inputs)]
    lines += run_one(name, inputs, outputs, stateful, "return 2;")
    lines += [f"    print_bytes(sample, {k}, out{k}, sizeof out{k});" for k in range(outputs)]
    lines += ["  }", "  return 0;", "}", ""]
    return "\n".join(lines)


def run_on_emulator(bundle: Path, name: str, output_dtypes: list[np.dtype], output_shapes: list[tuple[int, ...]],
                    cases: list[list[np.ndarray]], stateful: bool, runner: EmulatedRunner) -> list[list[np.ndarray]]:
    """Each case's outputs from the bundle in folder `bundle` (C prefix `name`) run on `runner`'s emulated
    board, built by the bundle's own build rules; EmulatedRunError (one line) when it cannot be."""
    with tempfile.TemporaryDirectory(prefix="tvm_ext_validate_qemu_") as folder:
        work = Path(folder) / "bundle"
        shutil.copytree(bundle, work, ignore=shutil.ignore_patterns("*.o", "*.a", "*.tar.gz", runner.build_dir))
        (work / "selftest.c").write_text(_driver_c(name, cases, len(output_dtypes), stateful))
        try:
            result = runner.run_program(runner.build(work))
        except RuntimeError as err:  # EmulatedBuildError, or QEMU's failure to run
            raise EmulatedRunError(str(err).splitlines()[0]) from err
    if result.exit_status != 0:
        raise EmulatedRunError(f"the bundle's run on {result.where} ended with {result.ending}")
    printed: dict[tuple[int, int], bytes] = {}
    for line in result.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "v":
            printed[(int(parts[1]), int(parts[2]))] = bytes.fromhex(parts[3])
    try:
        return [[np.frombuffer(printed[(sample, k)], dtype=dtype).reshape(shape)
                 for k, (dtype, shape) in enumerate(zip(output_dtypes, output_shapes))] for sample in range(len(cases))]
    except (KeyError, ValueError) as err:
        raise EmulatedRunError(f"the bundle's run on {result.where} did not print every output ({err})") from err
