"""Stateful models (SVDF, LSTM) invoked several times: by TFLite Micro, and as a compiled bundle run in one
process as an application runs it (the state carries from one run to the next, the last run follows
`<model>_reset()`).

One int8 input and one int8 output. The driver is built from the bundle's own sources with the project's
warning flags and run on the host.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np

DRIVER_C = """\
#include <stdio.h>
#include "{m}.h"
static const int8_t inputs[{runs}][{size}] = {{{inputs}}};
int main(void) {{
  int8_t output[{M}_OUTPUT0_ELEMENTS];
  int run;
  unsigned i;
  for (run = 0; run < {runs}; ++run) {{
    if (run == {runs} - 1) {{
      {m}_reset();
    }}
    if ({m}_run(inputs[run], output) != {M}_OK) {{
      return 1;
    }}
    for (i = 0u; i < {M}_OUTPUT0_ELEMENTS; ++i) {{
      printf("%d ", output[i]);
    }}
    printf("\\n");
  }}
  return 0;
}}
"""


def _write_driver(out: Path, model: str, inputs: list[np.ndarray]) -> list[str]:
    """Write ``out``/driver.c for ``inputs``; the bundle's C files the driver links with, driver.c first."""
    rows = ", ".join("{" + ", ".join(str(v) for v in x.reshape(-1)) + "}" for x in inputs)
    (out / "driver.c").write_text(DRIVER_C.format(m=model, M=model.upper(), runs=len(inputs), size=inputs[0].size,
                                                  inputs=rows))
    return ["driver.c", f"{model}_model.c", f"{model}_kernels.c", f"{model}_weights.c"]


def _outputs(printed: str) -> list[np.ndarray]:
    return [np.array(line.split(), np.int8) for line in printed.splitlines()]


def run_with_reset_last(out: Path, model: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The bundle in ``out`` (model name ``model``) run on each of ``inputs`` in turn, `<model>_reset()` called
    before the last run; each run's output, flat."""
    sources = [str(out / name) for name in _write_driver(out, model, inputs)]
    subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Wconversion", "-Wshadow", "-Werror", "-o",
                    str(out / "driver"), *sources], check=True)
    return _outputs(subprocess.run([str(out / "driver")], check=True, capture_output=True, text=True).stdout)


def run_with_reset_last_on_qemu(out: Path, model: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """As `run_with_reset_last`, for a cortex-m4f bundle: the driver built by the bundle's own cortex-m4f
    rules (its library's flags) in place of the self-test, and run on QEMU's mps2-an386 as the self-test is."""
    from emulator.boards import BOARDS
    from emulator.qemu import run_qemu
    from packager.cortex_m.support import BOARD_SOURCES

    sources = _write_driver(out, model, inputs) + list(BOARD_SOURCES)
    elf = "build-cortex-m/driver.elf"
    subprocess.run(["make", "-s", "-C", str(out), "-f", "cortex_m/qemu-test.mk", "cortex-m-elf",
                    f"CORTEX_M_SRCS={' '.join(sources)}", f"CORTEX_M_ELF={elf}"], check=True, capture_output=True)
    run = run_qemu(out / elf, BOARDS["mps2-an386"], timeout_s=120)
    assert run.exit_status == 0, f"the driver ended with {run.ending()}: {run.stdout}"
    return _outputs(run.stdout)


def tflm_invocations(model: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """TFLite Micro's outputs for ``inputs``, one invocation of ``model`` each (the state carries)."""
    from tflite_micro import runtime

    interpreter = runtime.Interpreter.from_bytes(model)  # TFLM reads ``model``, it does not copy it
    results = []
    for x in inputs:
        interpreter.set_input(x, 0)
        interpreter.invoke()
        results.append(np.array(interpreter.get_output(0)).copy())
    return results
