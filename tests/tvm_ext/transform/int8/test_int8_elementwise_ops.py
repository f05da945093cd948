"""int8 elementwise operators through the real pipeline (tvm_ext.compile, lowpower), bit-exact with TFLite Micro.

Each operator gets one model built here (tests/tflite_builder.py) holding several independent instances
of it, each with its own inputs and output: awkward shapes (odd sizes, one channel), broadcasting on each
axis, a lower-rank and a scalar operand, constant operands, every fused activation and scales whose
rescale is above and below one. The bundle's own self-test must report every output bit-identical to
TFLite Micro (also built with the strict warnings and the sanitizers), and the bundle's C, called on random
inputs, must equal TFLite Micro's outputs exactly.
"""

from __future__ import annotations

import ctypes
import json
import re
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import pytest

tflite = pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from tflite.ActivationFunctionType import ActivationFunctionType  # noqa: E402

from c_checks import strict_sanitized_selftest  # noqa: E402
from emulator.tools import missing_tools  # noqa: E402
from test_e2e_int8_models import shared_library  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402
from tvm_ext.compile import CompileError, compile  # noqa: E402
from tvm_ext.reference.runtimes import _tflite_micro_interpreter  # noqa: E402

RUNS = 20
ACTIVATIONS = (ActivationFunctionType.NONE, ActivationFunctionType.RELU, ActivationFunctionType.RELU6,
               ActivationFunctionType.RELU_N1_TO_1)


@dataclass(frozen=True)
class Case:
    """One instance of a binary operator: operand shapes, and an operand's constant values if it has one."""

    lhs: tuple[int, ...]
    rhs: tuple[int, ...]
    constant_lhs: Optional[np.ndarray] = None
    constant_rhs: Optional[np.ndarray] = None


_RNG = np.random.default_rng(15)
BINARY_CASES = (
    Case((3, 7), (3, 7)),  # odd sizes
    Case((1, 1, 1, 1), (1, 1, 1, 1)),  # one element, one channel
    Case((2, 3, 5), (1, 3, 5)),  # broadcast on axis 0
    Case((2, 3, 5), (2, 1, 5)),  # ... axis 1
    Case((2, 3, 5), (2, 3, 1)),  # ... axis 2
    Case((1, 3, 1), (2, 1, 5)),  # both operands broadcast
    Case((2, 1, 3, 5), (5,)),  # lower rank
    Case((2, 3), ()),  # scalar input
    Case((2, 3), (), constant_rhs=np.array(-77, np.int8)),  # constant scalar
    Case((3, 1), (3, 4), constant_lhs=_RNG.integers(-128, 128, (3, 1)).astype(np.int8)),  # constant tensor
)
# (lhs, rhs, output) per-tensor quantizations, cycled through the cases: rescales above and below one,
# zero points at both ends of int8.
QUANTIZATIONS = (
    (Quantization((0.05,), (3,)), Quantization((0.07,), (-2,)), Quantization((0.04,), (-10,))),
    (Quantization((0.5,), (-128,)), Quantization((0.25,), (127,)), Quantization((0.1,), (5,))),
    (Quantization((0.003,), (0,)), Quantization((0.2,), (-7,)), Quantization((0.02,), (0,))),
)
OPERATORS = {  # TFLite builtin: its options table, if it has a fused activation
    "ADD": "AddOptions",
    "SUB": "SubOptions",
    "MUL": "MulOptions",
    "DIV": "DivOptions",  # random divisors include the zero point: TFLite Micro's (release) division by zero
    "MAXIMUM": None,
    "MINIMUM": None,
    "SQUARED_DIFFERENCE": None,
}


