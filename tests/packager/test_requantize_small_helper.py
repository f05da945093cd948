"""The cheap requantization epilogue (issue 16): the small-accumulator variant of the double-rounding helper
and the int8 saturation helper (packager/fixed_point_c.py) give TFLite's results bit for bit on their
domains, checked on the host (their portable C, strict warnings, UBSan and ASan) and under QEMU on the
Cortex-M profiles (their SMMULR / SSAT code where the core has it) against the numpy reference over random
values and every edge (accumulators -2^30 and 2^30 - 1, shifts -31..-1, multipliers 0 and 2^30 .. 2^31 - 1);
a MAC layer takes the variant exactly when its accumulators are provably small, and an int8 ADD takes it for
its three rescales (the magnitude bounds it relies on are checked against the reference)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from tvm import relax

import tflite_int8_reference as ref
from c_checks import SANITIZE, STRICT_WARNINGS, run_c_program_under_qemu, run_c_program_under_riscv_qemu
from emulator.tools import RISCV_TOOLS, missing_tools
from packager.fixed_point_c import (SATURATE_INT8, SATURATE_INT16, SMALL_ACCUMULATOR_LIMIT, SMALL_RIGHT_SHIFT,
                                    SMALL_RIGHT_SHIFT_MULH, requantize_helper_name, requantize_helpers_c)
from backends import backend_of
from required_tools import require_tools
from target.loading import load_profile
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build
from tvm_ext.compile import compile
from tvm_ext.kernels import Rounding
from tvm_ext.kernels.fixed_point import quantized_multiplier_bound
from tvm_ext.kernels.quant_params import ActivationRange
from tvm_ext.transform.int8.binary import VALUES_ELEMENTS
from tvm_ext.transform.int8.mac import MacKernel

_PROGRAM = """#include <stdint.h>
#include <stdio.h>
{helpers}
int main(void)
{{
    int32_t triple[3];
    while (fread(triple, sizeof triple, 1, stdin) == 1) {{
        const int32_t result = {call};
        fwrite(&result, sizeof result, 1, stdout);
    }}
    return 0;
}}
"""


def _run_helper(tmp_path, helper: str, call: str, cases: np.ndarray, extra_c: str = "") -> np.ndarray:
    """`call` (C over triple[0..2]) with `helper` defined, then `extra_c`, on every row of the int32 [n, 3] `cases`."""
    source = tmp_path / "helper.c"
    source.write_text(_PROGRAM.format(helpers=requantize_helpers_c("m", [helper]) + extra_c, call=call))
    program = tmp_path / "helper"
    subprocess.run(["gcc", "-std=c99", "-O1", "-Wall", "-Wextra", *STRICT_WARNINGS.split(), *SANITIZE.split(),
                    str(source), "-o", str(program)], check=True)
    run = subprocess.run([str(program)], input=cases.astype(np.int32).tobytes(), capture_output=True, check=True)
    assert run.stderr == b"", run.stderr.decode()[:2000]
    return np.frombuffer(run.stdout, np.int32)


def _small_cases(count: int) -> np.ndarray:
    """[n, 3]: accumulators in [-2^30, 2^30) (half of them near zero), multipliers in [2^30, 2^31) or 0,
    shifts -31..-1; plus the grid of every edge accumulator x edge multiplier x shift."""
    rng = np.random.default_rng(16)
    limit = SMALL_ACCUMULATOR_LIMIT
    acc = np.concatenate([rng.integers(-limit, limit, count // 2), rng.integers(-70_000, 70_000, count // 2)])
    multiplier = rng.integers(2**30, 2**31, count)
    shift = rng.integers(-31, 0, count)
    edge_acc = [-limit, -limit + 1, -(2**29), -3, -2, -1, 0, 1, 2, 3, 2**29, limit - 2, limit - 1]
    edge_multiplier = [0, 2**30, 2**30 + 1, 3 * 2**29, 2**31 - 2, 2**31 - 1]
    grid = [(a, m, s) for a in edge_acc for m in edge_multiplier for s in range(-31, 0)]
    return np.concatenate([np.stack([acc, multiplier, shift], axis=1), np.array(grid)]).astype(np.int64)


@pytest.mark.parametrize("form", [SMALL_RIGHT_SHIFT, SMALL_RIGHT_SHIFT_MULH])
def test_small_accumulator_helper_matches_tflite_on_its_domain(tmp_path, form):
    """The portable form and the RISC-V backend's (MULH) alike."""
    cases = _small_cases(400_000)
    got = _run_helper(tmp_path, form, f"{requantize_helper_name('m', form)}(triple[0], triple[1], triple[2])", cases)
    expected = ref.multiply_by_quantized_multiplier(cases[:, 0], cases[:, 1], cases[:, 2]).astype(np.int32)
    mismatches = np.flatnonzero(got != expected)
    assert not mismatches.size, [tuple(cases[i]) + (got[i], expected[i]) for i in mismatches[:5]]


