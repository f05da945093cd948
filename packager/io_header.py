"""The facts of each model input and output in `<model>.h`: element type, shape and axis order, and for a
quantized one its scale and zero point as macros, with helpers that quantize a float input and dequantize
an output (`packager/templates/lp_quantize.h`, hand-written C, called with the tensor's constants).

Per tensor `<MODEL>_<INPUT|OUTPUT><k>_`: `TYPE` (its C element type), `RANK`, `DIMS` (an initializer list of
its dimensions, the model's own axis order), `LAYOUT` ("NHWC"/"NCHW") with `BATCH`, `HEIGHT`, `WIDTH`,
`CHANNELS` when it is an image, `QUANTIZED` (1 or 0); when quantized per tensor `SCALE` (an exact float
literal) and `ZERO_POINT`; per channel `QUANT_AXIS`, `SCALES` and `ZERO_POINTS` (initializer lists).
"""

from __future__ import annotations

import numpy as np

from memory_planner.plan import QuantParams, QuantRounding
from packager.c_text import c_literal
from packager.io_names import IoTensor
from packager.template_files import template_text

QUANTIZE_HELPERS_FILE = "lp_quantize.h"
# The helpers' name suffix for each element type they convert (CMSIS-NN's names of the types).
_HELPER_TYPES = {"int8": "s8", "uint8": "u8", "int16": "s16"}
_ROUNDING_MACROS = {QuantRounding.HALF_AWAY_FROM_ZERO: "LP_ROUND_HALF_AWAY_FROM_ZERO",
                    QuantRounding.HALF_TO_EVEN: "LP_ROUND_HALF_TO_EVEN"}
_ROUNDING_WORDS = {QuantRounding.HALF_AWAY_FROM_ZERO: "to nearest, ties away from zero, as TFLite's QUANTIZE",
                   QuantRounding.HALF_TO_EVEN: "to nearest, ties to even, as ONNX's QuantizeLinear"}
_IMAGE_AXES = {"NHWC": ("BATCH", "HEIGHT", "WIDTH", "CHANNELS"), "NCHW": ("BATCH", "CHANNELS", "HEIGHT", "WIDTH")}


def io_macros(macro: str, io: IoTensor) -> list[str]:
    """The macros of one input or output beyond its size, `macro` its prefix (`PERSON_DETECT_INPUT0`)."""
    tensor = io.tensor
    lines = [
        f"#define {macro}_TYPE {io.c_type}",
        f"#define {macro}_RANK {len(io.shape)}u",
        f"#define {macro}_DIMS {{{', '.join(f'{d}u' for d in io.shape)}}}",
    ]
    if tensor.layout in _IMAGE_AXES and len(io.shape) == 4:
        lines.append(f'#define {macro}_LAYOUT "{tensor.layout}"')
        lines += [f"#define {macro}_{axis} {size}u" for axis, size in zip(_IMAGE_AXES[tensor.layout], io.shape)]
    quant = tensor.quant
    lines.append(f"#define {macro}_QUANTIZED {int(quant is not None)}")
    if quant is None:
        return lines
    if quant.per_tensor:
        return lines + [f"#define {macro}_SCALE {_scale(quant.scale[0])} /* {_decimal(quant.scale[0])} */",
                        f"#define {macro}_ZERO_POINT {_integer(quant.zero_point[0])}"]
    return lines + [
        f"#define {macro}_QUANT_AXIS {quant.axis}u /* one scale and zero point per index of this axis */",
        f"#define {macro}_SCALES {{{', '.join(_scale(s) for s in quant.scale)}}}",
        f"#define {macro}_ZERO_POINTS {{{', '.join(_integer(z) for z in quant.zero_point)}}}",
    ]


def has_helpers(io: IoTensor) -> bool:
    """Whether the header defines a quantize (input) or dequantize (output) helper for `io`: quantized per
    tensor, of a type the helpers convert."""
    quant = io.tensor.quant
    return quant is not None and quant.per_tensor and io.tensor.dtype in _HELPER_TYPES


def quantize_helpers(model: str, macro: str, inputs: list[IoTensor], outputs: list[IoTensor]) -> list[str]:
    """`lp_quantize.h` and, per quantized input, `<model>_quantize_input<k>()`, per quantized output
    `<model>_dequantize_output<k>()`; nothing when no input or output has helpers."""
    if not any(has_helpers(io) for io in (*inputs, *outputs)):
        return []
    lines = [template_text("packager", QUANTIZE_HELPERS_FILE)]
    for index, io in enumerate(inputs):
        if has_helpers(io):
            lines += _helper(model, f"{macro}_INPUT{index}", io, f"input{index}", quantize=True)
    for index, io in enumerate(outputs):
        if has_helpers(io):
            lines += _helper(model, f"{macro}_OUTPUT{index}", io, f"output{index}", quantize=False)
    return lines


def _helper(model: str, macro: str, io: IoTensor, field: str, quantize: bool) -> list[str]:
    quant: QuantParams = io.tensor.quant
    suffix = _HELPER_TYPES[io.tensor.dtype]
    if quantize:
        return [
            f"/* {field} from `count` floats: round(value / scale) + zero point ({macro}_SCALE, _ZERO_POINT),",
            f" * rounded {_ROUNDING_WORDS[quant.rounding]}, saturated to {io.c_type}. */",
            f"static inline void {model}_quantize_{field}(const float* values, {io.c_type}* quantized, size_t count)",
            "{",
            f"  lp_quantize_{suffix}(values, quantized, count, {macro}_SCALE, {macro}_ZERO_POINT,",
            f"  {' ' * len(f'lp_quantize_{suffix}(')}{_ROUNDING_MACROS[quant.rounding]});",
            "}",
            "",
        ]
    return [
        f"/* {field} as `count` floats: scale * (q - zero point) ({macro}_SCALE, _ZERO_POINT). */",
        f"static inline void {model}_dequantize_{field}(const {io.c_type}* quantized, float* values, size_t count)",
        "{",
        f"  lp_dequantize_{suffix}(quantized, values, count, {macro}_SCALE, {macro}_ZERO_POINT);",
        "}",
        "",
    ]


def _scale(value: float) -> str:
    return c_literal(value, "float32")


def _decimal(value: float) -> str:
    """The shortest decimal that reads back as the float32 `value`."""
    return np.format_float_positional(np.float32(value), unique=True, trim="-") if 1e-4 <= value < 1e6 \
        else np.format_float_scientific(np.float32(value), unique=True, trim="-")


def _integer(value: int) -> str:
    return f"({value})" if value < 0 else str(value)
