"""Stateful models (SVDF, LSTM, TFLite Micro's signal library) invoked several times: by TFLite Micro, and as a
compiled bundle run in one process as an application runs it (the state carries from one run to the next,
the last run follows `<model>_reset()`).

One input of any type; one output or several (`output_dtypes`, numpy dtypes in the model's order). Float
outputs travel as their bits (exact on every target). The driver is built from the bundle's own sources with
the project's warning flags and run on the host, or by the bundle's cortex-m4f rules on QEMU.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Sequence

import numpy as np

C_TYPES = {"int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "uint32": "uint32_t", "uint64": "uint64_t",
           "float32": "float", "bool": "bool"}
# How each output element `v` is printed: printf's format and arguments, in 32-bit words (newlib-nano's printf
# on the emulated board has no long long): uint64 as its two words, float32 as its bits.
_PRINTED = {"uint64": ("%lu:%lu", "(unsigned long)(v >> 32), (unsigned long)(v & 0xFFFFFFFFu)"),
            "uint32": ("%lu", "(unsigned long)v"), "float32": ("%lu", "bits_of(v)"), "bool": ("%ld", "(long)(v ? 1 : 0)")}

DRIVER_C = """\
#include <stdio.h>
#include <string.h>
#include "{m}.h"
static const {input_type} inputs[{runs}][{size}] = {{{inputs}}};
static unsigned long bits_of(float v) {{
  uint32_t bits;
  memcpy(&bits, &v, sizeof bits);
  return (unsigned long)bits;
}}
int main(void) {{
{declarations}
  int run;
  unsigned i;
  for (run = 0; run < {runs}; ++run) {{
{reset}
    if ({run_call} != {M}_OK) {{
      return 1;
    }}
{prints}
  }}
  (void)bits_of;
  return 0;
}}
"""


def _literal(value) -> str:
    """A C literal of exactly `value` (a numpy scalar): hexadecimal for floats, suffixed for unsigned types."""
    if isinstance(value, np.floating):
        return f"{float(value).hex()}f"
    return f"{value}u" + ("ll" if value.dtype.itemsize == 8 else "") if value.dtype.kind == "u" else str(value)


def _write_driver(out: Path, model: str, inputs: list[np.ndarray], output_dtypes: Sequence,
                  reset_last: bool = True) -> list[str]:
    """Write ``out``/driver.c for ``inputs``; the bundle's C files the driver links with, driver.c first."""
    M = model.upper()
    dtypes = [np.dtype(d).name for d in output_dtypes]
    rows = ", ".join("{" + ", ".join(_literal(v) for v in x.reshape(-1)) + "}" for x in inputs)
    declarations = [f"  {C_TYPES[d]} output{k}[{M}_OUTPUT{k}_ELEMENTS];" for k, d in enumerate(dtypes)]
    if len(dtypes) == 1:
        run_call = f"{model}_run(inputs[run], output0)"
    else:
        declarations += [f"  {model}_inputs_t in;", f"  {model}_outputs_t out;"]
        run_call = f"(in.input0 = inputs[run], {', '.join(f'out.output{k} = output{k}' for k in range(len(dtypes)))}, " \
                   f"{model}_run(&in, &out))"
    prints = []
    for k, dtype in enumerate(dtypes):
        fmt, value = _PRINTED.get(dtype, ("%ld", "(long)v"))
        prints += [f"    for (i = 0u; i < {M}_OUTPUT{k}_ELEMENTS; ++i) {{",
                   f"      {C_TYPES[dtype]} v = output{k}[i];", f'      printf("{fmt} ", {value});', "    }",
                   '    printf("\\n");']
    (out / "driver.c").write_text(DRIVER_C.format(
        m=model, M=M, runs=len(inputs), size=inputs[0].size, inputs=rows, input_type=C_TYPES[inputs[0].dtype.name],
        reset=f"    if (run == {len(inputs)} - 1) {{\n      {model}_reset();\n    }}" if reset_last else "",
        declarations="\n".join(declarations), run_call=run_call, prints="\n".join(prints)))
    return ["driver.c", f"{model}_model.c", f"{model}_kernels.c", f"{model}_weights.c"]


def _outputs(printed: str, output_dtypes: Sequence) -> list:
    """Each run's outputs: one array per run for a single output, else a list of arrays per run."""
    dtypes = [np.dtype(d) for d in output_dtypes]
    lines = printed.splitlines()
    runs = []
    for start in range(0, len(lines), len(dtypes)):
        arrays = []
        for line, dtype in zip(lines[start:start + len(dtypes)], dtypes):
            words = [[int(w) for w in v.split(":")] for v in line.split()]
            values = np.array([sum(w << (32 * i) for i, w in enumerate(reversed(v))) for v in words],
                              np.uint64 if dtype.kind in "uf" else np.int64)
            arrays.append(values.astype(np.uint32).view(np.float32) if dtype.kind == "f" else values.astype(dtype))
        runs.append(arrays[0] if len(dtypes) == 1 else arrays)
    return runs


def run_with_reset_last(out: Path, model: str, inputs: list[np.ndarray], output_dtypes: Sequence = (np.int8,),
                        reset_last: bool = True) -> list:
    """The bundle in ``out`` (model name ``model``) run on each of ``inputs`` in turn, `<model>_reset()` called
    before the last run (unless not ``reset_last``: a model without state has none); each run's output, flat
    (or outputs, for several ``output_dtypes``)."""
    sources = [str(out / name) for name in _write_driver(out, model, inputs, output_dtypes, reset_last)]
    subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Wconversion", "-Wshadow", "-Werror", "-o",
                    str(out / "driver"), *sources], check=True)
    printed = subprocess.run([str(out / "driver")], check=True, capture_output=True, text=True).stdout
    return _outputs(printed, output_dtypes)


def run_with_reset_last_on_qemu(out: Path, model: str, inputs: list[np.ndarray],
                                output_dtypes: Sequence = (np.int8,)) -> list:
    """As `run_with_reset_last`, for a cortex-m4f bundle: the driver built by the bundle's own cortex-m4f
    rules (its library's flags) in place of the self-test, and run on QEMU's mps2-an386 as the self-test is."""
    from emulator.boards import BOARDS
    from emulator.qemu import run_qemu
    from backends.cortex_m.bundle_files.support import BOARD_SOURCES

    sources = _write_driver(out, model, inputs, output_dtypes) + list(BOARD_SOURCES)
    elf = "build-cortex-m/driver.elf"
    subprocess.run(["make", "-s", "-C", str(out), "-f", "cortex_m/qemu-test.mk", "cortex-m-elf",
                    f"CORTEX_M_SRCS={' '.join(sources)}", f"CORTEX_M_ELF={elf}"], check=True, capture_output=True)
    run = run_qemu(out / elf, BOARDS["mps2-an386"], timeout_s=120)
    assert run.exit_status == 0, f"the driver ended with {run.ending()}: {run.stdout}"
    return _outputs(run.stdout, output_dtypes)


def tflm_invocations(model: bytes, inputs: list[np.ndarray], outputs: int = 1) -> list:
    """TFLite Micro's outputs for ``inputs``, one invocation of ``model`` each (the state carries): per run the
    output, or the list of its ``outputs`` outputs."""
    from tflite_micro import runtime

    interpreter = runtime.Interpreter.from_bytes(model, arena_size=1 << 20)  # TFLM reads ``model``, no copy
    results = []
    for x in inputs:
        interpreter.set_input(x, 0)
        interpreter.invoke()
        got = [np.array(interpreter.get_output(k)).copy() for k in range(outputs)]
        results.append(got[0] if outputs == 1 else got)
    return results