@pytest.mark.parametrize("form", [SMALL_RIGHT_SHIFT, SMALL_RIGHT_SHIFT_MULH])
def test_small_accumulator_helper_matches_tflite_with_constant_shifts(tmp_path, form):
    """As above, each shift a constant of its call (a kernel's, inlined): the MULH form rounds a constant shift its
    own way (`__builtin_constant_p`), a shift read at run time (a shared kernel's) the portable way."""
    name = requantize_helper_name("m", form)
    cases = _small_cases(100_000)
    by_shift = "".join(f"    case {e}: return {name}(acc, multiplier, {e});\n" for e in range(-31, 0))
    constant = (f"static int32_t constant_shift(int32_t acc, int32_t multiplier, int32_t shift)\n{{\n"
                f"    switch (shift) {{\n{by_shift}    default: return 0;\n    }}\n}}\n")
    got = _run_helper(tmp_path, form, "constant_shift(triple[0], triple[1], triple[2])", cases, constant)
    expected = ref.multiply_by_quantized_multiplier(cases[:, 0], cases[:, 1], cases[:, 2]).astype(np.int32)
    mismatches = np.flatnonzero(got != expected)
    assert not mismatches.size, [tuple(cases[i]) + (got[i], expected[i]) for i in mismatches[:5]]


@pytest.mark.parametrize("helper, low, high", [(SATURATE_INT8, -128, 127), (SATURATE_INT16, -32768, 32767)])
def test_saturation_helpers_clamp_to_their_type(tmp_path, helper, low, high):
    values = np.concatenate([np.arange(-70_000, 70_000), [-2**31, -2**31 + 1, 2**31 - 2, 2**31 - 1]])
    cases = np.stack([values, np.zeros_like(values), np.zeros_like(values)], axis=1)
    got = _run_helper(tmp_path, helper, f"{requantize_helper_name('m', helper)}(triple[0])", cases)
    np.testing.assert_array_equal(got, np.clip(values, low, high))


FULL_RANGE = ActivationRange(-128, 127)


def _fully_connected(weight: np.ndarray, bias: np.ndarray, input_zero_point: int, dtype: str = "int8") -> MacKernel:
    """A FULLY_CONNECTED record (weight [units, depth], multiplier 2^30) with only what its epilogue reads."""
    units = weight.shape[0]
    data = relax.Var("data", relax.TensorType((1, weight.shape[1]), dtype))
    return MacKernel("FULLY_CONNECTED", None, None, data, input_zero_point, weight, relax.const(bias),
                     np.full(units, 2**30), np.full(units, -3), 0, FULL_RANGE, Rounding.DOUBLE, channel_axis=0)


def _epilogue(kernel: MacKernel) -> tuple[bool, np.ndarray]:
    """Whether the layer's requantization takes the small-accumulator helpers, and the bias it is given."""
    call = kernel.kernel_call(FULL_RANGE)
    return call.kwargs["output"].small_accumulator, call.args[2].value.numpy()


@pytest.mark.parametrize("input_zero_point", [-128, 0, 127])
def test_layer_is_small_exactly_when_its_largest_accumulator_stays_below_2_pow_30(input_zero_point):
    # One output channel of all -128 weights: |sum| reaches depth * 128 * largest |x - zero point|.
    largest_input = max(abs(-128 - input_zero_point), abs(127 - input_zero_point))
    depth = (SMALL_ACCUMULATOR_LIMIT - 1) // (128 * largest_input)
    weight = np.full((2, depth), -128, np.int8)
    weight[1] = 1  # a small second channel: the largest channel decides
    slack = SMALL_ACCUMULATOR_LIMIT - 1 - depth * 128 * largest_input
    for bias, small in ((slack, True), (slack + 1, False), (-slack - 1, False)):
        assert _epilogue(_fully_connected(weight, np.array([bias, 0], np.int32), input_zero_point))[0] is small


