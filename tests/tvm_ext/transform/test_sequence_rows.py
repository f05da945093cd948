"""sequences_as_rows (tvm_ext.transform.sequence_rows): a 1-D convolution network's sequences [1, T, C] as images
[1, T, 1, C], so streamed bands split its time steps. Each rule as a Before/Expected pair of small functions (a
Conv1D as TFLite's converter writes it: PAD, RESHAPE to a one-row image, CONV_2D 1xK, RESHAPE back), then on a
TCN built here (causal dilated blocks, residual ADDs of sequences, a MEAN over time): its window chain (the
dilated receptive fields) and its streamed bands bit for bit TFLite Micro's output."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tvm
from tflite_micro import runtime  # the golden reference
from tvm import relax

from tflite_models import tcn_model
from tvm_ext.frontend import import_model
from tvm_ext.layers import Layers, bindings_of
from tvm_ext.transform import LowerQuantizedToInteger
from tvm_ext.transform.patch_prefix import RunPrefixInPatches, window_chain
from tvm_ext.transform.sequence_rows import sequences_as_rows

STEPS, FEATURES, UNITS = 6, 2, 4
_SCALE, _ZERO_POINT = relax.const(np.float32(0.05)), relax.const(np.int32(-3))
_OUT_SCALE, _OUT_ZERO_POINT = relax.const(np.float32(0.1)), relax.const(np.int32(5))


def _weight(taps: int, channels: int) -> relax.Expr:
    """A dequantized int8 HWIO kernel of one row of `taps`, per output channel."""
    values = (np.arange(taps * channels * UNITS) % 7 - 3).astype(np.int8).reshape(1, taps, channels, UNITS)
    return relax.op.dequantize(relax.const(values), relax.const(np.full(UNITS, 0.01, np.float32)),
                               relax.const(np.zeros(UNITS, np.int32)), 3)


def _sequence(name: str, channels: int = FEATURES) -> relax.Var:
    return relax.Var(name, relax.TensorType((1, STEPS, channels), "int8"))


def _conv(data: relax.Expr, weight: relax.Expr, padding: tuple[int, ...], dilation: tuple[int, int]) -> relax.Expr:
    return relax.op.nn.conv2d(data, weight, (1, 1), padding, dilation, 1, "NHWC", "HWIO", "NHWC")


def _conv1d_before(pad_value: float, dilation: int) -> relax.Function:
    """x -> PAD 2d steps before -> RESHAPE [1, 1, T + 2d, C] -> dequantize -> CONV_2D 1x3 dilation 1xd ->
    quantize -> RESHAPE [1, T, units], the output."""
    x = _sequence("x")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            padded = bb.emit(relax.op.nn.pad(x, [0, 0, 2 * dilation, 0, 0, 0], "constant", pad_value))
            image = bb.emit(relax.op.reshape(padded, (1, 1, STEPS + 2 * dilation, FEATURES)))
            data = bb.emit(relax.op.dequantize(image, _SCALE, _ZERO_POINT, 0))
            weight = bb.emit(_weight(3, FEATURES))
            conv = bb.emit(_conv(data, weight, (0, 0, 0, 0), (1, dilation)))
            out = bb.emit(relax.op.quantize(conv, _OUT_SCALE, _OUT_ZERO_POINT, 0))
            sequence = bb.emit_output(relax.op.reshape(out, (1, STEPS, UNITS)))
        bb.emit_func_output(sequence)
    return bb.get()["main"]


def test_a_causal_pad_of_the_zero_point_folds_into_the_convolution_of_the_rows():
    """The one-row image becomes a one-column one (time along the rows): the kernel 1x3 -> 3x1, dilation 1x2 ->
    2x1, and the PAD of 4 steps (the dequantize's zero point) the convolution's top padding; the output, read by
    the function's return, reshaped back."""
    x = _sequence("x")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            weight = bb.emit(_weight(3, FEATURES))
            kernel = bb.emit(relax.op.reshape(weight, (3, 1, FEATURES, UNITS)))
            rows = bb.emit(relax.op.reshape(x, (1, STEPS, 1, FEATURES)))
            data = bb.emit(relax.op.dequantize(rows, _SCALE, _ZERO_POINT, 0))
            conv = bb.emit(_conv(data, kernel, (4, 0, 0, 0), (2, 1)))
            out = bb.emit(relax.op.quantize(conv, _OUT_SCALE, _OUT_ZERO_POINT, 0))
            image = bb.emit(relax.op.reshape(out, (1, 1, STEPS, UNITS)))
            sequence = bb.emit_output(relax.op.reshape(image, (1, STEPS, UNITS)))
        bb.emit_func_output(sequence)
    tvm.ir.assert_structural_equal(sequences_as_rows(_conv1d_before(-3.0, 2)), bb.get()["main"])


def test_a_pad_of_another_value_pads_the_rows():
    """A PAD whose value is not the zero point (a padded tap would not hold what the convolution's padding
    holds) is kept, on the rows; the convolution has no padding of its own."""
    x = _sequence("x")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            rows = bb.emit(relax.op.reshape(x, (1, STEPS, 1, FEATURES)))
            padded = bb.emit(relax.op.nn.pad(rows, [0, 0, 4, 0, 0, 0, 0, 0], "constant", 5.0))
            data = bb.emit(relax.op.dequantize(padded, _SCALE, _ZERO_POINT, 0))
            weight = bb.emit(_weight(3, FEATURES))
            kernel = bb.emit(relax.op.reshape(weight, (3, 1, FEATURES, UNITS)))
            conv = bb.emit(_conv(data, kernel, (0, 0, 0, 0), (2, 1)))
            out = bb.emit(relax.op.quantize(conv, _OUT_SCALE, _OUT_ZERO_POINT, 0))
            image = bb.emit(relax.op.reshape(out, (1, 1, STEPS, UNITS)))
            sequence = bb.emit_output(relax.op.reshape(image, (1, STEPS, UNITS)))
        bb.emit_func_output(sequence)
    tvm.ir.assert_structural_equal(sequences_as_rows(_conv1d_before(5.0, 2)), bb.get()["main"])


def _block(x: relax.Var, bb: relax.BlockBuilder, rows: bool) -> relax.Var:
    """A 1x1 convolution of image `x` (one row, or `rows`: one column, its kernel reshaped), quantized."""
    data = bb.emit(relax.op.dequantize(x, _SCALE, _ZERO_POINT, 0))
    weight = bb.emit(_weight(1, UNITS))
    if rows:
        weight = bb.emit(relax.op.reshape(weight, (1, 1, UNITS, UNITS)))
    conv = bb.emit(_conv(data, weight, (0, 0, 0, 0), (1, 1)))
    return bb.emit(relax.op.quantize(conv, _SCALE, _ZERO_POINT, 0))


def test_a_residual_add_and_a_mean_over_time_take_the_rows():
    """The block input (a model input: reshaped to the rows once, for both readers) and the convolution's
    output are added on the rows (a join of the window chain), and the MEAN over time averages the rows and
    columns ([1, C] either way)."""

    def tail(bb: relax.BlockBuilder, a: relax.Expr, b: relax.Expr, axes: list[int]) -> relax.Var:
        total = bb.emit(relax.op.add(bb.emit(relax.op.dequantize(a, _SCALE, _ZERO_POINT, 0)),
                                     bb.emit(relax.op.dequantize(b, _SCALE, _ZERO_POINT, 0))))
        summed = bb.emit(relax.op.quantize(bb.emit(relax.op.nn.relu(total)), _OUT_SCALE, _OUT_ZERO_POINT, 0))
        mean = bb.emit(relax.op.mean(bb.emit(relax.op.dequantize(summed, _OUT_SCALE, _OUT_ZERO_POINT, 0)), axes))
        return bb.emit_output(relax.op.quantize(mean, _OUT_SCALE, _OUT_ZERO_POINT, 0))

    x = _sequence("x", UNITS)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            image = bb.emit(relax.op.reshape(x, (1, 1, STEPS, UNITS)))
            out = _block(image, bb, rows=False)
            sequence = bb.emit(relax.op.reshape(out, (1, STEPS, UNITS)))
            result = tail(bb, x, sequence, [1])
        bb.emit_func_output(result)
    before = bb.get()["main"]

    x = _sequence("x", UNITS)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            rows = bb.emit(relax.op.reshape(x, (1, STEPS, 1, UNITS)))
            out = _block(rows, bb, rows=True)
            result = tail(bb, rows, out, [1, 2])
        bb.emit_func_output(result)
    tvm.ir.assert_structural_equal(sequences_as_rows(before), bb.get()["main"])


def test_a_function_without_a_1d_convolution_is_returned_as_it_is():
    x = _sequence("x", UNITS)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            mean = bb.emit(relax.op.mean(bb.emit(relax.op.dequantize(x, _SCALE, _ZERO_POINT, 0)), [1]))
            result = bb.emit_output(relax.op.quantize(mean, _OUT_SCALE, _OUT_ZERO_POINT, 0))
        bb.emit_func_output(result)
    before = bb.get()["main"]
    assert sequences_as_rows(before).same_as(before)


@pytest.fixture(scope="module")
def tcn_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sequence_rows") / "tcn.tflite"
    path.write_bytes(tcn_model())
    return path


def test_a_tcn_is_a_window_graph_of_dilated_causal_stages(tcn_path):
    """The TCN's window chain: each convolution's receptive field the dilated one (3 taps at dilation d: 2d + 1
    rows), its causal padding 2d rows on top, the residual ADDs joins, the MEAN a reduction; each folded PAD's
    layer record on the dequantize of its convolution's input."""
    rows = sequences_as_rows(import_model(tcn_path).mod["main"])
    chain = window_chain(rows)
    assert [(s.geometry.kernel, s.geometry.pad, s.geometry.out_hw) for s in chain.stages] == [
        ((3, 1), (2, 0), (23, 1)), ((5, 1), (4, 0), (23, 1)), ((1, 1), (0, 0), (23, 1)), ((7, 1), (6, 0), (23, 1)),
        ((1, 1), (0, 0), (23, 1)), ((23, 1), (0, 0), (1, 1))]
    assert chain.inputs == [(-1,), (0,), (0, 1), (2,), (2, 3), (4,)] and chain.cuts == (1, 3, 5, 6)
    assert chain.geometries[-1].reduces
    layers = Layers.of(rows)
    padded = [b.value.op.name for i, b in enumerate(bindings_of(rows))
              if any(r.kind == "PAD" for r in layers.of_binding(i))]
    assert padded == ["relax.reshape", "relax.dequantize", "relax.dequantize", "relax.dequantize"]


def _run_lowered(mod: tvm.IRModule, inputs: list[np.ndarray]) -> list[np.ndarray]:
    lowered = LowerQuantizedToInteger(model_name="tcn.tflite")(mod)
    vm = relax.VirtualMachine(relax.build(lowered, target="llvm"), tvm.cpu())
    return [vm["main"](tvm.runtime.tensor(x)).numpy() for x in inputs]


@pytest.mark.parametrize("cut, bands, driver", [(6, 3, 0), (6, 23, 0), (6, 4, 4), (5, 5, 0), (3, 2, 0)])
def test_a_tcn_streamed_in_bands_of_time_steps_computes_tflite_micros_values_bit_exactly(tcn_path, cut, bands,
                                                                                        driver):
    """Streamed bands of time steps through the causal dilated blocks (each keeping the 2d steps its window still
    reads), their residual joins, into the MEAN summed band by band (or up to a join, the rest layer by
    layer): bit for bit TFLite Micro's output."""
    rng = np.random.default_rng(1)
    inputs = [rng.integers(-128, 128, (1, 23, 5)).astype(np.int8), np.full((1, 23, 5), 127, np.int8)]
    interpreter = runtime.Interpreter.from_file(str(tcn_path))
    streamed = RunPrefixInPatches(cut, (bands, 1), driver)(import_model(tcn_path).mod)
    assert not any(isinstance(b.value, relax.Call) and b.value.op.name == "relax.nn.pad"
                   for b in bindings_of(streamed["main"]))
    for x, got in zip(inputs, _run_lowered(streamed, inputs), strict=True):
        interpreter.set_input(x, 0)
        interpreter.invoke()
        np.testing.assert_array_equal(got, interpreter.get_output(0))
