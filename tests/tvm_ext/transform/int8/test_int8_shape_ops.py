"""int8 data-movement operators through the real pipeline (tvm_ext.compile, lowpower), bit-exact with TFLite Micro.

CONCATENATION, PAD, PADV2, TRANSPOSE, STRIDED_SLICE, SLICE, SPLIT, SPLIT_V, PACK, SQUEEZE and EXPAND_DIMS keep one
quantization: the bundle copies the stored int8 values (PAD's fill is the zero point, PADV2's its stored int8
constant), or uses a view where no byte moves. Each operator gets one model holding several independent
instances, each with its own inputs and outputs: odd sizes, one channel, size-1 dimensions, every rank the
kernels take, each axis and negative axes, zero points at both ends of int8. The bundle's self-test must be
bit-identical and its C, called on random inputs, must equal TFLite Micro exactly
(``assert_bit_exact_with_tflite_micro``). A MobileNetV2 block puts PAD between convolutions. What TFLite Micro
refuses (a CONCATENATION that would requantize, or with a fused activation) and DEPTH_TO_SPACE, still without
a lowering, are refused in one line naming the operator.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

tflite = pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")

from tflite.ActivationFunctionType import ActivationFunctionType  # noqa: E402

from c_checks import kernel_bodies  # noqa: E402
from emulator.tools import missing_tools  # noqa: E402
from test_int8_elementwise_ops import assert_bit_exact_with_tflite_micro  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402
from tvm_ext.compile import CompileError, compile  # noqa: E402

QUANTIZATIONS = (Quantization((0.05,), (3,)), Quantization((0.5,), (-128,)), Quantization((0.003,), (127,)))

# (input shape, permutation): each rank, identity, reversal, size-1 and odd dimensions moved.
PERMUTATIONS = (
    ((3, 7), (1, 0)),
    ((1, 5, 1), (2, 0, 1)),
    ((2, 3, 5), (0, 1, 2)),
    ((1, 3, 5, 1), (0, 3, 1, 2)),
    ((2, 1, 3, 5), (3, 2, 1, 0)),
    ((2, 3, 1, 5, 3), (4, 0, 3, 1, 2)),
    ((1, 1, 1, 1), (3, 1, 2, 0)),
    ((1, 6, 3, 5), (0, 2, 1, 3)),  # attention heads: the innermost axis kept, runs of 5 elements
    ((3, 2, 4, 2, 3), (1, 0, 2, 3, 4)),  # three trailing axes kept: runs of 24
    ((4, 3, 2), (1, 0, 2)),  # runs of two elements
    ((1, 3, 5), (1, 0, 2)),  # the innermost axis kept, the order of the others too: a view
    ((2, 5, 3, 6), (0, 3, 2, 1)),  # the innermost axis moved: 6 x 5 matrices (past whole 4 x 4 blocks both ways)
    ((9, 4, 1), (1, 0, 2)),  # a trailing axis of one kept, the innermost longer one moved: a 4 x 9 matrix
)

# (input shape, paddings (before, after) per axis): one axis at a time, every axis, nothing, 1-D to 5-D.
PADDINGS = (
    ((5,), ((2, 3),)),
    ((3, 7), ((1, 0), (0, 0))),
    ((3, 7), ((0, 0), (0, 2))),
    ((1, 3, 5, 1), ((0, 0), (1, 1), (2, 0), (0, 3))),
    ((2, 1, 3, 1), ((1, 2), (0, 1), (1, 0), (2, 2))),
    ((1, 1, 1, 1), ((0, 0), (0, 0), (0, 0), (0, 0))),
    ((2, 1, 3, 2, 1), ((0, 1), (1, 0), (0, 0), (2, 1), (1, 1))),
    ((1, 1, 13, 6), ((0, 0), (0, 0), (4, 0), (0, 0))),  # a causal Conv1D's padding: rows of 78 bytes copied
    ((1, 5, 7, 5), ((0, 0), (1, 2), (1, 1), (0, 0))),  # a convolution's SAME padding, odd runs
)
PADV2_VALUES = (-128, 127, 0, -7, 55, 3, -1, 9, -100)  # the stored int8 constant, one per case


def _padded(shape: tuple[int, ...], paddings) -> tuple[int, ...]:
    return tuple(size + before + after for size, (before, after) in zip(shape, paddings))


def _is_view(shape: tuple[int, ...], permutation: tuple[int, ...]) -> bool:
    """Whether the permutation keeps the order of the axes longer than one: the same bytes, a view."""
    moved = [axis for axis in permutation if shape[axis] != 1]
    return moved == sorted(moved)


TRANSPOSE_VIEWS = frozenset(f"case{index}_out" for index, case in enumerate(PERMUTATIONS) if _is_view(*case))
PAD_VIEWS = frozenset(f"case{index}_out" for index, (_, paddings) in enumerate(PADDINGS) if not np.any(paddings))


def transpose_model() -> Model:
    """One TRANSPOSE per case of PERMUTATIONS, each with its own input, permutation constant and output."""
    tensors, operators, inputs, outputs = [], [], [], []
    for index, (shape, permutation) in enumerate(PERMUTATIONS):
        quant = QUANTIZATIONS[index % len(QUANTIZATIONS)]
        inputs.append(len(tensors))
        outputs.append(len(tensors) + 2)
        tensors += [Tensor(f"case{index}_in", shape, "int8", quant),
                    Tensor(f"case{index}_perm", (len(shape),), "int32", data=np.array(permutation, np.int32)),
                    Tensor(f"case{index}_out", tuple(shape[axis] for axis in permutation), "int8", quant)]
        operators.append(Operator("TRANSPOSE", (inputs[-1], inputs[-1] + 1), (outputs[-1],)))
    return Model(tensors, operators, tuple(inputs), tuple(outputs))


def pad_model(builtin: str, dtype: str = "int8", quantizations: tuple[Quantization, ...] = QUANTIZATIONS) -> Model:
    """One PAD (or PADV2, with its constant) per case of PADDINGS, each with its own tensors of ``dtype`` (int8, or
    int16: 16x8, its PADV2 constants PADV2_VALUES scaled up by 256), quantizations cycled through ``quantizations``."""
    tensors, operators, inputs, outputs = [], [], [], []
    value_scale = 1 if dtype == "int8" else 256
    for index, (shape, paddings) in enumerate(PADDINGS):
        quant = quantizations[index % len(quantizations)]
        inputs.append(len(tensors))
        operands = [len(tensors), len(tensors) + 1]
        tensors += [Tensor(f"case{index}_in", shape, dtype, quant),
                    Tensor(f"case{index}_paddings", (len(shape), 2), "int32", data=np.array(paddings, np.int32))]
        if builtin == "PADV2":
            operands.append(len(tensors))
            tensors.append(Tensor(f"case{index}_value", (1,), dtype, quant,
                                  data=np.array([PADV2_VALUES[index] * value_scale], dtype)))
        outputs.append(len(tensors))
        tensors.append(Tensor(f"case{index}_out", _padded(shape, paddings), dtype, quant))
        operators.append(Operator(builtin, tuple(operands), (outputs[-1],)))
    return Model(tensors, operators, tuple(inputs), tuple(outputs))


def dsp_kernel_bodies(model: Model, tmp_path) -> dict[str, str]:
    """``model`` compiled for cortex-m4f (a DSP core) with its self-test under QEMU passing bit-exactly (TFLite
    Micro's outputs on its cases): the bundle's kernels' C bodies by name (tests/c_checks.py)."""
    path = tmp_path / "model.tflite"
    path.write_bytes(build(model))
    selftest = compile(path, "cortex-m4f", tmp_path / "out").selftest
    assert selftest.passed and selftest.where.startswith("mps2-") and set(selftest.max_errors) == {0}, selftest.output
    return kernel_bodies(next((tmp_path / "out").glob("*_kernels.c")).read_text())


def test_transpose_is_bit_exact_with_tflite_micro(tmp_path):
    assert_bit_exact_with_tflite_micro(transpose_model(), tmp_path, TRANSPOSE_VIEWS)


@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_transpose_as_runs_on_a_dsp_core_is_bit_exact_with_tflite_micro(tmp_path):
    """On a DSP core a TRANSPOSE that keeps its trailing axes in place is written as runs (tvm_ext/kernels/
    copy_runs.py: transpose_runs): one call of the bundle's word copy per index of the other axes; one that moves
    the innermost axis longer than one is matrices, each one call of the bundle's word transpose where it is at
    least 4 x 4 (a block), else the element-wise kernel. The self-test under QEMU passes bit-exactly."""
    bodies = dsp_kernel_bodies(transpose_model(), tmp_path)
    transposes = {name: body for name, body in bodies.items() if "_transpose" in name}
    assert len(transposes) == len(PERMUTATIONS) - len(TRANSPOSE_VIEWS), list(bodies)
    with_runs = [case for case in PERMUTATIONS if not _is_view(*case) and _matrix(*case) == (0, 0)]
    assert sum("_copy_ascending(" in body for body in transposes.values()) == len(with_runs), transposes
    with_blocks = [case for case in PERMUTATIONS if not _is_view(*case) and min(_matrix(*case)) >= 4]
    assert len(with_blocks) == 2 and sum("_transpose_s8(" in body for body in transposes.values()) == 2, transposes


def _matrix(shape: tuple[int, ...], permutation: tuple[int, ...]) -> tuple[int, int]:
    """The rows and columns of the matrices a permutation transposes: the extents of the input's and the output's
    innermost axes longer than one; (0, 0) where those are one axis (runs, or a view)."""
    rows_axis = [axis for axis in range(len(shape)) if shape[axis] > 1][-1]
    cols_axis = [axis for axis in permutation if shape[axis] > 1][-1]
    return (0, 0) if rows_axis == cols_axis else (shape[rows_axis], shape[cols_axis])


@pytest.mark.parametrize("builtin", ("PAD", "PADV2"))
def test_pad_is_bit_exact_with_tflite_micro(builtin, tmp_path):
    assert_bit_exact_with_tflite_micro(pad_model(builtin), tmp_path, PAD_VIEWS)


@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
@pytest.mark.parametrize("builtin", ("PAD", "PADV2"))
def test_pad_as_runs_on_a_dsp_core_is_bit_exact_with_tflite_micro(builtin, tmp_path):
    """On a DSP core PAD is written as runs (tvm_ext/kernels/copy_runs.py: pad_runs): the input's rows copied by
    the bundle's word copy, the padding filled; the self-test under QEMU (TFLite Micro's outputs on its cases)
    passes bit-exactly."""
    model = tmp_path / "pads.tflite"
    model.write_bytes(build(pad_model(builtin)))
    selftest = compile(model, "cortex-m4f", tmp_path / "out").selftest
    assert selftest.passed and selftest.where.startswith("mps2-") and set(selftest.max_errors) == {0}, selftest.output
    assert len(selftest.outputs) == len(PADDINGS), selftest.output
    kernels_c = next((tmp_path / "out").glob("*_kernels.c")).read_text()
    pads = {name: body for name, body in kernel_bodies(kernels_c).items() if "_pad_" in name or "_padv_" in name}
    assert len(pads) == len(PADDINGS) - len(PAD_VIEWS), list(kernel_bodies(kernels_c))
    # a run of at least two elements (the input's extent along its innermost padded axis and the axes after it)
    # is one call of the copy; a run of one element stays a store
    runs = [int(np.prod(shape[max(axis for axis, widths in enumerate(paddings) if any(widths)):]))
            for shape, paddings in PADDINGS if np.any(paddings)]
    assert sum("_copy_ascending(" in body for body in pads.values()) == sum(run >= 2 for run in runs), pads


# (input shapes, axis): each axis of 1-D to 4-D (TFLite Micro's limit), negative axes, size-1 and odd sizes,
# one to four inputs.
CONCATENATIONS = (
    (((3,), (1,), (5,)), 0),
    (((2, 3), (2, 1)), 1),
    (((1, 3), (2, 3), (1, 3)), -2),
    (((1, 3, 5, 1), (1, 3, 2, 1)), -2),
    (((2, 1, 3, 1), (2, 1, 3, 1), (2, 1, 3, 2), (2, 1, 3, 1)), 3),
    (((1, 1, 1, 1),), 1),
    (((1, 2, 3, 5), (3, 2, 3, 5)), -4),
    (((2, 1, 3, 5), (2, 4, 3, 5)), 1),
)
CONCATENATION_VIEWS = frozenset(f"case{index}_out" for index, (shapes, _) in enumerate(CONCATENATIONS)
                                if len(shapes) == 1)  # one input: a copy of it, a view


def _concatenated(shapes: tuple[tuple[int, ...], ...], axis: int) -> tuple[int, ...]:
    total = sum(shape[axis] for shape in shapes)
    return tuple(total if dim == axis % len(shapes[0]) else size for dim, size in enumerate(shapes[0]))


def concatenation_model(quantizations=None, activation: int = 0) -> Model:
    """One CONCATENATION per case of CONCATENATIONS, each with its own inputs and output, every input
    quantized as its output unless ``quantizations`` gives (inputs, output) for every case."""
    tensors, operators, inputs, outputs = [], [], [], []
    for index, (shapes, axis) in enumerate(CONCATENATIONS):
        quant = QUANTIZATIONS[index % len(QUANTIZATIONS)]
        in_quant, out_quant = quantizations or (quant, quant)
        operands = tuple(range(len(tensors), len(tensors) + len(shapes)))
        inputs += operands
        tensors += [Tensor(f"case{index}_in{piece}", shape, "int8", in_quant) for piece, shape in enumerate(shapes)]
        outputs.append(len(tensors))
        tensors.append(Tensor(f"case{index}_out", _concatenated(shapes, axis), "int8", out_quant))
        options = Options("ConcatenationOptions", {"Axis": axis, "FusedActivationFunction": activation})
        operators.append(Operator("CONCATENATION", operands, (outputs[-1],), options))
    return Model(tensors, operators, tuple(inputs), tuple(outputs))


def test_concatenation_is_bit_exact_with_tflite_micro(tmp_path):
    assert_bit_exact_with_tflite_micro(concatenation_model(), tmp_path, CONCATENATION_VIEWS)


def _refusal(model: Model, tmp_path) -> str:
    """The one-line message the compile of ``model`` is refused with."""
    path = tmp_path / "model.tflite"
    path.write_bytes(build(model))
    with pytest.raises(CompileError) as refused:
        compile(path, "lowpower", tmp_path / "out")
    message = str(refused.value)
    assert "\n" not in message, message
    return message


@pytest.mark.parametrize("quantizations", (
    (Quantization((0.05,), (3,)), Quantization((0.1,), (3,))),  # the scale differs
    (Quantization((0.05,), (3,)), Quantization((0.05,), (-3,))),  # the zero point differs
))
def test_a_concatenation_requantizing_its_inputs_is_refused_as_tflite_micro_refuses_it(quantizations, tmp_path):
    message = _refusal(concatenation_model(quantizations), tmp_path)
    assert "CONCATENATION" in message and "quantized unlike its output" in message, message


def test_a_concatenation_with_a_fused_activation_is_refused_as_tflite_micro_refuses_it(tmp_path):
    message = _refusal(concatenation_model(activation=ActivationFunctionType.RELU), tmp_path)
    assert "CONCATENATION" in message, message


# (input shape, squeezed axes): one, several, negative, none (every size-1 axis), down to a scalar.
SQUEEZES = (
    ((1, 3, 1, 5), (0,)),
    ((1, 3, 1, 5), (-2, 0)),
    ((2, 1, 3, 1), ()),
    ((1, 1, 1, 1), ()),
    ((3, 1), (1,)),
)
# (input shape, new axis): each position, negative ones, of a scalar.
EXPANSIONS = (((3, 5), 0), ((3, 5), 1), ((3, 5), 2), ((3, 5), -1), ((2, 1, 3), -4), ((), 0), ((1, 7, 1, 2), -3))


def _squeezed(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    dropped = {axis % len(shape) for axis in axes} if axes else {axis for axis, size in enumerate(shape) if size == 1}
    return tuple(size for axis, size in enumerate(shape) if axis not in dropped)


def _expanded(shape: tuple[int, ...], axis: int) -> tuple[int, ...]:
    position = axis % (len(shape) + 1)
    return shape[:position] + (1,) + shape[position:]


def reshaping_model(builtin: str) -> Model:
    """One SQUEEZE per case of SQUEEZES, or one EXPAND_DIMS (its axis a constant) per case of EXPANSIONS."""
    tensors, operators, inputs, outputs = [], [], [], []
    for index, (shape, axes) in enumerate(SQUEEZES if builtin == "SQUEEZE" else EXPANSIONS):
        quant = QUANTIZATIONS[index % len(QUANTIZATIONS)]
        inputs.append(len(tensors))
        tensors.append(Tensor(f"case{index}_in", shape, "int8", quant))
        if builtin == "SQUEEZE":
            operands, options, out_shape = (inputs[-1],), Options("SqueezeOptions", {"SqueezeDims": axes}), \
                _squeezed(shape, axes)
        else:
            tensors.append(Tensor(f"case{index}_axis", (1,), "int32", data=np.array([axes], np.int32)))
            operands, options, out_shape = (inputs[-1], inputs[-1] + 1), None, _expanded(shape, axes)
        outputs.append(len(tensors))
        tensors.append(Tensor(f"case{index}_out", out_shape, "int8", quant))
        operators.append(Operator(builtin, operands, (outputs[-1],), options))
    return Model(tensors, operators, tuple(inputs), tuple(outputs))


@pytest.mark.parametrize("builtin", ("SQUEEZE", "EXPAND_DIMS"))
def test_squeeze_and_expand_dims_are_views_bit_exact_with_tflite_micro(builtin, tmp_path):
    model = reshaping_model(builtin)
    views = frozenset(model.tensors[index].name for index in model.outputs)  # each only renames the shape
    assert_bit_exact_with_tflite_micro(model, tmp_path, views)


# (input shape, begin, size): each axis alone, every axis, size -1 (to the end), the whole tensor, 1-D to 5-D.
SLICES = (
    ((7,), (2,), (3,)),
    ((3, 7), (1, 0), (1, -1)),
    ((3, 7), (0, 6), (3, 1)),
    ((1, 5, 3, 1), (0, 1, 1, 0), (1, 3, -1, 1)),
    ((2, 1, 3, 5), (1, 0, 2, 4), (-1, -1, 1, 1)),
    ((1, 1, 1, 1), (0, 0, 0, 0), (1, 1, 1, 1)),
    ((2, 3, 1, 5, 3), (0, 1, 0, 1, 2), (2, 2, 1, 3, 1)),
)


def slice_model() -> Model:
    """One SLICE per case of SLICES, each with its own input, begin and size constants and output."""
    tensors, operators, inputs, outputs = [], [], [], []
    for index, (shape, begin, size) in enumerate(SLICES):
        quant = QUANTIZATIONS[index % len(QUANTIZATIONS)]
        inputs.append(len(tensors))
        out_shape = tuple(dim - start if length == -1 else length for dim, start, length in zip(shape, begin, size))
        tensors += [Tensor(f"case{index}_in", shape, "int8", quant),
                    Tensor(f"case{index}_begin", (len(shape),), "int32", data=np.array(begin, np.int32)),
                    Tensor(f"case{index}_size", (len(shape),), "int32", data=np.array(size, np.int32)),
                    Tensor(f"case{index}_out", out_shape, "int8", quant)]
        outputs.append(len(tensors) - 1)
        operators.append(Operator("SLICE", (inputs[-1], inputs[-1] + 1, inputs[-1] + 2), (outputs[-1],)))
    return Model(tensors, operators, tuple(inputs), tuple(outputs))


def test_slice_is_bit_exact_with_tflite_micro(tmp_path):
    model = slice_model()
    views = frozenset(model.tensors[output].name for output, (shape, _, _) in zip(model.outputs, SLICES)
                      if model.tensors[output].shape == shape)  # the whole tensor: a view
    assert_bit_exact_with_tflite_micro(model, tmp_path, views)


@dataclass(frozen=True)
class StridedSlice:
    """One STRIDED_SLICE: input shape, begin, end, strides, its masks, and the output shape TFLite gives it."""

    shape: tuple[int, ...]
    begin: tuple[int, ...]
    end: tuple[int, ...]
    strides: tuple[int, ...]
    out: tuple[int, ...]
    begin_mask: int = 0
    end_mask: int = 0
    shrink_axis_mask: int = 0


STRIDED_SLICES = (
    StridedSlice((7,), (1,), (6,), (2,), (3,)),  # a stride
    StridedSlice((7,), (-1,), (-8,), (-1,), (7,)),  # reversed, negative indices
    StridedSlice((3, 7), (2, 5), (0, 1), (-1, -2), (2, 2)),  # negative strides on each axis
    StridedSlice((3, 7), (1, 2), (2, 5), (1, 1), (3, 7), begin_mask=0b11, end_mask=0b11),  # masks: everything
    StridedSlice((3, 7), (1, 2), (2, 5), (1, 3), (2, 2), begin_mask=0b01, end_mask=0b10),  # masks on one axis each
    StridedSlice((2, 3, 5), (1, 0, -1), (2, 3, 5), (1, 1, 1), (3,), shrink_axis_mask=0b101),  # shrink two axes
    StridedSlice((1, 5, 3, 1), (0, 4, 0, 0), (1, 0, 3, 1), (1, -2, 2, 1), (1, 3, 2, 1), end_mask=0b10),
    StridedSlice((2, 1, 3, 5), (0, 0, 0, 0), (2, 1, 3, 5), (1, 1, -1, 3), (2, 1, 3, 2), begin_mask=0b0100,
                 end_mask=0b0100),
)


def strided_slice_model(dtype: str = "int8", quantizations: tuple[Quantization, ...] = QUANTIZATIONS) -> Model:
    """One STRIDED_SLICE per case of STRIDED_SLICES, each with its own tensors of ``dtype`` (int8, or int16: 16x8),
    quantizations cycled through ``quantizations``."""
    tensors, operators, inputs, outputs = [], [], [], []
    for index, case in enumerate(STRIDED_SLICES):
        quant = quantizations[index % len(quantizations)]
        inputs.append(len(tensors))
        tensors.append(Tensor(f"case{index}_in", case.shape, dtype, quant))
        tensors += [Tensor(f"case{index}_{name}", (len(values),), "int32", data=np.array(values, np.int32))
                    for name, values in (("begin", case.begin), ("end", case.end), ("strides", case.strides))]
        outputs.append(len(tensors))
        tensors.append(Tensor(f"case{index}_out", case.out, dtype, quant))
        options = Options("StridedSliceOptions", {"BeginMask": case.begin_mask, "EndMask": case.end_mask,
                                                  "ShrinkAxisMask": case.shrink_axis_mask})
        operators.append(Operator("STRIDED_SLICE", tuple(range(inputs[-1], inputs[-1] + 4)), (outputs[-1],), options))
    return Model(tensors, operators, tuple(inputs), tuple(outputs))


STRIDED_SLICE_VIEWS = frozenset(f"case{index}_out" for index, case in enumerate(STRIDED_SLICES)
                                if case.out == case.shape and set(case.strides) == {1})  # all of it, in order


def test_strided_slice_is_bit_exact_with_tflite_micro(tmp_path):
    assert_bit_exact_with_tflite_micro(strided_slice_model(), tmp_path, STRIDED_SLICE_VIEWS)


# (input shape, number of values, axis): each position of the new axis, negative ones, one value, scalars.
PACKS = (((3, 5), 2, 0), ((3, 5), 3, 1), ((3, 5), 2, 2), ((1, 3), 2, -1), ((2, 1, 3), 4, -4), ((), 3, 0),
         ((7,), 1, -2))


def pack_model() -> Model:
    """One PACK per case of PACKS, each with its own inputs and output."""
    tensors, operators, inputs, outputs = [], [], [], []
    for index, (shape, count, axis) in enumerate(PACKS):
        quant = QUANTIZATIONS[index % len(QUANTIZATIONS)]
        values = tuple(range(len(tensors), len(tensors) + count))
        inputs += values
        tensors += [Tensor(f"case{index}_in{value}", shape, "int8", quant) for value in range(count)]
        outputs.append(len(tensors))
        position = axis % (len(shape) + 1)
        tensors.append(Tensor(f"case{index}_out", shape[:position] + (count,) + shape[position:], "int8", quant))
        operators.append(Operator("PACK", values, (outputs[-1],),
                                  Options("PackOptions", {"ValuesCount": count, "Axis": axis})))
    return Model(tensors, operators, tuple(inputs), tuple(outputs))


def test_pack_is_bit_exact_with_tflite_micro(tmp_path):
    views = frozenset(f"case{index}_out" for index, (_, count, _) in enumerate(PACKS) if count == 1)
    assert_bit_exact_with_tflite_micro(pack_model(), tmp_path, views)


# (input shape, sizes of the pieces, axis): each axis, negative ones, one piece, pieces of size one, 1-D to 4-D;
# SPLIT takes the cases whose pieces are equal, SPLIT_V every case.
SPLITS = (
    ((6,), (2, 2, 2), 0),
    ((3, 4), (1, 1, 1), 0),
    ((3, 4), (2, 2), -1),
    ((1, 5, 3, 1), (1, 3, 1), 1),
    ((2, 1, 3, 4), (4,), -1),
    ((2, 1, 6, 3), (1, 2, 3), -2),
    ((5, 3), (2, 3), 0),
)


def split_model(builtin: str) -> Model:
    """One SPLIT (or SPLIT_V) per case of SPLITS it can express, each of its own input's RELU (a model of data
    movement alone has no quantize or dequantize for the int8 pass to start from), with its own outputs."""
    tensors, operators, inputs, outputs = [], [], [], []
    for index, (shape, sizes, axis) in enumerate(SPLITS):
        if builtin == "SPLIT" and len(set(sizes)) != 1:
            continue
        quant = QUANTIZATIONS[index % len(QUANTIZATIONS)]
        inputs.append(len(tensors))
        tensors += [Tensor(f"case{index}_in", shape, "int8", quant), Tensor(f"case{index}_relu", shape, "int8", quant)]
        operators.append(Operator("RELU", (inputs[-1],), (inputs[-1] + 1,)))
        data = inputs[-1] + 1
        tensors.append(Tensor(f"case{index}_axis", (), "int32", data=np.array(axis, np.int32)))
        if builtin == "SPLIT":
            operands, options = (data + 1, data), Options("SplitOptions", {"NumSplits": len(sizes)})
        else:
            tensors.append(Tensor(f"case{index}_sizes", (len(sizes),), "int32", data=np.array(sizes, np.int32)))
            operands = (data, data + 2, data + 1)
            options = Options("SplitVOptions", {"NumSplits": len(sizes)})
        pieces = tuple(range(len(tensors), len(tensors) + len(sizes)))
        outputs += pieces
        tensors += [Tensor(f"case{index}_out{piece}", shape[:axis % len(shape)] + (size,) +
                           shape[axis % len(shape) + 1:], "int8", quant) for piece, size in enumerate(sizes)]
        operators.append(Operator(builtin, operands, pieces, options))
    return Model(tensors, operators, tuple(inputs), tuple(outputs))


@pytest.mark.parametrize("builtin", ("SPLIT", "SPLIT_V"))
def test_split_is_bit_exact_with_tflite_micro(builtin, tmp_path):
    model = split_model(builtin)
    views = frozenset(model.tensors[operator.outputs[0]].name for operator in model.operators
                      if operator.builtin == builtin and len(operator.outputs) == 1)  # one piece: all of the input
    assert_bit_exact_with_tflite_micro(model, tmp_path, views)


def _mac_operands(tensors: list[Tensor], name: str, weight_shape: tuple[int, ...], channel_axis: int,
                 input_scale: float, rng: np.random.Generator) -> tuple[int, int]:
    """Append a per-channel int8 weight (channels on ``channel_axis``) and its int32 bias; their indices."""
    channels = weight_shape[channel_axis]
    scales = tuple(float(scale) for scale in rng.uniform(0.002, 0.02, channels))
    tensors.append(Tensor(f"{name}_weights", weight_shape, "int8", Quantization(scales, (0,) * channels, channel_axis),
                          rng.integers(-127, 128, weight_shape).astype(np.int8)))
    tensors.append(Tensor(f"{name}_bias", (channels,), "int32",
                          Quantization(tuple(input_scale * scale for scale in scales), (0,) * channels),
                          rng.integers(-2000, 2000, channels).astype(np.int32)))
    return len(tensors) - 2, len(tensors) - 1


def inverted_residual_block(padding: tuple[int, int] = (1, 1)) -> Model:
    """MobileNetV2's stride-2 block: 1x1 CONV_2D expanding 3 channels to 6 (RELU6), PAD by ``padding`` (before,
    after) pixels on each spatial axis to 9x9 (an odd 7x7 input padded on both sides, or an 8x8 one padded after
    only, as Keras' ZeroPadding2D of an even size), 3x3 DEPTHWISE_CONV_2D of stride 2 VALID (RELU6), 1x1 CONV_2D
    projecting to 4 channels."""
    rng = np.random.default_rng(15)
    size = 9 - sum(padding)
    x, expanded, projected = Quantization((0.02,), (-3,)), Quantization((0.03,), (-128,)), Quantization((0.05,), (7,))
    tensors = [Tensor("input", (1, size, size, 3), "int8", x)]
    weights, bias = _mac_operands(tensors, "expand", (6, 1, 1, 3), 0, 0.02, rng)
    tensors.append(Tensor("expand", (1, size, size, 6), "int8", expanded))
    operators = [Operator("CONV_2D", (0, weights, bias), (len(tensors) - 1,),
                          Options("Conv2DOptions", {"Padding": 1, "StrideW": 1, "StrideH": 1,
                                                    "FusedActivationFunction": ActivationFunctionType.RELU6}))]
    paddings = [[0, 0], list(padding), list(padding), [0, 0]]
    tensors.append(Tensor("paddings", (4, 2), "int32", data=np.array(paddings, np.int32)))
    tensors.append(Tensor("pad", (1, 9, 9, 6), "int8", expanded))
    operators.append(Operator("PAD", (len(tensors) - 3, len(tensors) - 2), (len(tensors) - 1,)))
    padded = len(tensors) - 1
    weights, bias = _mac_operands(tensors, "depthwise", (1, 3, 3, 6), 3, 0.03, rng)
    tensors.append(Tensor("depthwise", (1, 4, 4, 6), "int8", expanded))
    operators.append(Operator("DEPTHWISE_CONV_2D", (padded, weights, bias), (len(tensors) - 1,),
                              Options("DepthwiseConv2DOptions", {
                                  "Padding": 1, "StrideW": 2, "StrideH": 2, "DepthMultiplier": 1,
                                  "FusedActivationFunction": ActivationFunctionType.RELU6})))
    depthwise = len(tensors) - 1
    weights, bias = _mac_operands(tensors, "project", (4, 1, 1, 6), 0, 0.03, rng)
    tensors.append(Tensor("project", (1, 4, 4, 4), "int8", projected))
    operators.append(Operator("CONV_2D", (depthwise, weights, bias), (len(tensors) - 1,),
                              Options("Conv2DOptions", {"Padding": 1, "StrideW": 1, "StrideH": 1})))
    return Model(tensors, operators, (0,), (len(tensors) - 1,))


@pytest.mark.parametrize("padding", [(1, 1), (0, 1)], ids=["both_sides", "after_only"])
def test_a_mobilenet_v2_block_with_pad_is_bit_exact_with_tflite_micro(padding, tmp_path):
    """A PAD after only is the case TVM's reverse_compute_at gets wrong: it would compute the PAD inside its
    producer's loops and never write the padding (tvm_ext/schedule/kernel_schedule.py)."""
    assert_bit_exact_with_tflite_micro(inverted_residual_block(padding), tmp_path)


# (input NHWC shape, block size) of DEPTH_TO_SPACE (SPACE_TO_DEPTH reads its output shape): block sizes 1 to 3,
# one and several output channels, odd sizes, two batches.
BLOCKS = (((1, 2, 2, 4), 2), ((2, 3, 5, 8), 2), ((1, 2, 3, 18), 3), ((1, 3, 1, 3), 1))


def _depth_to_space(shape: tuple[int, ...], block: int) -> tuple[int, ...]:
    n, h, w, c = shape
    return n, h * block, w * block, c // (block * block)


def block_model(builtin: str) -> Model:
    """One DEPTH_TO_SPACE (or SPACE_TO_DEPTH, the inverse shapes) per case of BLOCKS, each with its own tensors."""
    tensors, operators = [], []
    table = "DepthToSpaceOptions" if builtin == "DEPTH_TO_SPACE" else "SpaceToDepthOptions"
    for index, (shape, block) in enumerate(BLOCKS):
        quant = QUANTIZATIONS[index % len(QUANTIZATIONS)]
        source, result = shape, _depth_to_space(shape, block)
        if builtin == "SPACE_TO_DEPTH":
            source, result = result, source
        tensors += [Tensor(f"case{index}_in", source, "int8", quant), Tensor(f"case{index}_out", result, "int8", quant)]
        operators.append(Operator(builtin, (2 * index,), (2 * index + 1,), Options(table, {"BlockSize": block})))
    return Model(tensors, operators, tuple(range(0, len(tensors), 2)), tuple(range(1, len(tensors), 2)))


@pytest.mark.parametrize("builtin", ["DEPTH_TO_SPACE", "SPACE_TO_DEPTH"])
def test_depth_to_space_and_back_are_bit_exact_with_tflite_micro(builtin, tmp_path):
    views = frozenset(f"case{index}_out" for index, (_, block) in enumerate(BLOCKS) if block == 1)  # no move
    assert_bit_exact_with_tflite_micro(block_model(builtin), tmp_path, views)


def test_a_data_movement_operator_without_a_lowering_is_refused_in_one_line_naming_it(tmp_path):
    quant = Quantization((0.05,), (0,))
    tensors = [Tensor("x", (4, 2, 2, 1), "int8", quant),
               Tensor("block", (2,), "int32", data=np.array([2, 2], np.int32)),
               Tensor("crops", (2, 2), "int32", data=np.zeros((2, 2), np.int32)),
               Tensor("y", (1, 4, 4, 1), "int8", quant)]
    batch_to_space = Model(tensors, [Operator("BATCH_TO_SPACE_ND", (0, 1, 2), (3,))], (0,), (3,))
    assert "BATCH_TO_SPACE_ND" in _refusal(batch_to_space, tmp_path)
