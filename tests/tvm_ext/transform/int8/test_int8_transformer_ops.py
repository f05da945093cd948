"""The int8 operators of transformers through the real pipeline (tvm_ext.compile), bit-exact with TFLite Micro:
RSQRT (TFLite Micro's own fixed-point inverse square root, a 256-entry table here), a whole attention block as
TFLite lowers Keras' layers (LayerNormalization as MEAN, SQUARED_DIFFERENCE, ADD, RSQRT, MUL, SUB; multi-head
attention as FULLY_CONNECTED, RESHAPE, TRANSPOSE, BATCH_MATMUL, SOFTMAX; GELU as x * sigmoid(1.702 x)), built
here with tests/tflite_builder.py, and the zoo's ViT.

TFLite Micro refuses to run RSQRT on an input below its zero point ("Rsqrt is only defined for positive
values"), so each RSQRT instance reads either an input of zero point -128 (every int8 value is valid) or a
RELU's output (never below its zero point).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from test_int8_elementwise_ops import INT8_VALUES, assert_bit_exact_with_tflite_micro  # noqa: E402
from tflite_builder import ModelBuilder, Options, Quantization, Tensor  # noqa: E402

_RNG = np.random.default_rng(28)

# (input, output) quantizations of an RSQRT read straight from a graph input (zero point -128): TFLite's
# LayerNormalization variances, a rescale above and below one, output zero points at both ends and between.
RSQRT_INPUTS = (
    (Quantization((0.000445,), (-128,)), Quantization((0.0309,), (-128,))),
    (Quantization((0.02,), (-128,)), Quantization((0.05,), (0,))),
    (Quantization((1.5,), (-128,)), Quantization((0.001,), (127,))),
    (Quantization((0.00001,), (-128,)), Quantization((2.0,), (-50,))),
)
# Input zero points of an RSQRT after a RELU of the same quantization: the RELU's outputs are >= its zero point.
RSQRT_AFTER_RELU = ((Quantization((0.01,), (0,)), Quantization((0.1,), (-3,))),
                    (Quantization((0.003,), (37,)), Quantization((0.02,), (-128,))),
                    (Quantization((0.2,), (120,)), Quantization((0.004,), (10,))))


def rsqrt_model() -> ModelBuilder:
    """One RSQRT per quantization of RSQRT_INPUTS (each of all 256 int8 values), then one RELU + RSQRT per
    quantization of RSQRT_AFTER_RELU."""
    built = ModelBuilder()
    for index, (in_quant, out_quant) in enumerate(RSQRT_INPUTS):
        data = built.add(Tensor(f"direct{index}_in", INT8_VALUES.shape, "int8", in_quant))
        built.inputs.append(data)
        built.outputs.append(built.op("RSQRT", (data,), Tensor(f"direct{index}_out", INT8_VALUES.shape, "int8",
                                                                   out_quant)))
    for index, (in_quant, out_quant) in enumerate(RSQRT_AFTER_RELU):
        data = built.add(Tensor(f"relu{index}_in", (2, 3, 64), "int8", in_quant))
        relu = built.op("RELU", (data,), Tensor(f"relu{index}", (2, 3, 64), "int8", in_quant))
        built.inputs.append(data)
        built.outputs.append(built.op("RSQRT", (relu,), Tensor(f"relu{index}_out", (2, 3, 64), "int8", out_quant)))
    return built


def test_rsqrt_is_bit_exact_with_tflite_micro(tmp_path):
    built = rsqrt_model()
    every_value = [INT8_VALUES] * len(RSQRT_INPUTS)
    after_relu = [_RNG.integers(-128, 128, (2, 3, 64)).astype(np.int8) for _ in RSQRT_AFTER_RELU]
    assert_bit_exact_with_tflite_micro(built.model(), tmp_path, inputs=every_value + after_relu)


def _quant(scale: float, zero_point: int) -> Quantization:
    return Quantization((scale,), (zero_point,))


class _Block(ModelBuilder):
    """An int8 transformer encoder block over (1, TOKENS, DIM) built operator by operator."""

    def constant(self, name: str, values: np.ndarray, quant: Quantization) -> int:
        return self.add(Tensor(name, values.shape, str(values.dtype), quant, data=values))

    def int32_axis(self, name: str, values: tuple[int, ...]) -> int:
        return self.add(Tensor(name, (len(values),), "int32", data=np.array(values, np.int32)))

    def unary(self, builtin: str, data: int, name: str, shape: tuple[int, ...], quant: Quantization,
              options: Options | None = None) -> int:
        return self.op(builtin, (data,), Tensor(name, shape, "int8", quant), options)

    def binary(self, builtin: str, lhs: int, rhs: int, name: str, quant: Quantization) -> int:
        shape = np.broadcast_shapes(self.tensors[lhs].shape, self.tensors[rhs].shape)
        return self.op(builtin, (lhs, rhs), Tensor(name, shape, "int8", quant))

    def fully_connected(self, data: int, units: int, name: str, quant: Quantization, per_channel: bool) -> int:
        """FULLY_CONNECTED over the last axis, keep_num_dims, int8 weights (per output channel or per tensor)."""
        shape = self.tensors[data].shape
        depth, input_scale = shape[-1], self.tensors[data].quantization.scales[0]
        scales = tuple(_RNG.uniform(0.002, 0.02, units if per_channel else 1))
        weight = self.constant(f"{name}_w", _RNG.integers(-127, 128, (units, depth)).astype(np.int8),
                               Quantization(scales, (0,) * len(scales)))
        bias_scales = tuple(input_scale * s for s in scales)
        bias = self.constant(f"{name}_b", _RNG.integers(-2000, 2000, units).astype(np.int32),
                             Quantization(bias_scales, (0,) * len(scales)))
        options = Options("FullyConnectedOptions", {"KeepNumDims": True})
        return self.op("FULLY_CONNECTED", (data, weight, bias), Tensor(name, (*shape[:-1], units), "int8", quant),
                       options, version=5)

    def layer_normalization(self, data: int, name: str, quants: dict[str, Quantization]) -> int:
        """Keras' LayerNormalization over the last axis as TFLite's converter writes it (vit_tiny_16_int8)."""
        shape = self.tensors[data].shape
        reduced = (*shape[:-1], 1)
        axis = self.int32_axis(f"{name}_axis", (len(shape) - 1,))
        keep = Options("ReducerOptions", {"KeepDims": True})
        mean = self.op("MEAN", (data, axis), Tensor(f"{name}_mean", reduced, "int8", quants["mean"]), keep)
        squares = self.binary("SQUARED_DIFFERENCE", data, mean, f"{name}_squares", quants["squares"])
        variance = self.op("MEAN", (squares, axis), Tensor(f"{name}_variance", reduced, "int8", quants["variance"]),
                           keep)
        epsilon = self.constant(f"{name}_epsilon", np.array(-43, np.int8), _quant(5.88e-09, -43))
        shifted = self.binary("ADD", variance, epsilon, f"{name}_shifted", quants["variance"])
        inverse = self.unary("RSQRT", shifted, f"{name}_rsqrt", reduced, quants["rsqrt"])
        gamma = self.constant(f"{name}_gamma", _RNG.integers(-128, 128, shape[-1:]).astype(np.int8),
                              _quant(0.005, -128))
        factor = self.binary("MUL", inverse, gamma, f"{name}_factor", quants["factor"])
        scaled = self.binary("MUL", data, factor, f"{name}_scaled", quants["scaled"])
        mean_scaled = self.binary("MUL", mean, factor, f"{name}_mean_scaled", quants["mean_scaled"])
        beta = self.constant(f"{name}_beta", _RNG.integers(-128, 128, shape[-1:]).astype(np.int8), _quant(0.003, -1))
        offset = self.binary("SUB", beta, mean_scaled, f"{name}_offset", quants["mean_scaled"])
        return self.binary("ADD", scaled, offset, f"{name}_out", quants["scaled"])

    def heads(self, data: int, name: str, heads: int, permutation: tuple[int, ...]) -> int:
        """(1, T, D) -> (1, T, heads, D / heads) -> transposed by ``permutation``."""
        _, tokens, dim = self.tensors[data].shape
        quant = self.tensors[data].quantization
        split = (1, tokens, heads, dim // heads)
        shape = self.int32_axis(f"{name}_shape", split)
        reshaped = self.op("RESHAPE", (data, shape), Tensor(f"{name}_split", split, "int8", quant),
                           Options("ReshapeOptions", {"NewShape": split}))
        perm = self.int32_axis(f"{name}_perm", permutation)
        return self.op("TRANSPOSE", (reshaped, perm),
                       Tensor(f"{name}_heads", tuple(split[p] for p in permutation), "int8", quant))

    def batch_matmul(self, lhs: int, rhs: int, name: str, quant: Quantization, adj_y: bool = False) -> int:
        lhs_shape, rhs_shape = self.tensors[lhs].shape, self.tensors[rhs].shape
        columns = rhs_shape[-2] if adj_y else rhs_shape[-1]
        return self.op("BATCH_MATMUL", (lhs, rhs), Tensor(name, (*lhs_shape[:-1], columns), "int8", quant),
                       Options("BatchMatMulOptions", {"AdjY": adj_y}))


TOKENS, DIM, HEADS, HIDDEN = 16, 24, 2, 48
LAYER_NORM_QUANTS = {
    "mean": _quant(0.00044, 14), "squares": _quant(0.0035, -128), "variance": _quant(0.00045, -128),
    "rsqrt": _quant(0.031, -128), "factor": _quant(0.04, -128), "scaled": _quant(0.027, 12),
    "mean_scaled": _quant(0.005, -17),
}


def attention_block_model(adj_y: bool) -> ModelBuilder:
    """A pre-norm encoder block: x + attention(LN(x)), then + MLP(LN(.)) with GELU as x * sigmoid(1.702 x).
    The keys are transposed for the scores (as Keras' MultiHeadAttention converts), or read with adj_y."""
    block = _Block()
    x = block.add(Tensor("tokens", (1, TOKENS, DIM), "int8", _quant(0.0069, -6)))
    block.inputs.append(x)
    normed = block.layer_normalization(x, "ln1", LAYER_NORM_QUANTS)
    query = block.heads(block.fully_connected(normed, DIM, "query", _quant(0.0088, 4), per_channel=True),
                        "query", HEADS, (0, 2, 1, 3))
    key_permutation = (0, 2, 1, 3) if adj_y else (0, 2, 3, 1)
    key = block.heads(block.fully_connected(normed, DIM, "key", _quant(0.0024, -9), per_channel=True),
                      "key", HEADS, key_permutation)
    value = block.heads(block.fully_connected(normed, DIM, "value", _quant(0.0097, 9), per_channel=False),
                        "value", HEADS, (0, 2, 1, 3))
    scores = block.batch_matmul(query, key, "scores", _quant(0.0038, -37), adj_y=adj_y)
    weights = block.unary("SOFTMAX", scores, "attention", block.tensors[scores].shape, _quant(1 / 256, -128),
                          Options("SoftmaxOptions", {"Beta": 1.0}))
    context = block.batch_matmul(weights, value, "context", _quant(0.0065, 4))
    merge = block.int32_axis("merge_perm", (0, 2, 1, 3))
    merged = block.op("TRANSPOSE", (context, merge), Tensor("context_merged", (1, TOKENS, HEADS, DIM // HEADS),
                                                           "int8", _quant(0.0065, 4)))
    flat_shape = block.int32_axis("flat_shape", (1, TOKENS, DIM))
    flat = block.op("RESHAPE", (merged, flat_shape), Tensor("context_flat", (1, TOKENS, DIM), "int8",
                                                              _quant(0.0065, 4)),
                    Options("ReshapeOptions", {"NewShape": (1, TOKENS, DIM)}))
    attended = block.fully_connected(flat, DIM, "attention_out", _quant(0.0084, 8), per_channel=True)
    residual = block.binary("ADD", x, attended, "residual1", _quant(0.0084, 8))
    normed2 = block.layer_normalization(residual, "ln2", LAYER_NORM_QUANTS)
    hidden = block.fully_connected(normed2, HIDDEN, "mlp1", _quant(0.0237, 8), per_channel=True)
    slope = block.constant("gelu_slope", np.array(127, np.int8), _quant(1.702 / 255, -128))
    sharpened = block.binary("MUL", hidden, slope, "gelu_sharpened", _quant(0.0404, 8))
    gate = block.unary("LOGISTIC", sharpened, "gelu_gate", block.tensors[sharpened].shape, _quant(1 / 256, -128))
    gelu = block.binary("MUL", hidden, gate, "gelu", _quant(0.0116, -114))
    projected = block.fully_connected(gelu, DIM, "mlp2", _quant(0.016, -12), per_channel=True)
    block.outputs.append(block.binary("ADD", residual, projected, "block_out", _quant(0.016, -12)))
    return block


@pytest.mark.parametrize("adj_y", [False, True], ids=["transposed_keys", "adj_y"])
def test_an_int8_attention_block_is_bit_exact_with_tflite_micro(adj_y, tmp_path):
    model = attention_block_model(adj_y).model()
    reshapes = frozenset(model.tensors[op.outputs[0]].name for op in model.operators if op.builtin == "RESHAPE")
    assert_bit_exact_with_tflite_micro(model, tmp_path, views=reshapes)