def test_a_16x8_layer_is_never_small():
    """int16 data accumulates in int64: the int8 bound does not hold (nor apply)."""
    assert not _epilogue(_fully_connected(np.ones((1, 4), np.int8), np.zeros(1, np.int32), 0, "int16"))[0]


def test_a_huge_bias_is_kept_and_its_layer_takes_the_general_helper():
    """A dead channel's bias near 2^30 (as in vww_96_int8) reaches the epilogue as the model gives it, not
    rewritten: the layer's accumulators plus bias are not provably small, so it keeps the general
    requantization."""
    weight = np.full((2, 16), 100, np.int8)
    bias = np.array([2**30 + 5, -(2**30) - 5], np.int32)
    small, given = _epilogue(_fully_connected(weight, bias, -128))
    assert not small and given.tolist() == bias.tolist()


_ARM_SELFTEST = """#include <stdint.h>
#include <stdio.h>
#include "rq.h"
{helpers}
static const int32_t cases[][4] = {{RQ_CASES}};
int main(void)
{{
    unsigned wrong = 0;
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; ++i) {{
        const int32_t requantized = {requantize}(cases[i][0], cases[i][1], cases[i][2]);
        const int32_t saturated = {saturate}(cases[i][0]);
        const int32_t clamped = cases[i][0] < -128 ? -128 : (cases[i][0] > 127 ? 127 : cases[i][0]);
        if (requantized != cases[i][3] || saturated != clamped) {{
            if (wrong++ < 5u) {{
                printf("case %u: %ld %ld %ld -> %ld, %ld\\n", i, (long)cases[i][0], (long)cases[i][1],
                       (long)cases[i][2], (long)requantized, (long)saturated);
            }}
        }}
    }}
    printf("wrong %u\\n", wrong);
    return wrong != 0u;
}}
"""


@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
@pytest.mark.parametrize("profile", ["cortex-m4f", "cortex-m0plus"])
def test_helpers_match_tflite_under_qemu(tmp_path: Path, profile: str):
    """cortex-m4f runs the SMMULR and SSAT code, cortex-m0plus (no DSP) the portable C."""
    rng = np.random.default_rng(5)
    cases = np.concatenate([_small_cases(0), _small_cases(2000)[rng.choice(2000, 1000, replace=False)]])
    expected = ref.multiply_by_quantized_multiplier(cases[:, 0], cases[:, 1], cases[:, 2])
    rows = ", ".join("{%d, %d, %d, %d}" % (a, m, e, r) for (a, m, e), r in zip(cases.tolist(), expected.tolist()))
    helpers = requantize_helpers_c("rq", [SMALL_RIGHT_SHIFT, SATURATE_INT8])
    selftest = _ARM_SELFTEST.format(helpers=helpers, requantize=requantize_helper_name("rq", SMALL_RIGHT_SHIFT),
                                    saturate=requantize_helper_name("rq", SATURATE_INT8))
    run_cases_under_qemu(tmp_path, profile, rows, selftest)


@pytest.mark.parametrize("profile", ["rv32imc", "rv32imafc", "cortex-m0plus", "cortex-m4f", "cortex-m55", "lowpower"])
def test_only_the_riscv_bundles_define_the_mulh_form(profile: str):
    """A bundle's kernels call "double_small"; the RISC-V backend's bundles define it in the MULH form (same C name),
    every other backend's in the portable one (the Cortex-M DSP cores' SMMULR inside it)."""
    roundings = backend_of(load_profile(profile)).bundle_roundings(("double", SMALL_RIGHT_SHIFT, SATURATE_INT8))
    form = SMALL_RIGHT_SHIFT_MULH if profile.startswith("rv32") else SMALL_RIGHT_SHIFT
    assert roundings == ("double", form, SATURATE_INT8)
    assert requantize_helpers_c("m", roundings).count(f"{requantize_helper_name('m', form)}(") == 1


