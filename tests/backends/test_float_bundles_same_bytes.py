"""A float bundle computes one answer on every target: generated models whose outputs pass through TANH and GELU
(tests/float_activation_models.py: the bundle's tanhf and erff, on its expf), compiled for `lowpower` (generic_c,
run on the host with glibc) and for emulated cores with and without an FPU (newlib or picolibc there), give the
same output bytes on the same inputs. Before the bundle had its own expf (packager/templates/float_math_expf.h.in)
the C libraries' expf made the boards' last bits differ from the host's (1 ULP in pretrainedResnet's softmax,
vww_96_float's too); before its own tanhf (packager/templates/float_math_tanhf.h.in) newlib's tanhf made
cortex-m4f's and cortex-m33's differ (the TANH model's byte 6532 of case 0; picolibc's on RISC-V gave glibc's bits),
and before its own erff (packager/templates/float_math_erff.h.in) every board's GELU model differed. The shared
float models are compared so by the backend suite (tests/backends/test_backends_match_generic_c.py, on the same
seeded cases and more of them): hello_world_float and pretrainedResnet on every emulated profile in CI (their
pairs here, on these profiles with more SRAM, were the same comparison again), vww_96_float on cortex-m33 (every
profile with --backend-suite). The comparing driver is tests/cortex_m_many_inputs.py's; the board build is the
bundle's own (its runner's). Each core's profile is given SRAM enough for the models layer by layer
(ROOMY_SRAM_BYTES: the SRAM is only checked, never read by the code generation), as the bits, not the fit, are
under test."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import ModelFactory, cross_build_of, profile_build_config
from cortex_m_many_inputs import PASS_LINE, emulated_run, host_outputs
from float_activation_models import write_float_gelu_model, write_float_tanh_model

FLOAT_MODELS = [write_float_tanh_model, write_float_gelu_model]
PROFILES = ["cortex-m4f", "cortex-m33", "rv32imafc", "rv32imc"]
GENERATED_CI_PROFILES = ("cortex-m4f", "rv32imc")
"""The generated models' profiles in CI (newlib with an FPU, picolibc without: where the C libraries' tanhf and
erff differed from glibc's); their other pairs run with --backend-suite, within CI's 20 minutes."""
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


def _cases(bundle, count: int) -> list[list[np.ndarray]]:
    """`count` seeded float cases in [-1, 1) of the bundle's one input (seed 2027: not the self-test's)."""
    rng = np.random.default_rng(2027)
    tensor = bundle.plan.tensors[bundle.plan.inputs[0]]
    return [[rng.uniform(-1.0, 1.0, tensor.shape).astype(np.float32)] for _ in range(count)]


def _pairs() -> list:
    """Every (model, profile) pair; those beyond GENERATED_CI_PROFILES marked backend_suite."""
    return [pytest.param(model, profile, id=f"{model.__name__}-{profile}",
                         marks=[] if profile in GENERATED_CI_PROFILES else [pytest.mark.backend_suite])
            for model in FLOAT_MODELS for profile in PROFILES]


@pytest.mark.slow
@pytest.mark.parametrize(("model", "profile"), _pairs())
def test_a_float_bundle_gives_the_hosts_bytes_on_every_core(compiled, roomy_profile, tmp_path: Path,
                                                            model: ModelFactory, profile: str) -> None:
    generic, other = compiled(model), compiled(model, roomy_profile(profile))
    cases = _cases(generic, CASES)
    expected = host_outputs(generic, cases, tmp_path / "host")
    run = emulated_run(profile_build_config(profile).emulated, other, cases, expected, tmp_path / "board",
                       cross_build_of(other))
    assert run.exit_status == 0 and PASS_LINE in run.stdout, f"{run.ending}: {run.stdout}"
