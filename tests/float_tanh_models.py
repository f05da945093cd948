"""A small float TFLite model whose output is TANH's, built with tests/tflite_builder.py: a Keras
Activation("tanh") of its input scaled element by element (MUL by a constant, as TFLite writes a Rescaling
layer), 4,096 elements. The scales grow from 0.01 to 12 across the elements, so that inputs in [-1, 1) give TANH
small arguments (the bundle's polynomial, |x| < 0.55), middle ones (its e^2x formula) and saturating ones
(|x| >= 10) alike; the elements are many because the C libraries' tanhf differ rarely (newlib's on cortex-m4f
and glibc's in 1 of 8,000 arguments of [-4, 4], measured)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tflite_builder import ModelBuilder, Options, Tensor, build

ELEMENTS = 4096
LARGEST_SCALE = 12.0


def write_float_tanh_model(folder: Path) -> Path:
    """The model, written into `folder` as float_tanh.tflite (a conftest.ModelFactory)."""
    model = ModelBuilder()
    shape = (1, ELEMENTS)
    x = model.add(Tensor("input", shape, "float32"))
    model.inputs.append(x)
    scales = model.add(Tensor("rescaling/scale", shape, "float32",
                              data=np.geomspace(0.01, LARGEST_SCALE, ELEMENTS).astype(np.float32).reshape(shape)))
    scaled = model.op("MUL", (x, scales), Tensor("rescaling/mul", shape, "float32"), Options("MulOptions", {}))
    model.outputs.append(model.op("TANH", (scaled,), Tensor("activation/Tanh", shape, "float32")))
    path = folder / "float_tanh.tflite"
    path.write_bytes(build(model.model()))
    return path
