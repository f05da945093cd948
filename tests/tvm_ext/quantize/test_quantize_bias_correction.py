"""Empirical bias correction (issue 18): the mean error the rounding of a MAC's weights to int8 adds to each
output channel is measured on the calibration samples and subtracted from the channel's bias. The model: one
1x1 CONV_2D whose weights all round the same way, reading inputs with a large mean (pixels in [100, 110]),
so that the rounding shifts every output by several steps of its int8 grid."""

from __future__ import annotations

import numpy as np
import pytest

from tflite_builder import Model, Operator, Options, Tensor, build

INPUT_SHAPE = (1, 4, 4, 3)
# Per output channel (rows): the largest weight 1.0 sets the int8 scale 1/127; the others sit 0.4 of a step
# above a grid point, so each rounds down by 0.4/127: the channel's output drops by 0.8/127 x 105 = 0.66.
WEIGHTS = np.array([[1.0, 50.4 / 127, -30.6 / 127], [-1.0, 20.4 / 127, 10.4 / 127]], np.float32)
BIAS = np.array([-120.0, 80.0], np.float32)  # outputs within about +-10: an int8 step of about 0.08


@pytest.fixture(scope="module")
def conv(tmp_path_factory):
    from tvm_ext.frontend import import_model

    tensors = [
        Tensor("input", INPUT_SHAPE, "float32"),
        Tensor("w", (2, 1, 1, 3), "float32", data=WEIGHTS.reshape(2, 1, 1, 3)),
        Tensor("b", (2,), "float32", data=BIAS),
        Tensor("output", (1, 4, 4, 2), "float32"),
    ]
    options = Options("Conv2DOptions", {"Padding": 0, "StrideW": 1, "StrideH": 1, "FusedActivationFunction": 0})
    path = tmp_path_factory.mktemp("bias_correction") / "conv.tflite"
    path.write_bytes(build(Model(tensors, [Operator("CONV_2D", (0, 1, 2), (3,), options)], inputs=(0,),
                                 outputs=(3,))))
    return import_model(path)


def _samples(count: int, seed: int) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [[rng.uniform(100.0, 110.0, INPUT_SHAPE).astype(np.float32)] for _ in range(count)]


def _graphs(conv):
    """The QDQ graph of `conv` without and with bias correction, the shifts, and the calibration samples."""
    from tvm_ext.quantize import ActivationQuant, RangeMethod
    from tvm_ext.quantize.bias_correction import weight_error_means
    from tvm_ext.quantize.qdq import layer_outputs, quantize_graph
    from tvm_ext.quantize.ranges import observe_ranges, quants_of

    samples = _samples(64, 1)
    taps = layer_outputs(conv.mod["main"])
    ranges = observe_ranges(conv.mod, taps, samples, [RangeMethod.MINMAX])[0]
    quants = quants_of(ranges[RangeMethod.MINMAX], "int8")
    inputs = [ActivationQuant.of_range(min(float(s[0].min()) for s in samples),
                                       max(float(s[0].max()) for s in samples))]
    plain = quantize_graph(conv.mod, inputs, quants, "conv")
    shifts = weight_error_means(conv.mod, plain, samples)
    return plain, quantize_graph(conv.mod, inputs, quants, "conv", bias_shifts=shifts), shifts, samples


def _mean_error(conv, graph, samples) -> np.ndarray:
    """Per output channel, the mean over samples and positions of the QDQ graph's output (dequantized)
    less the float model's."""
    from tvm_ext.quantize.ranges import run_on_samples

    float_out = np.stack([o[0] for o in run_on_samples(conv.mod, samples)])
    quantized = [[graph.inputs[0].quantize(s[0])] for s in samples]
    int8_out = np.stack([graph.outputs[0].dequantize(o[0]) for o in run_on_samples(graph.mod, quantized)])
    return (int8_out.astype(np.float64) - float_out).reshape(-1, 2).mean(axis=0)


def test_the_shift_is_the_weight_error_times_the_mean_input(conv):
    _, _, shifts, samples = _graphs(conv)
    (shift,) = shifts.values()
    mean_input = np.mean([s[0] for s in samples], axis=(0, 1, 2, 3), dtype=np.float64)
    scales = np.abs(WEIGHTS).max(axis=1, keepdims=True) / 127.0
    weight_error = np.round(WEIGHTS / scales) * scales - WEIGHTS  # no weight sits on a .5: no tie to break
    np.testing.assert_allclose(shift, weight_error @ mean_input, rtol=1e-4)
    assert np.all(np.abs(shift) > 0.5), shift  # 0.8/127 x 105 = 0.66 per channel


def test_bias_correction_moves_the_layers_mean_error_to_zero(conv):
    plain, corrected, _, _ = _graphs(conv)
    held_back = _samples(64, 2)
    before, after = _mean_error(conv, plain, held_back), _mean_error(conv, corrected, held_back)
    # Measured: before -0.662 per channel (eleven steps of the output grid, 0.060), after -0.003 and 0.001.
    assert np.all(np.abs(before) > 0.5), before
    assert np.all(np.abs(after) < 0.1 * np.abs(before)), (before, after)
