"""Every backend computes what `generic_c` computes, bit for bit: every shared model (every model file in the
shared models folder, found there) compiled for every built-in profile that has an emulated runner and for
`lowpower` (generic_c), both run on the same cases (not the self-test's: seeded draws over each input's range),
every output byte of every case compared. The generic_c bundle runs on the host; the other on its runner
(`Backend.emulated_runner`: the bundle's own cross build on its QEMU board), with the self-test program replaced
by a comparing driver (tests/cortex_m_many_inputs.py). The cases run in sequence, never reset, on both sides: a
model with state (SVDF, LSTM) carries it from case to case, and both sides' states must evolve alike.

A pair that does not compile is still checked: a model the compiler refuses on `lowpower` (e.g. a hybrid model)
must be refused with the same line on every profile, and one refused only on the profile must be refused as not
fitting (DoesNotFitError: the CLI's exit 2, naming the SRAM or flash budget the model exceeds). Never a skip.

Bundles come from the session's cache (conftest.compiled, which also keeps refusals): a bundle other tests also
use is compiled once, with its emulated self-test's objects (conftest.cross_build_of), so that the comparing
driver is the only thing compiled again; the generic_c bundle's host outputs are computed once per model
(HostReference). CI runs the pairs of the models up to 340 KB on every emulated profile (but two costly
refusals) and each larger model on one profile (`in_ci_share`: 124 of the 168 pairs; before, 95: the models up to
80 KB everywhere, those up to 340 KB on three profiles); `bash scripts/test.sh --backend-suite
tests/backends/test_backends_match_generic_c.py` runs all of them (944 CPU-seconds, the pairs' sum, measured
2026-12-01 on 2 loaded cores while each comparison compiled the bundle's objects again). Each pair records its
CPU-seconds, and its compiles', in the JUnit XML (`--junitxml`): the share is chosen on them."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from backends import backend_of
from conftest import cross_build_of, models_dir, profile_build_config
from target import load_profile
from target.loading import profile_names
from tvm_ext.compile import CompileError, DoesNotFitError

from cortex_m_many_inputs import PASS_LINE, bundle_outputs, emulated_run, host_outputs

GENERIC_PROFILE = "lowpower"
MODEL_SUFFIXES = (".tflite", ".onnx")

MAX_CASES = 4
MIN_CASES = 2
CASES_BUDGET_INSTRUCTIONS = 200_000_000
"""Cases per pair: MAX_CASES, fewer (never under MIN_CASES) when their instructions together (the emulated
bundle's self-test measured one inference) would exceed CASES_BUDGET_INSTRUCTIONS: a float model on a core
without an FPU (some 150 instructions per MAC), an int8 CNN on cortex-m0plus (some 10)."""

def emulated_profiles() -> list[str]:
    """The built-in profiles whose backend runs their bundles on an emulated board, by name."""
    return [name for name in profile_names()
            if backend_of(load_profile(name)).emulated_runner(load_profile(name)) is not None]


def shared_models() -> list[str]:
    """Every model file in the shared models folder, as paths relative to it."""
    root = models_dir()
    return sorted(path.relative_to(root).as_posix() for path in root.rglob("*") if path.suffix in MODEL_SUFFIXES)


CI_MODEL_BYTES = 340_000
"""Model files of at most this many bytes are in the CI share on every emulated profile: TFLM's and MLPerf Tiny's
models up to vww_96_int8, person_detect and pretrainedResnet, and the zoo's LSTM, ViT and TCN (CI compiles many
of their cortex-m4f, cortex-m55 and lowpower bundles for other tests already: the session's cache shares them)."""
CI_LARGER_MODEL_PROFILES = {
    "mlperf_tiny/ad01_fp32.tflite": "cortex-m55",
    "mlperf_tiny/vww_96_float.tflite": "cortex-m33",
    "zoo/efficientnet_lite_w030_112_int8.tflite": "cortex-m4f",
    "zoo/kws_gru_40x16_int8.tflite": "rv32imc",
    "zoo/mobilenet_v2_050_64_int8.tflite": "cortex-m7",
    "zoo/mobilenet_v3s_min_050_80_int8.tflite": "rv32imafc",
    "zoo/yolo_tiny_80_int8.tflite": "cortex-m55",
}
"""The one profile on which CI runs each larger model (over CI_MODEL_BYTES: 5 to 14 CPU-seconds a compile, and the
model's lowpower compile besides): every model is compared in CI, each on a profile it fits (none of these is
refused), spread over the kinds of kernel code (the DSP helpers, Helium, scalar Cortex-M with an FPU, RISC-V with
and without one). Their other pairs, and those of a larger model not listed, run with --backend-suite."""


CI_COSTLY_REFUSALS = frozenset({("mlperf_tiny/pretrainedResnet.tflite", "cortex-m0plus"),
                                ("mlperf_tiny/vww_96_int8.tflite", "cortex-m0plus")})
"""Pairs up to CI_MODEL_BYTES left to --backend-suite: cortex-m0plus refuses them (its 32 KB of SRAM) after
searching patch plans, 8 and 17 CPU-seconds (measured 2026-12-01); CI checks a refusal on cortex-m0plus on
ad01_int8's (flash, under a CPU-second) and patch plans there on person_detect's and pretrainedResnet_quant's."""


def in_ci_share(model: str, model_bytes: int, profile: str) -> bool:
    """Whether CI runs the pair of the model file `model` (relative to the shared models) of `model_bytes` bytes on
    `profile` (the others run with --backend-suite)."""
    if (model, profile) in CI_COSTLY_REFUSALS:
        return False
    return model_bytes <= CI_MODEL_BYTES or CI_LARGER_MODEL_PROFILES.get(model) == profile


def _pair_params() -> list:
    """Every (shared model, emulated profile) pair; those outside the CI share (`in_ci_share`) marked
    backend_suite."""
    params = []
    for model in shared_models():
        size = (models_dir() / model).stat().st_size
        for profile in emulated_profiles():
            marks = [] if in_ci_share(model, size, profile) else [pytest.mark.backend_suite]
            params.append(pytest.param(model, profile, marks=marks, id=f"{model}-{profile}"))
    return params


def test_every_backend_has_an_emulated_profile() -> None:
    """A new backend is compared with generic_c as soon as a built-in profile of it has an emulated runner."""
    backends = {backend_of(load_profile(name)).name for name in profile_names()}
    compared = {backend_of(load_profile(name)).name for name in emulated_profiles()}
    assert backends - {"generic_c"} <= compared
    assert backend_of(load_profile(GENERIC_PROFILE)).name == "generic_c"
    assert GENERIC_PROFILE not in emulated_profiles()


def _compiled_or_refusal(compiled, model: str, profile: str):
    """The pair's Bundle, or the CompileError that refused it (the CLI's exit 2)."""
    try:
        return compiled(model, profile)
    except CompileError as error:
        return error


def _cases(bundle, count: int) -> list[list[np.ndarray]]:
    """`count` seeded cases, one array per model input: integers over their whole type, floats in [-1, 1)
    (seed 2027: the self-test's cases are seeds 0, 1, 2 and the types' extremes)."""
    rng = np.random.default_rng(2027)
    plan = bundle.plan
    cases = []
    for _ in range(count):
        case = []
        for name in plan.inputs:
            tensor = plan.tensors[name]
            dtype = np.dtype(tensor.dtype)
            if dtype.kind == "f":
                case.append(rng.uniform(-1.0, 1.0, tensor.shape).astype(dtype))
            else:
                info = np.iinfo(dtype)
                case.append(rng.integers(info.min, info.max, tensor.shape, endpoint=True).astype(dtype))
        cases.append(case)
    return cases


def _case_count(emulated) -> int:
    """How many cases the pair runs: MAX_CASES, fewer where the `emulated` bundle's inference takes many
    instructions (CASES_BUDGET_INSTRUCTIONS), at least MIN_CASES."""
    return max(MIN_CASES, min(MAX_CASES, CASES_BUDGET_INSTRUCTIONS // max(emulated.selftest.instructions or 1, 1)))


class HostReference:
    """The generic_c bundle's outputs on the host for the first MAX_CASES of `_cases`, run once per model (per
    pytest-xdist worker) for every profile's pair: a pair running fewer cases takes the first ones and their
    outputs, which are the same (each case is drawn after the ones before it, and the driver runs the cases in
    sequence: an output depends on its case and those before it, never on those after)."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._runs: dict[Path, tuple[list[list[np.ndarray]], list[list[np.ndarray]]]] = {}

    def __call__(self, generic, count: int) -> tuple[list[list[np.ndarray]], list[list[np.ndarray]]]:
        """`count` (at most MAX_CASES) cases for `generic` (the model's generic_c Bundle) and its outputs on them."""
        if generic.out_dir not in self._runs:
            cases = _cases(generic, MAX_CASES)
            work = self._folder / f"{generic.plan.model}-{len(self._runs)}"
            self._runs[generic.out_dir] = cases, host_outputs(generic, cases, work)
        cases, expected = self._runs[generic.out_dir]
        return cases[:count], expected[:count]


@pytest.fixture(scope="session")
def host_reference(tmp_path_factory: pytest.TempPathFactory) -> HostReference:
    """The session's (this worker's) HostReference."""
    return HostReference(tmp_path_factory.mktemp("host_reference"))


@pytest.fixture
def cpu_seconds_recorded(record_property):
    """Records the test's CPU-seconds (this process and the compilers, emulators and programs it waited for) as
    the property "cpu_seconds" (the JUnit XML's): what a pair costs, its compiles included when it is the first
    user of their bundles in the session ("generic_compile_cpu_seconds", "compile_cpu_seconds"): CI's share is
    chosen on these."""
    from tvm_ext.compile import cpu_seconds

    start = cpu_seconds()
    yield
    record_property("cpu_seconds", round(cpu_seconds() - start, 2))


@pytest.mark.parametrize(("model", "profile"), _pair_params())
def test_backend_matches_generic_c_bit_for_bit(compiled, host_reference, tmp_path: Path, record_property,
                                               cpu_seconds_recorded, model: str, profile: str) -> None:
    from tvm_ext.compile import cpu_seconds

    start = cpu_seconds()
    generic = _compiled_or_refusal(compiled, model, GENERIC_PROFILE)
    record_property("generic_compile_cpu_seconds", round(cpu_seconds() - start, 2))
    start = cpu_seconds()
    other = _compiled_or_refusal(compiled, model, profile)
    record_property("compile_cpu_seconds", round(cpu_seconds() - start, 2))  # ~0: the session had it
    if isinstance(generic, CompileError):  # refused everywhere: the same line on every profile
        record_property("outcome", "refused everywhere")
        assert isinstance(other, CompileError), f"{model} compiles for {profile}, not for {GENERIC_PROFILE}: {generic}"
        assert (type(other), str(other)) == (type(generic), str(generic))
        return
    if isinstance(other, CompileError):  # refused on this profile alone: only as not fitting its budgets
        record_property("outcome", f"refused: {other}")
        assert isinstance(other, DoesNotFitError), f"{model} refused on {profile} but not for not fitting: {other}"
        budgets = {"SRAM": load_profile(profile).sram_bytes, "flash": load_profile(profile).flash_bytes}
        assert other.overruns and all(o.available_bytes == budgets[o.memory] and o.excess_bytes > 0
                                      for o in other.overruns), other.overruns
        assert all(o.memory in str(other) for o in other.overruns), str(other)
        return
    cases, expected = host_reference(generic, _case_count(other))
    assert len(expected) == len(cases)
    run = emulated_run(profile_build_config(profile).emulated, other, cases, expected, tmp_path / "emulated",
                       cross_build_of(other))
    record_property("outcome", f"compared {len(cases)} cases")
    called = _library_transcendentals(generic)
    assert run.exit_status == 0 and PASS_LINE in run.stdout, (
        f"ended with {run.ending}: {run.stdout}"
        + (f" (its float outputs pass through the C library's {', '.join(called)}, whose rounding differs between"
           " the host's library and the board's: give bundles their own, as packager/templates/float_math_*.h.in)"
           if called else ""))


LIBRARY_TRANSCENDENTALS = ("expf", "expm1f", "logf", "log1pf", "powf", "tanhf", "erff", "sinf", "cosf", "exp", "log",
                           "pow", "tanh")
"""C library functions whose results the C standard leaves to each library to round (sqrt is exact everywhere)."""


def _library_transcendentals(bundle) -> list[str]:
    """The LIBRARY_TRANSCENDENTALS the bundle's kernels call, when it has a float output (none otherwise)."""
    if not any(dtype.startswith("float") for dtype, _ in bundle_outputs(bundle)):
        return []
    kernels = "\n".join(path.read_text() for path in bundle.out_dir.glob("*_kernels.c"))
    return [name for name in LIBRARY_TRANSCENDENTALS if re.search(rf"\b{name}\(", kernels)]




def test_the_cache_keeps_the_emulated_cross_build_beside_the_bundle(compiled) -> None:
    """The session's cache compiles with keep_cross_build: the self-test's objects and ELF move beside the bundle
    (conftest.cross_build_of), which the pairs' comparing driver is linked with; the bundle's folder and archive
    hold no cross build, as without it."""
    import tarfile

    bundle = compiled("tflm/hello_world_int8.tflite", "cortex-m4f")
    runner = profile_build_config("cortex-m4f").emulated
    kept = cross_build_of(bundle)
    assert kept is not None and (kept / "selftest.elf").is_file()
    assert (kept / "hello_world_int8_kernels.o").is_file()
    assert not (bundle.out_dir / runner.build_dir).exists()
    with tarfile.open(bundle.archive) as archive:
        assert not [name for name in archive.getnames() if f"/{runner.build_dir}" in name]