def binary_model(builtin: str, options_table: Optional[str]) -> Model:
    """One ``builtin`` operator per case, each with its own graph inputs and output."""
    tensors, operators, inputs, outputs = [], [], [], []
    for index, case in enumerate(BINARY_CASES):
        lhs_quant, rhs_quant, out_quant = QUANTIZATIONS[index % len(QUANTIZATIONS)]
        operands = []
        for side, shape, quant, constant in (("lhs", case.lhs, lhs_quant, case.constant_lhs),
                                            ("rhs", case.rhs, rhs_quant, case.constant_rhs)):
            operands.append(len(tensors))
            if constant is None:
                inputs.append(len(tensors))
            tensors.append(Tensor(f"case{index}_{side}", shape, "int8", quant, data=constant))
        outputs.append(len(tensors))
        tensors.append(Tensor(f"case{index}_out", np.broadcast_shapes(case.lhs, case.rhs), "int8", out_quant))
        activation = ACTIVATIONS[index % len(ACTIVATIONS)]
        options = Options(options_table, {"FusedActivationFunction": activation}) if options_table else None
        operators.append(Operator(builtin, tuple(operands), (outputs[-1],), options))
    return Model(tensors, operators, tuple(inputs), tuple(outputs))


UNARY_SHAPES = ((3, 7), (1, 1, 1, 1), (2, 3, 5), (5,), ())
# (input, output) per-tensor quantizations, cycled through the shapes: the same (as converters write RELU6),
# a rescale above and below one, zero points at both ends of int8 (6.0 beyond int8 at scale 0.01), a scale
# wide enough for LOGISTIC to saturate beyond its input radius, one fine enough for HARD_SWISH's "relu-ish"
# rescale to shift right (scales 0.05 and 0.2 shift it left, 0.01 not at all).
UNARY_QUANTIZATIONS = (
    (Quantization((0.05,), (-20,)), Quantization((0.05,), (-20,))),
    (Quantization((0.05,), (3,)), Quantization((0.03,), (-128,))),
    (Quantization((0.01,), (-128,)), Quantization((0.2,), (127,))),
    (Quantization((0.2,), (10,)), Quantization((0.1,), (-3,))),
    (Quantization((0.002,), (0,)), Quantization((0.001,), (-5,))),
)
@dataclass(frozen=True)
class Unary:
    """How a unary operator is built: its options table, and the output quantization it requires."""

    options: Optional[Options] = None
    output: Optional[Quantization] = None


UNARY_OPERATORS = {
    "RELU": Unary(),
    "RELU6": Unary(),
    "LEAKY_RELU": Unary(Options("LeakyReluOptions", {"Alpha": 0.3})),
    "LOGISTIC": Unary(output=Quantization((1 / 256,), (-128,))),
    "TANH": Unary(output=Quantization((1 / 128,), (0,))),
    "HARD_SWISH": Unary(),
    "ABS": Unary(),
}


def unary_model(builtin: str, unary: Unary, dtype: str = "int8",
                quantizations: tuple[tuple[Quantization, Quantization], ...] = UNARY_QUANTIZATIONS) -> Model:
    """One ``builtin`` operator per shape, each with its own graph input and output of ``dtype`` (int8, or int16:
    16x8), (input, output) quantizations cycled through ``quantizations``."""
    tensors, operators = [], []
    for index, shape in enumerate(UNARY_SHAPES):
        in_quant, out_quant = quantizations[index % len(quantizations)]
        tensors += [Tensor(f"case{index}_in", shape, dtype, in_quant),
                    Tensor(f"case{index}_out", shape, dtype, unary.output or out_quant)]
        operators.append(Operator(builtin, (2 * index,), (2 * index + 1,), unary.options))
    return Model(tensors, operators, tuple(range(0, len(tensors), 2)), tuple(range(1, len(tensors), 2)))


