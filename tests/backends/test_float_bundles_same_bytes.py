"""A float bundle computes one answer on every target: a shared float model whose kernels call a transcendental
(SOFTMAX's exp: pretrainedResnet) and one without (hello_world_float), compiled for `lowpower` (generic_c, run on
the host with glibc) and for emulated cores with and without an FPU (newlib or picolibc there), give the same
output bytes on the same inputs. Before the bundle had its own expf (packager/templates/float_math_expf.h.in) the C
libraries' expf made the boards' last bits differ from the host's (1 ULP in the softmax; vww_96_float's too, whose
pairs the backend suite compares with --backend-suite). The comparing driver is tests/cortex_m_many_inputs.py's;
the board build is the bundle's own (its runner's). Each core's profile is given SRAM enough for the models layer
by layer (ROOMY_SRAM_BYTES: the SRAM is only checked, never read by the code generation), as the bits, not the
fit, are under test."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import profile_build_config
from cortex_m_many_inputs import driver_c

FLOAT_MODELS = ["tflm/hello_world_float.tflite", "mlperf_tiny/pretrainedResnet.tflite"]
PROFILES = ["cortex-m4f", "cortex-m33", "rv32imafc", "rv32imc"]
CASES = 2
ROOMY_SRAM_BYTES = 1 << 20


@pytest.fixture(scope="session")
def roomy_profile(tmp_path_factory):
    """`roomy_profile(name)`: the path of a profile extending the built-in `name` with ROOMY_SRAM_BYTES of SRAM."""
    folder = tmp_path_factory.mktemp("roomy_profiles")

    def path(name: str) -> str:
        profile = folder / f"{name}-roomy.toml"
        profile.write_text(f'extends = "{name}"\nname = "{name}-roomy"\nsram_bytes = {ROOMY_SRAM_BYTES}\n')
        return str(profile)

    return path


def _inputs(bundle, count: int) -> list[np.ndarray]:
    """`count` seeded float inputs in [-1, 1) of the bundle's one input (seed 2027: not the self-test's)."""
    rng = np.random.default_rng(2027)
    tensor = bundle.plan.tensors[bundle.plan.inputs[0]]
    return [rng.uniform(-1.0, 1.0, tensor.shape).astype(np.float32) for _ in range(count)]


def _host_outputs(bundle, inputs: list[np.ndarray], work: Path) -> list[np.ndarray]:
    """The host-built generic_c bundle's output on each input: its bytes printed by a small driver."""
    work.mkdir()
    model = bundle.plan.model
    output = bundle.plan.tensors[bundle.plan.outputs[0]]
    lines = ["#include <stdint.h>", "#include <stdio.h>", "#include <string.h>", f'#include "{model}.h"',
             *(f"static const uint32_t input{i}[{x.size}] = {{{', '.join(f'0x{w:08x}u' for w in x.view(np.uint32).ravel())}}};"
               for i, x in enumerate(inputs)),
             f"static float output[{output.elements}];", "int main(void)", "{"]
    for i in range(len(inputs)):
        lines += [f"  if ({model}_run((const float *)(const void *)input{i}, output) != 0) return 1;",
                  "  for (size_t j = 0; j < sizeof output / sizeof output[0]; ++j) {",
                  "    uint32_t bits; memcpy(&bits, &output[j], sizeof bits); printf(\"%08lx\\n\", (unsigned long)bits);",
                  "  }"]
    lines += ["  return 0;", "}", ""]
    (work / "driver.c").write_text("\n".join(lines))
    program = work / "driver"
    subprocess.run(["cc", "-std=c99", "-I", str(bundle.out_dir), str(work / "driver.c"), str(bundle.library), "-lm",
                    "-o", str(program)], check=True)
    words = [int(line, 16) for line in subprocess.run([str(program)], check=True, capture_output=True,
                                                      text=True).stdout.split()]
    return [np.array(words[i * output.elements:(i + 1) * output.elements], np.uint32).view(np.float32)
            for i in range(len(inputs))]


@pytest.mark.slow
@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("model", FLOAT_MODELS, ids=lambda m: m.split("/")[1])
def test_a_float_bundle_gives_the_hosts_bytes_on_every_core(compiled, roomy_profile, tmp_path: Path, model: str,
                                                            profile: str) -> None:
    generic, other = compiled(model), compiled(model, roomy_profile(profile))
    inputs = _inputs(generic, CASES)
    expected = _host_outputs(generic, inputs, tmp_path / "host")
    copy = tmp_path / "board" / other.out_dir.name
    shutil.copytree(other.out_dir, copy)
    (copy / "selftest.c").write_text(driver_c(other.plan.model, inputs, expected))
    runner = profile_build_config(profile).emulated
    run = runner.run_program(runner.build(copy), timeout_s=1800)
    assert run.exit_status == 0 and "many inputs: PASS" in run.stdout, f"{run.ending}: {run.stdout}"
