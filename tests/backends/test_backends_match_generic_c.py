"""Every backend computes what `generic_c` computes, bit for bit: the same model compiled for a profile of each
backend and for `lowpower` (generic_c), both run on the same inputs (not the self-test's cases: seeded draws over
each input's range), every output byte compared. The generic_c bundle runs on the host; each other backend's on
its runner (`Backend.emulated_runner`: the bundle's own cross build on its QEMU board), with the self-test
program replaced by a comparing driver.
Bundles come from the session's cache (conftest.compiled): a bundle other tests also use is compiled once."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from backends import backend_of
from backends.backend import EmulatedRun
from conftest import profile_build_config
from target import load_profile
from target.loading import profile_names

from cortex_m_many_inputs import C_TYPES, c_array, driver_c

GENERIC_PROFILE = "lowpower"
COMPARED_PROFILES = (("cortex_m", "cortex-m4f"), ("cortex_m", "cortex-m55"), ("riscv", "rv32imc"))
"""(backend, profile) for each backend other than generic_c: cortex-m4f runs the DSP helpers (dual MAC),
cortex-m55 their Helium bodies (MVE), rv32imc the RISC-V kernels without an FPU (float in software)."""

MODELS = [
    "tflm/hello_world_int8.tflite",
    "tflm/hello_world_float.tflite",
    pytest.param("tflm/micro_speech_quantized.tflite", marks=pytest.mark.slow),
]
"""One input and one output each (the drivers' form): int8 and float dense layers, an int8 convolution."""
CASES = 6


def test_every_backend_has_a_profile_here() -> None:
    """A new backend folder is compared with generic_c as soon as a built-in profile names it."""
    backends = {backend_of(load_profile(name)).name for name in profile_names()}
    assert backends - {"generic_c"} == {backend for backend, _ in COMPARED_PROFILES}
    assert backend_of(load_profile(GENERIC_PROFILE)).name == "generic_c"


def _inputs(tensor, count: int) -> list[np.ndarray]:
    """`count` seeded draws over the input's range: integers over their whole type, floats in [-1, 1)."""
    rng = np.random.default_rng(2027)
    dtype = np.dtype(tensor.dtype)
    if dtype.kind == "f":
        return [rng.uniform(-1.0, 1.0, tensor.shape).astype(dtype) for _ in range(count)]
    info = np.iinfo(dtype)
    return [rng.integers(info.min, info.max, tensor.shape, endpoint=True).astype(dtype) for _ in range(count)]


def _host_outputs(bundle, inputs: list[np.ndarray], work: Path) -> list[np.ndarray]:
    """The outputs of the (host-built) bundle on each input, read back from the bytes a driver prints."""
    plan, model = bundle.plan, bundle.plan.model
    output = plan.tensors[plan.outputs[0]]
    in_type = C_TYPES[inputs[0].dtype.name]
    lines = ["#include <stdint.h>", "#include <stdio.h>", f'#include "{model}.h"', ""]
    lines += [c_array(f"input{index}", x) for index, x in enumerate(inputs)]
    lines += [f"static {C_TYPES[output.dtype]} output[{output.elements}];", "", "int main(void)", "{"]
    for index in range(len(inputs)):
        lines += [f"  if ({model}_run((const {in_type} *)(const void *)input{index}, output) != 0) return 1;",
                  "  for (size_t i = 0; i < sizeof output; i++) printf(\"%02x\", ((const unsigned char *)output)[i]);",
                  '  printf("\\n");']
    lines += ["  return 0;", "}", ""]
    work.mkdir()
    (work / "driver.c").write_text("\n".join(lines))
    program = work / "driver"
    subprocess.run(["cc", "-std=c99", "-I", str(bundle.out_dir), str(work / "driver.c"), str(bundle.library), "-lm",
                    "-o", str(program)], check=True)
    printed = subprocess.run([str(program)], check=True, capture_output=True, text=True).stdout.split()
    return [np.frombuffer(bytes.fromhex(line), output.dtype).reshape(output.shape) for line in printed]


@pytest.mark.parametrize(("backend", "profile"), COMPARED_PROFILES, ids=[profile for _, profile in COMPARED_PROFILES])
@pytest.mark.parametrize("model", MODELS)
def test_backend_matches_generic_c_bit_for_bit(compiled, tmp_path: Path, model: str, backend: str,
                                               profile: str) -> None:
    generic, other = compiled(model, GENERIC_PROFILE), compiled(model, profile)
    inputs = _inputs(generic.plan.tensors[generic.plan.inputs[0]], CASES)
    expected = _host_outputs(generic, inputs, tmp_path / "host")
    assert len(expected) == CASES
    run = _emulated_run(profile, other, inputs, expected, tmp_path / "emulated")
    assert run.exit_status == 0 and "many inputs: PASS" in run.stdout, f"ended with {run.ending}: {run.stdout}"


def _emulated_run(profile: str, bundle, inputs: list[np.ndarray], expected: list[np.ndarray],
                  work: Path) -> EmulatedRun:
    """The comparing driver's run of `bundle` (compiled for `profile`) on its emulated board, built by the
    bundle's own cross build (its runner's)."""
    runner = profile_build_config(profile).emulated
    copy = work / bundle.out_dir.name
    shutil.copytree(bundle.out_dir, copy)
    (copy / "selftest.c").write_text(driver_c(bundle.plan.model, inputs, expected))
    return runner.run_program(runner.build(copy), timeout_s=1800)