def assert_bit_exact_with_tflite_micro(model: Model, tmp_path, views: frozenset[str] = frozenset(),
                                       inputs: Sequence[np.ndarray] = (), target="lowpower") -> None:
    """Compile ``model`` for ``target`` (a profile or its name; lowpower's C); its self-test (and, where its
    compiler makes host programs, its strict sanitized build's), the given ``inputs`` (one value per graph input, if any) and RUNS random
    inputs (over the whole range of each input's integer type) through the bundle's C on the host must match
    TFLite Micro exactly. ``views`` names the outputs whose operator must become a view (no kernel of
    its own)."""
    path = tmp_path / "model.tflite"
    path.write_bytes(build(model))
    bundle = compile(path, target, tmp_path / "out")
    report = bundle.selftest.output
    assert bundle.selftest.passed and len(bundle.selftest.outputs) == len(model.outputs), report
    assert all(output.bit_identical for output in bundle.selftest.reports), report
    # Each kernel is labelled with its own operator (the pass found each operator's TFLite index).
    calls = json.loads((bundle.out_dir / "manifest.json").read_text())["calls"]
    labels = {layer for call in calls for layer in call["layers"]}
    kernels = {model.tensors[op.outputs[0]].name: f"{model.tensors[op.outputs[0]].name} ({op.builtin})"
               for op in model.operators}
    assert labels >= {label for name, label in kernels.items() if name not in views}, labels
    assert not labels & {label for name, label in kernels.items() if name in views}, labels
    if bundle.build.runs_on_host:  # a cross-compiled bundle's flags (-mthumb) are not the host compiler's
        strict = strict_sanitized_selftest(bundle.out_dir, tmp_path / "strict")
        assert strict.returncode == 0 and "PASS" in strict.stdout, strict.stdout + strict.stderr
    run = getattr(shared_library(bundle, tmp_path), f"{bundle.plan.model}_run")
    interpreter = _tflite_micro_interpreter(path.read_bytes())  # an arena as large as the compile's reference needed
    ins = [np.zeros(model.tensors[i].shape, model.tensors[i].dtype) for i in model.inputs]
    outs = [np.zeros(model.tensors[i].shape, model.tensors[i].dtype) for i in model.outputs]
    # One input and one output are passed as they are; with several of either, both as structs of pointers.
    plain = len(ins) == len(outs) == 1
    in_arg = ctypes.c_void_p(ins[0].ctypes.data) if plain else ctypes.byref(
        (ctypes.c_void_p * len(ins))(*(a.ctypes.data for a in ins)))
    out_arg = ctypes.c_void_p(outs[0].ctypes.data) if plain else ctypes.byref(
        (ctypes.c_void_p * len(outs))(*(a.ctypes.data for a in outs)))
    rng = np.random.default_rng(2026)
    random_inputs = ([rng.integers(np.iinfo(a.dtype).min, np.iinfo(a.dtype).max, a.shape, endpoint=True) for a in ins]
                     for _ in range(RUNS))
    for values in ([inputs] if inputs else []) + list(random_inputs):
        for position, (array, value) in enumerate(zip(ins, values, strict=True)):
            array[...] = value
            interpreter.set_input(array, position)
        assert run(in_arg, out_arg) == 0
        interpreter.invoke()
        for position, array in enumerate(outs):
            np.testing.assert_array_equal(array, np.asarray(interpreter.get_output(position)),
                                          err_msg=model.tensors[model.outputs[position]].name)


@pytest.mark.parametrize("builtin", sorted(OPERATORS))
def test_binary_operator_is_bit_exact_with_tflite_micro(builtin, tmp_path):
    assert_bit_exact_with_tflite_micro(binary_model(builtin, OPERATORS[builtin]), tmp_path)


def assert_refused_in_one_line(model: Model, operator: str, tmp_path) -> None:
    """Compiling ``model`` fails with a one-line error naming ``operator``."""
    path = tmp_path / "model.tflite"
    path.write_bytes(build(model))
    with pytest.raises(CompileError) as refused:
        compile(path, "lowpower", tmp_path / "out")
    message = str(refused.value)
    assert "\n" not in message and operator in message, message


@pytest.mark.parametrize("builtin", UNARY_OPERATORS)
def test_activation_operator_is_bit_exact_with_tflite_micro(builtin, tmp_path):
    assert_bit_exact_with_tflite_micro(unary_model(builtin, UNARY_OPERATORS[builtin]), tmp_path)


