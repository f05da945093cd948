"""Empirical bias correction (Nagel et al. 2019, "Data-Free Quantization", section 4.2; AIMET's and TFLite's
experimental quantizer's bias correction): the mean error that rounding a MAC's weights to int8 adds to each
output channel, measured on the calibration samples, to be subtracted from that channel's bias.

Rounding the weights W of a conv2d or matmul to W_q adds (W_q - W) x to its output. Its mean over samples
and output positions is not zero when the inputs x have a large mean: a first convolution reading raw
pixels in [0, 255] (pretrainedResnet) adds (W_q - W) x mean(x) to every output, a shift the activation's
int8 step then carries through the network. The mean is measured, not derived from input statistics: the
float model runs on the calibration samples with one extra call per int8 MAC, the same MAC of the float
input with the weight error (W_q - W) as its weights (padding borders included), reduced to its mean per
output channel in the graph.
"""

from __future__ import annotations

import numpy as np
import tvm
from tvm import relax

from tvm_ext.layers import bindings_of

from .qdq import QuantizedGraph
from .ranges import run_on_samples, with_taps


def weight_error_means(float_mod: tvm.IRModule, graph: QuantizedGraph,
                       samples: list[list[np.ndarray]]) -> dict[relax.Var, np.ndarray]:
    """Each int8 MAC var of `float_mod`'s main that `graph` quantized -> the mean over `samples` (float
    inputs) and output positions of what its weight rounding adds to each output channel (the last axis),
    in the MAC's output units, float64. The MAC's inputs are the float model's."""
    macs = [var for var in (b.var for b in bindings_of(float_mod["main"])) if var in graph.weight_errors]
    if not macs:
        return {}
    outputs = run_on_samples(_with_error_means(float_mod, graph.weight_errors), samples)
    return {var: np.mean([sample[position] for sample in outputs], axis=0, dtype=np.float64)
            for position, var in enumerate(macs, start=1)}


def _with_error_means(mod: tvm.IRModule, weight_errors: dict[relax.Var, np.ndarray]) -> tvm.IRModule:
    """`mod` whose main returns its own output, then per MAC var in `weight_errors` (binding order) the mean
    over all but the last axis of the MAC applied to its own data operand with the weight error as weights."""
    means: list[relax.Var] = []  # filled while with_taps emits main, read by it at the end

    def emit(bb: relax.BlockBuilder, var: relax.Var, value: relax.Expr) -> relax.Expr:
        new = bb.emit(value)
        if var in weight_errors:
            error = bb.emit(relax.Call(value.op, [value.args[0], relax.const(weight_errors[var].astype(np.float32))],
                                       value.attrs, value.ty_args))
            means.append(bb.emit(relax.op.mean(error, axis=list(range(len(var.ty.shape) - 1)))))
        return new

    return with_taps(mod, means, emit)