@pytest.mark.parametrize("profile", ["rv32imc", "rv32imafc"])
def test_mulh_form_matches_tflite_under_qemu_on_rv32(tmp_path: Path, profile: str):
    """The RISC-V backend's form (`SMALL_RIGHT_SHIFT_MULH`) built with the profile's compiler (its MUL and MULH)."""
    require_tools(RISCV_TOOLS)
    rng = np.random.default_rng(5)
    cases = np.concatenate([_small_cases(0), _small_cases(2000)[rng.choice(2000, 1000, replace=False)]])
    expected = ref.multiply_by_quantized_multiplier(cases[:, 0], cases[:, 1], cases[:, 2])
    rows = ", ".join("{%d, %d, %d, %d}" % (a, m, e, r) for (a, m, e), r in zip(cases.tolist(), expected.tolist()))
    (tmp_path / "rq.h").write_text(f"#define RQ_CASES {rows}\n")
    source = tmp_path / "selftest.c"
    source.write_text(_ARM_SELFTEST.format(helpers=requantize_helpers_c("rq", [SMALL_RIGHT_SHIFT_MULH, SATURATE_INT8]),
                                           requantize=requantize_helper_name("rq", SMALL_RIGHT_SHIFT_MULH),
                                           saturate=requantize_helper_name("rq", SATURATE_INT8)))
    result = run_c_program_under_riscv_qemu(tmp_path, profile, source)
    assert result.exit_status == 0 and "wrong 0" in result.stdout, result.ending() + "\n" + result.stdout


def run_cases_under_qemu(folder: Path, profile: str, rows: str, selftest_c: str) -> None:
    """Build `selftest_c` (its cases are rq.h's RQ_CASES: `rows`) as the bundle "rq" for `profile` in `folder`,
    run it under QEMU, and check that it exits 0 having printed "wrong 0"."""
    result = run_c_program_under_qemu(folder, profile, {"rq.h": f"#define RQ_CASES {rows}\n", "selftest.c": selftest_c})
    assert result.exit_status == 0 and "wrong 0" in result.stdout, result.stdout + result.stderr


def test_quantized_multiplier_bound_holds_for_the_largest_input():
    rng = np.random.default_rng(9)
    largest = rng.integers(1, 2**31, 20_000)
    multiplier = rng.integers(2**30, 2**31, 20_000)
    shift = rng.integers(-31, 1, 20_000)
    for sign in (-1, 1):
        reached = np.abs(ref.multiply_by_quantized_multiplier(sign * largest, multiplier, shift))
        bounds = np.array([quantized_multiplier_bound(int(a), int(m), int(e))
                           for a, m, e in zip(largest, multiplier, shift)])
        assert np.all(reached <= bounds) and np.all(bounds - reached <= 2)


def test_int8_add_rescales_with_the_biased_helper_bit_exactly_under_qemu(tmp_path):
    """TFLite's ADD of two inputs of different scales: the larger's rescale is an exact halving, the other's
    and the output's the small-accumulator helper, which the DSP cores' element loop computes as the biased helper
    with the zero point (backends/cortex_m/schedules/biased_requantize.py); the self-test on the emulated
    Cortex-M4F (SMMLAR) matches TFLite Micro bit for bit. Fewer output elements than VALUES_ELEMENTS: larger ADDs
    take the DSP cores' kernel from tabled values (tests/backends/cortex_m/test_dsp_add.py), not this generic
    one."""
    shape = (2, 7, 16)
    assert np.prod(shape) < VALUES_ELEMENTS
    quantizations = (Quantization((0.05,), (-128,)), Quantization((0.11,), (127,)), Quantization((0.13,), (-3,)))
    tensors = [Tensor(name, shape, "int8", quant) for name, quant in zip(("lhs", "rhs", "out"), quantizations)]
    add = Operator("ADD", (0, 1), (2,), Options("AddOptions", {"FusedActivationFunction": 0}))
    model = tmp_path / "add.tflite"
    model.write_bytes(build(Model(tensors, [add], (0, 1), (2,))))
    bundle = compile(model, "cortex-m4f", tmp_path / "out")
    assert bundle.selftest.passed
    kernels = (tmp_path / "out" / "add_kernels.c").read_text()
    small = requantize_helper_name("add", SMALL_RIGHT_SHIFT)
    assert kernels.count("add_requantize_biased") == 2 and f"{small}(" not in kernels, kernels
    assert "requantize_double(" not in kernels