# (input, output) quantizations of the exhaustive check of the table operators (LOGISTIC and TANH write their
# fixed output quantization instead): fine input scales whose whole int8 range stays inside LOGISTIC's input
# radius, coarse ones that saturate beyond it, HARD_SWISH's "relu-ish" rescale shifting right (0.002), not at all
# (0.01) and left (the others), zero points at both ends of int8 and between.
EXHAUSTIVE_QUANTIZATIONS = (
    (Quantization((0.002,), (0,)), Quantization((0.001,), (-5,))),
    (Quantization((0.01,), (-128,)), Quantization((0.02,), (-20,))),
    (Quantization((0.02,), (-128,)), Quantization((0.03,), (-128,))),
    (Quantization((0.0478,), (37,)), Quantization((0.05,), (3,))),
    (Quantization((0.1,), (127,)), Quantization((0.2,), (127,))),
    (Quantization((0.5,), (-3,)), Quantization((0.1,), (-3,))),
)
INT8_VALUES = np.arange(-128, 128).astype(np.int8)


@pytest.mark.parametrize("builtin", ["LOGISTIC", "TANH", "HARD_SWISH"])
def test_every_int8_input_of_a_table_operator_is_bit_exact_with_tflite_micro(builtin, tmp_path):
    """All 256 inputs of one instance per quantization of EXHAUSTIVE_QUANTIZATIONS: every table entry."""
    unary = UNARY_OPERATORS[builtin]
    tensors, operators = [], []
    for index, (in_quant, out_quant) in enumerate(EXHAUSTIVE_QUANTIZATIONS):
        tensors += [Tensor(f"case{index}_in", INT8_VALUES.shape, "int8", in_quant),
                    Tensor(f"case{index}_out", INT8_VALUES.shape, "int8", unary.output or out_quant)]
        operators.append(Operator(builtin, (2 * index,), (2 * index + 1,)))
    model = Model(tensors, operators, tuple(range(0, len(tensors), 2)), tuple(range(1, len(tensors), 2)))
    assert_bit_exact_with_tflite_micro(model, tmp_path, inputs=[INT8_VALUES] * len(EXHAUSTIVE_QUANTIZATIONS))


# (lhs, rhs, output) quantizations of the exhaustive DIV check: rescales of 2^5, 2^0 and 2^12 (tiny quotients,
# where TFLite Micro's shifts pass 31 bits, and exact ties), zero points at both ends of int8 and between.
DIV_QUANTIZATIONS = (
    (Quantization((0.05,), (3,)), Quantization((0.07,), (-2,)), Quantization((0.04,), (-10,))),
    (Quantization((0.5,), (-128,)), Quantization((0.25,), (127,)), Quantization((0.1,), (5,))),
    (Quantization((0.003,), (0,)), Quantization((0.2,), (-7,)), Quantization((0.02,), (0,))),
    (Quantization((0.02,), (10,)), Quantization((0.01,), (0,)), Quantization((0.0005,), (-100,))),
)


@pytest.mark.parametrize("quants", DIV_QUANTIZATIONS, ids=lambda q: f"scale{q[1].scales[0]}_zp{q[1].zero_points[0]}")
def test_every_pair_of_int8_div_operands_is_bit_exact_with_tflite_micro(quants, tmp_path):
    """All 65,536 (numerator, divisor) pairs of one quantization of DIV_QUANTIZATIONS, the divisor's zero point
    (a division by zero) included: one model per quantization, whose inputs and outputs (192 KiB) fit the
    lowpower profile's SRAM."""
    tensors = [Tensor(f"{side}", (256, 256), "int8", quant) for side, quant in zip(("lhs", "rhs", "out"), quants)]
    model = Model(tensors, (Operator("DIV", (0, 1), (2,), Options("DivOptions")),), (0, 1), (2,))
    inputs = [np.repeat(INT8_VALUES[:, None], 256, axis=1), np.repeat(INT8_VALUES[None, :], 256, axis=0)]
    assert_bit_exact_with_tflite_micro(model, tmp_path, inputs=inputs)


