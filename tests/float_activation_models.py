"""Small float TFLite models whose output is a transcendental activation's, built with tests/tflite_builder.py: a
Keras Activation("tanh") or GELU (exact: 0.5 x (1 + erf(x / sqrt 2))) of the input scaled element by element (MUL
by a constant, as TFLite writes a Rescaling layer), 4,096 elements. The scales grow geometrically from 0.01 to 12
across the elements, so that inputs in [-1, 1) reach every range of the bundle's tanhf and erff (their
polynomials near 0, the e^x forms further out, the saturation: tanh from 10, erf from 4); the elements are many
because the C libraries' functions differ rarely (newlib's tanhf on cortex-m4f and glibc's in 1 of 8,000
arguments of [-4, 4], measured)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tflite_builder import ModelBuilder, Options, Tensor, build

ELEMENTS = 4096
LARGEST_SCALE = 12.0


def _write_scaled_activation(folder: Path, builtin: str, options: Options | None = None) -> Path:
    """The model of `builtin` (a TFLite activation) of the scaled input, written into `folder`."""
    model = ModelBuilder()
    shape = (1, ELEMENTS)
    x = model.add(Tensor("input", shape, "float32"))
    model.inputs.append(x)
    scales = model.add(Tensor("rescaling/scale", shape, "float32",
                              data=np.geomspace(0.01, LARGEST_SCALE, ELEMENTS).astype(np.float32).reshape(shape)))
    scaled = model.op("MUL", (x, scales), Tensor("rescaling/mul", shape, "float32"), Options("MulOptions", {}))
    model.outputs.append(model.op(builtin, (scaled,), Tensor(f"activation/{builtin.lower()}", shape, "float32"),
                                  options))
    path = folder / f"float_{builtin.lower()}.tflite"
    path.write_bytes(build(model.model()))
    return path


def write_float_tanh_model(folder: Path) -> Path:
    """The TANH model, written into `folder` as float_tanh.tflite (a conftest.ModelFactory)."""
    return _write_scaled_activation(folder, "TANH")


def write_float_gelu_model(folder: Path, approximate: bool = False) -> Path:
    """The exact GELU model (its erf), or the approximate one (its tanh form), written into `folder` as
    float_gelu.tflite (a conftest.ModelFactory)."""
    return _write_scaled_activation(folder, "GELU", Options("GeluOptions", {"Approximate": approximate}))
