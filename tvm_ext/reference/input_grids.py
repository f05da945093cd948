"""The quantization grid of each float model input that the model only ever quantizes.

A quantized model with float inputs (an ONNX QDQ model's first QuantizeLinear, a TFLite model's QUANTIZE)
turns each input into integers at once: `q = clamp(round(x / scale) + zero_point, qmin, qmax)`. Its
reference's own edge cases are there: inputs beyond either end of the grid (saturation) and inputs on a
rounding tie (`x / scale` half-way between two integers, where onnxruntime rounds to even and TFLite away
from zero). Random floats in [-1, 1) reach neither when the scale is small (a calibrated image input's
0.03 spans 60 of 256 levels); the self-test's later cases draw from the grid instead
(`tvm_ext.reference.outputs.selftest_cases`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tvm
from tvm import relax
from tvm.ir.expr import Constant

from tvm_ext.layers import bindings_of

_QUANTIZE = tvm.ir.Op.get("relax.quantize")


@dataclass(frozen=True)
class QuantizationGrid:
    """The grid `x = (q - zero_point) * scale` of one input's quantization, q from `qmin` to `qmax`."""

    scale: float
    zero_point: int
    qmin: int
    qmax: int

    @property
    def low(self) -> float:
        """One step below the grid's lowest level: quantizes to `qmin` only by saturating."""
        return (self.qmin - self.zero_point - 1) * self.scale

    @property
    def high(self) -> float:
        """One step above the grid's highest level: quantizes to `qmax` only by saturating."""
        return (self.qmax - self.zero_point + 1) * self.scale

    def ties(self, values: np.ndarray) -> np.ndarray:
        """Each of `values` moved to the rounding tie below it, `(floor(x / scale) + 0.5) * scale`, as
        float32 (whose division by the scale lands on, or within a rounding of, the tie)."""
        steps = np.floor(values.astype(np.float64) / self.scale)
        return ((steps + 0.5) * self.scale).astype(np.float32)


def quantized_input_grids(main: relax.Function) -> dict[int, QuantizationGrid]:
    """For each float input of `main` (by position) whose every use is a `relax.quantize` with one scale and
    one zero point (constants), that quantization's grid. An input used otherwise too (by a float operator, or
    as an output) gets none: only the range the model is known to compute finitely on is drawn from for it."""
    uses: dict[relax.Var, list[QuantizationGrid | None]] = {param: [] for param in main.params}
    for binding in bindings_of(main):
        grid = _grid_of(binding.value)
        for used in relax.analysis.free_vars(binding.value):
            if used in uses:  # an input: quantized by this binding (as its operand), or used otherwise
                uses[used].append(grid if grid is not None and binding.value.args[0].same_as(used) else None)
    for used in relax.analysis.free_vars(main.body.body):
        if used in uses:
            uses[used].append(None)  # an output itself
    return {k: found[0] for k, (param, found) in enumerate(uses.items())
            if np.dtype(str(param.ty.dtype)).kind == "f" and found and found[0] is not None
            and all(grid == found[0] for grid in found)}


def _grid_of(value: relax.Expr) -> QuantizationGrid | None:
    """The grid of `value` when it is a `relax.quantize` of one scale and zero point, else None."""
    if not (isinstance(value, relax.Call) and value.op.same_as(_QUANTIZE)):
        return None
    scale, zero_point = value.args[1], value.args[2]
    if not (isinstance(scale, Constant) and isinstance(zero_point, Constant)):
        return None
    scales, zero_points = scale.value.numpy().reshape(-1), zero_point.value.numpy().reshape(-1)
    if scales.size != 1 or zero_points.size != 1 or not np.isfinite(scales[0]) or scales[0] <= 0:
        return None
    info = np.iinfo(np.dtype(str(value.attrs.out_dtype)))
    return QuantizationGrid(float(scales[0]), int(zero_points[0]), int(info.min), int(info.max))