@pytest.mark.parametrize("builtin", ["ADD", "SUB", "MUL"])
def test_every_int8_input_of_an_operator_with_a_constant_scalar_is_a_bit_exact_lookup(builtin, tmp_path):
    """All 256 inputs of ``builtin`` with a constant scalar, per quantization of QUANTIZATIONS, the constant on
    the right and on the left (SUB's order matters), the fused activations cycled: each kernel is a lookup in the
    256-entry table of its outputs (tvm_ext/kernels/int8_tables.py `binary_scalar_table`: a function of one int8
    value), no rescale of its own, every table entry bit-exact with TFLite Micro."""
    tensors, operators, outputs = [], [], []
    for index, (lhs_quant, rhs_quant, out_quant) in enumerate(QUANTIZATIONS):
        for constant_on_left in (False, True):
            case = 2 * index + int(constant_on_left)
            constant = Tensor(f"case{case}_constant", (), "int8", lhs_quant if constant_on_left else rhs_quant,
                              data=np.array((61 * case + 51) % 256 - 128, np.int8))
            data = Tensor(f"case{case}_in", INT8_VALUES.shape, "int8", rhs_quant if constant_on_left else lhs_quant)
            operands = (len(tensors) + 1, len(tensors)) if constant_on_left else (len(tensors), len(tensors) + 1)
            tensors += [data, constant, Tensor(f"case{case}_out", INT8_VALUES.shape, "int8", out_quant)]
            outputs.append(len(tensors) - 1)
            activation = ACTIVATIONS[case % len(ACTIVATIONS)]
            operators.append(Operator(builtin, operands, (outputs[-1],),
                                      Options(OPERATORS[builtin], {"FusedActivationFunction": activation})))
    inputs = tuple(range(0, len(tensors), 3))
    model = Model(tensors, operators, inputs, tuple(outputs))
    assert_bit_exact_with_tflite_micro(model, tmp_path, inputs=[INT8_VALUES] * len(inputs))
    kernels = next((tmp_path / "out").glob("*_kernels.c")).read_text()
    assert "multiply_by_quantized_multiplier" not in kernels and "+ 128)]" in kernels, kernels


@pytest.mark.parametrize("gate", ["LOGISTIC", "TANH"])
def test_every_int8_input_of_a_product_with_its_own_gate_is_a_bit_exact_lookup(gate, tmp_path):
    """A swish x * sigmoid(x) (and x * tanh(x)) as TFLite writes it, ``gate`` then MUL of the gate's input and output,
    per quantization of EXHAUSTIVE_QUANTIZATIONS (the input's, the product's), the operands in both orders and the
    fused activations cycled, on all 256 inputs: each product is one lookup of x in the table of its outputs
    (tvm_ext/transform/int8/gated_product.py), no rescale of its own and no gate kernel (its only reader the MUL),
    every entry bit-exact with TFLite Micro. Where the gate is also a model output its own kernel stays; a MUL of a
    value and the gate of another keeps the MUL's kernel (both compared too)."""
    gate_quant = UNARY_OPERATORS[gate].output
    tensors, operators, inputs, outputs = [], [], [], []
    for index, (in_quant, out_quant) in enumerate(EXHAUSTIVE_QUANTIZATIONS):
        x = len(tensors)
        tensors += [Tensor(f"case{index}_x", INT8_VALUES.shape, "int8", in_quant),
                    Tensor(f"case{index}_gate", INT8_VALUES.shape, "int8", gate_quant),
                    Tensor(f"case{index}_out", INT8_VALUES.shape, "int8", out_quant)]
        operands = (x, x + 1) if index % 2 == 0 else (x + 1, x)
        operators += [Operator(gate, (x,), (x + 1,)),
                      Operator("MUL", operands, (x + 2,), Options("MulOptions", {
                          "FusedActivationFunction": ACTIVATIONS[index % len(ACTIVATIONS)]}))]
        inputs.append(x)
        outputs += [x + 2, x + 1] if index == 0 else [x + 2]
    model = Model(tensors, operators, tuple(inputs), tuple(outputs))
    folded = frozenset(f"case{index}_gate" for index in range(1, len(EXHAUSTIVE_QUANTIZATIONS)))  # no call of their own
    assert_bit_exact_with_tflite_micro(model, tmp_path, folded, inputs=[INT8_VALUES] * len(inputs))
    kernels = next((tmp_path / "out").glob("*_kernels.c")).read_text()
    assert "multiply_by_quantized_multiplier" not in kernels, kernels
    # one lookup call per product, and the first case's gate (a model output) a lookup of its own
    calls = json.loads((tmp_path / "out" / "manifest.json").read_text())["calls"]
    assert len(calls) == len(EXHAUSTIVE_QUANTIZATIONS) + 1, calls


def _every_pair_model(builtin: str) -> Model:
    """One ``builtin`` per quantization of QUANTIZATIONS: an lhs column [256, 1] broadcast against an rhs row
    [1, 256] (fed every int8 value: all 65,536 operand pairs), the fused activations cycled."""
    options_table = OPERATORS[builtin]
    tensors, operators = [], []
    for index, (lhs_quant, rhs_quant, out_quant) in enumerate(QUANTIZATIONS):
        tensors += [Tensor(f"case{index}_lhs", (256, 1), "int8", lhs_quant),
                    Tensor(f"case{index}_rhs", (1, 256), "int8", rhs_quant),
                    Tensor(f"case{index}_out", (256, 256), "int8", out_quant)]
        options = Options(options_table, {"FusedActivationFunction": ACTIVATIONS[index % len(ACTIVATIONS)]}) \
            if options_table else None
        operators.append(Operator(builtin, (3 * index, 3 * index + 1), (3 * index + 2,), options))
    inputs = tuple(k for index in range(len(QUANTIZATIONS)) for k in (3 * index, 3 * index + 1))
    return Model(tensors, operators, inputs, tuple(3 * index + 2 for index in range(len(QUANTIZATIONS))))


EVERY_PAIR = [INT8_VALUES[:, None], INT8_VALUES[None, :]] * len(QUANTIZATIONS)
"""The inputs of `_every_pair_model`."""


@pytest.mark.parametrize("builtin", ["ADD", "SUB", "SQUARED_DIFFERENCE"])
def test_every_pair_of_int8_operands_of_a_tabled_rescale_is_bit_exact_with_tflite_micro(builtin, tmp_path):
    """All 65,536 operand pairs of ``builtin`` per quantization of QUANTIZATIONS (`_every_pair_model`): outputs of at
    least kernels.elementwise.TABLED_ELEMENTS elements, so the operand that is not the larger-scale one reads its
    rescaled values from a table (int8_tables `rescaled_operand_table`, indexed by the operand's byte, the other
    operand's zero point term in it), every entry bit-exact with TFLite Micro."""
    assert_bit_exact_with_tflite_micro(_every_pair_model(builtin), tmp_path, inputs=EVERY_PAIR)
    kernels = next((tmp_path / "out").glob("*_kernels.c")).read_text()
    assert kernels.count("(uint8_t)") >= len(QUANTIZATIONS), kernels  # each kernel reads a table by the byte


@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
@pytest.mark.parametrize("builtin", ["ADD", "SUB", "SQUARED_DIFFERENCE"])
def test_every_pair_through_the_dsp_kernel_from_tabled_values_is_bit_exact(builtin, tmp_path):
    """The same on cortex-m4f, whose kernel sums the tabled (doubled) values and rescales the sum in one rounding
    high product (backends/cortex_m/schedules/dsp_add.py, tvm_ext.kernels.elementwise.add_from_values): the
    bundle's C on the host (the helper's portable steps) every pair, its self-test under QEMU random inputs."""
    assert_bit_exact_with_tflite_micro(_every_pair_model(builtin), tmp_path, inputs=EVERY_PAIR, target="cortex-m4f")
    kernels = next((tmp_path / "out").glob("*_kernels.c")).read_text()
    definitions = re.findall(r"^void \w+\(", kernels, flags=re.MULTILINE)
    # every kernel rescales through the helper (layers of equal arithmetic may share one kernel across their constants)
    assert definitions and kernels.count("_add_s8_value(") == len(definitions), kernels
