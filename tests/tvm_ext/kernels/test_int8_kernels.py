"""Each integer TE kernel, built for the host, against the numpy reference of TFLite's rules."""

from __future__ import annotations

import numpy as np
import pytest

import tvm
from tvm import te

import tflite_int8_reference as ref
from tvm_ext.kernels import (
    OutputStage,
    Rounding,
    add_int8,
    average_pool2d_integer,
    conv2d_int8,
    depthwise_conv2d_int8,
    fully_connected_int8,
    lookup_int8,
    max_pool2d_integer,
    softmax_int8,
    softmax_pair_int8,
)
from tvm_ext.kernels.fixed_point import (
    multiply_by_quantized_multiplier,
    saturating_rounding_doubling_high_mul,
)
from tvm_ext.kernels.dense import pair_weights, stack_rows, stacks_rows, widen_rows, widens_rows
from tvm_ext.kernels.pool import average_of_sums, row_sums
from tvm_ext.kernels.int8_tables import softmax_exp_table, softmax_pair_table
from tvm_ext.kernels.quant_params import ActivationRange, add_params, quantize_multiplier, softmax_params

ROUNDINGS = [Rounding.DOUBLE, Rounding.SINGLE]
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def run_te(build, inputs: list[np.ndarray]) -> np.ndarray:
    """Build ``build(*placeholders)`` for llvm and run it on ``inputs``."""
    placeholders = [te.placeholder(a.shape, str(a.dtype), name=f"in{i}") for i, a in enumerate(inputs)]
    out = build(*placeholders)
    func = te.create_prim_func([*placeholders, out])
    lib = tvm.tirx.build(tvm.IRModule({"main": func}), target="llvm")
    dev = tvm.cpu()
    args = [tvm.runtime.tensor(a, dev) for a in inputs]
    result = tvm.runtime.tensor(np.zeros([int(d) for d in out.shape], str(out.dtype)), dev)
    lib["main"](*args, result)
    return result.numpy()


# ------------------------------------------------------------------------------ fixed point
EDGE_VALUES = np.array(
    [0, 1, -1, 2, -2, 3, -3, 63, -63, 64, -64, 65, -65, 1 << 20, -(1 << 20), (1 << 30) + 1, -(1 << 30) - 1,
     INT32_MAX, INT32_MIN, INT32_MIN + 1, INT32_MAX - 1],
    np.int32,
)


def _mbqm_values() -> np.ndarray:
    rng = np.random.default_rng(7)
    return np.concatenate([EDGE_VALUES, rng.integers(INT32_MIN, INT32_MAX, 2000, dtype=np.int64).astype(np.int32),
                           rng.integers(-5000, 5000, 2000).astype(np.int32)])


@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize(
    "multiplier, shift",
    [(1 << 30, -1), (1 << 30, 0), (1518500250, -7), (1073741825, -31), (2147483647, 0), (1518500250, 3),
     (1999999999, 1), (1 << 30, 30)],
)
def test_multiply_by_quantized_multiplier_matches_reference(multiplier, shift, rounding):
    values = _mbqm_values()
    if shift > 0:  # TFLite requires the left-shifted value to fit int32 for shift > 0 in single rounding
        values = (values >> (shift + 1)).astype(np.int32) if rounding is Rounding.SINGLE else values
    got = run_te(
        lambda x: te.compute(x.shape, lambda i: multiply_by_quantized_multiplier(x[i], multiplier, shift, rounding)),
        [values],
    )
    want = ref.multiply_by_quantized_multiplier(values, multiplier, shift, rounding is Rounding.SINGLE)
    np.testing.assert_array_equal(got, want)


def test_double_rounding_differs_from_single_on_ties():
    """The two modes must actually differ (else a mode switch could be silently ignored)."""
    x = np.arange(-64, 64, dtype=np.int32)
    double = ref.multiply_by_quantized_multiplier(x, 1 << 30, -1, single_rounding=False)
    single = ref.multiply_by_quantized_multiplier(x, 1 << 30, -1, single_rounding=True)
    assert np.any(double != single)
    # Negative ties round away from zero with double rounding: -2 * 0.25 = -0.5 -> -1.
    assert ref.multiply_by_quantized_multiplier(np.int64(-2), 1 << 30, -1) == -1
    assert ref.multiply_by_quantized_multiplier(np.int64(-2), 1 << 30, -1, single_rounding=True) == 0


def test_saturating_doubling_high_mul_saturates_at_int32_limits():
    a = np.array([INT32_MIN, INT32_MIN, INT32_MAX, INT32_MAX, -5, 7, INT32_MIN + 1], np.int32)
    b = np.array([INT32_MIN, INT32_MAX, INT32_MAX, INT32_MIN, -3, 1 << 30, INT32_MIN], np.int32)
    got = run_te(lambda p, q: te.compute(p.shape, lambda i: saturating_rounding_doubling_high_mul(p[i], q[i])), [a, b])
    np.testing.assert_array_equal(got, ref.srdhm(a, b))
    assert got[0] == INT32_MAX


@pytest.mark.parametrize("real", [0.0, 1e-12, 0.25, 0.5, 0.999999999, 1.0, 1.5, 3.7e-5, 123.456, 2.0**35])
@pytest.mark.parametrize("rounding", ROUNDINGS)
def test_quantize_multiplier_matches_reference(real, rounding):
    assert quantize_multiplier(real, rounding) == ref.quantize_multiplier(real, rounding is Rounding.SINGLE)


# ---------------------------------------------------------------------------------- kernels
def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _int8(rng, shape) -> np.ndarray:
    return rng.integers(-128, 128, shape).astype(np.int8)


def _channel_requant(rng, channels: int, rounding: Rounding):
    reals = rng.uniform(1e-4, 4.0, channels)
    reals[0] = 2.5  # shift > 0 on channel 0
    pairs = [quantize_multiplier(r, rounding) for r in reals]
    return np.array([m for m, _ in pairs], np.int32), np.array([s for _, s in pairs], np.int8)


CONV_CASES = [
    # (input HW, kernel HW, strides, padding (t, l, b, r), in_zp, out_zp, act)
    ((7, 6), (3, 3), (1, 1), (1, 1, 1, 1), -128, 127, (-128, 127)),   # SAME, odd kernel
    ((8, 7), (4, 2), (2, 2), (1, 0, 2, 1), 127, -128, (-128, 127)),   # SAME, even kernel, stride 2
    ((5, 5), (2, 2), (1, 1), (0, 0, 1, 1), 3, -128, (-128, 40)),      # SAME even kernel, RELU6-like clamp
    ((6, 6), (3, 3), (2, 2), (0, 0, 0, 0), -5, 10, (10, 127)),        # VALID, RELU clamp at out_zp
]


@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_matches_reference(case, rounding):
    hw, khw, strides, padding, in_zp, out_zp, act = case
    rng = _rng(1)
    x, w = _int8(rng, (1, *hw, 3)), _int8(rng, (*khw, 3, 5))
    bias = rng.integers(-20000, 20000, 5).astype(np.int32)
    multipliers, shifts = _channel_requant(rng, 5, rounding)
    stage = OutputStage(0, 0, out_zp, ActivationRange(*act), rounding)
    got = run_te(
        lambda a, b, c, m, s: conv2d_int8(a, b, c, input_zero_point=in_zp, output=stage, strides=strides,
                                          padding=padding, dilation=(1, 1), multiplier=m, shift=s),
        [x, w, bias, multipliers, shifts],
    )
    want = ref.conv2d(x, w, bias, in_zp, out_zp, multipliers, shifts.astype(np.int64), strides, padding, (1, 1), act,
                      rounding is Rounding.SINGLE)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("depth_multiplier", [1, 2])
def test_depthwise_conv2d_matches_reference(case, depth_multiplier, rounding):
    hw, khw, strides, padding, in_zp, out_zp, act = case
    rng = _rng(2)
    channels = 4
    x, w = _int8(rng, (1, *hw, channels)), _int8(rng, (*khw, channels * depth_multiplier))
    bias = rng.integers(-20000, 20000, channels * depth_multiplier).astype(np.int32)
    multipliers, shifts = _channel_requant(rng, channels * depth_multiplier, rounding)
    stage = OutputStage(0, 0, out_zp, ActivationRange(*act), rounding)
    got = run_te(
        lambda a, b, c, m, s: depthwise_conv2d_int8(a, b, c, input_zero_point=in_zp, output=stage, strides=strides,
                                                    padding=padding, dilation=(1, 1), multiplier=m, shift=s),
        [x, w, bias, multipliers, shifts],
    )
    want = ref.depthwise_conv2d(x, w, bias, in_zp, out_zp, multipliers, shifts.astype(np.int64), strides, padding,
                                (1, 1), act, rounding is Rounding.SINGLE)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("in_zp, out_zp, bias_dtype", [(-128, 127, np.int32), (127, -128, np.int16), (0, 5, np.int32)])
def test_fully_connected_matches_reference(in_zp, out_zp, bias_dtype, rounding):
    rng = _rng(3)
    x, w = _int8(rng, (2, 33)), _int8(rng, (7, 33))
    limit = np.iinfo(bias_dtype).max
    bias = rng.integers(-limit, limit, 7).astype(bias_dtype)
    multiplier, shift = quantize_multiplier(0.0123, rounding)
    stage = OutputStage(multiplier, shift, out_zp, ActivationRange(), rounding)
    got = run_te(lambda a, b, c: fully_connected_int8(a, b, c, input_zero_point=in_zp, output=stage), [x, w, bias])
    want = ref.fully_connected(x, w, bias, in_zp, out_zp, multiplier, shift, single_rounding=rounding is Rounding.SINGLE)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("kernel, strides, padding", [((1, 1), (1, 1), (0, 0, 0, 0)), ((1, 1), (2, 2), (0, 0, 0, 0)),
                                                     ((3, 3), (1, 1), (1, 1, 1, 1)), ((3, 2), (2, 2), (0, 0, 1, 1))])
def test_conv2d_of_paired_weights_matches_reference(kernel, strides, padding):
    """A convolution given `pair_weights`' int32 words of its OHWI weights as [O, KH * KW * I], reshaped to
    [O / 8, KH, KW, I, 4], decodes every int8 weight exactly: the same outputs as TFLite's, -128 and 127 forced in,
    1x1 and KxK windows, strides 1 and 2, padded or not."""
    rng = _rng(5)
    x, w = _int8(rng, (1, 5, 6, 7)), _int8(rng, (*kernel, 7, 16))
    w[0, 0, :4, 0], w[0, 0, :4, 1], w[-1, -1, 4:, 2], w[-1, 0, 4:, 15] = -128, 127, -128, -128
    bias = rng.integers(-20000, 20000, 16).astype(np.int32)
    multipliers, shifts = _channel_requant(rng, 16, Rounding.DOUBLE)
    stage = OutputStage(0, 0, 4, ActivationRange(), Rounding.DOUBLE)
    ohwi = w.transpose(3, 0, 1, 2)
    words = pair_weights(ohwi.reshape(16, -1)).reshape(2, *kernel, 7, 4)
    got = run_te(
        lambda a, b, c, m, s: conv2d_int8(a, b, c, input_zero_point=-9, output=stage, strides=strides,
                                          padding=padding, dilation=(1, 1), multiplier=m, shift=s,
                                          paired_weights=True),
        [x, words, bias, multipliers, shifts],
    )
    want = ref.conv2d(x, w, bias, -9, 4, multipliers, shifts.astype(np.int64), strides, padding, (1, 1),
                      (-128, 127), False)
    np.testing.assert_array_equal(got, want)


def _packed_fully_connected_matches_reference(rng, x: np.ndarray, w: np.ndarray, packed: np.ndarray,
                                              **layout: bool) -> None:
    """The kernel given ``packed`` (``w`` re-laid out as ``layout`` says) gives TFLite's outputs on ``x``."""
    bias = rng.integers(-5000, 5000, w.shape[0]).astype(np.int32)
    multiplier, shift = quantize_multiplier(0.0123, Rounding.DOUBLE)
    stage = OutputStage(multiplier, shift, 3, ActivationRange(), Rounding.DOUBLE)
    got = run_te(lambda a, b, c: fully_connected_int8(a, b, c, input_zero_point=-7, output=stage, **layout),
                 [x, packed, bias])
    np.testing.assert_array_equal(got, ref.fully_connected(x, w, bias, -7, 3, multiplier, shift))


def test_fully_connected_of_paired_weights_matches_reference():
    """The kernel given `pair_weights`' int32 words (two channels to a word) decodes every int8 weight exactly:
    the same outputs as TFLite's on weights over the whole int8 range, -128 and 127 forced in."""
    rng = _rng(4)
    x, w = _int8(rng, (2, 33)), _int8(rng, (16, 33))
    w[0, :4], w[1, :4], w[2, 4:8], w[3, 8:12] = -128, 127, -128, -128
    _packed_fully_connected_matches_reference(rng, x, w, pair_weights(w), paired_weights=True)


def test_fully_connected_of_stacked_weights_matches_reference():
    """The kernel given `stack_rows`' bytes (two channels to an int16 half, the odd one's byte less the even one's
    borrow) decodes every int8 weight exactly: the same outputs as TFLite's on weights over the whole int8 range,
    -128 and 127 forced in (an odd channel's -128 over an even channel's non-negative weights only)."""
    rng = _rng(5)
    x, w = _int8(rng, (1, 36)), _int8(rng, (12, 36))
    w[1::2][(w[1::2] == -128) & (w[0::2] < 0)] = -127
    w[0, :4], w[1, :4], w[2, 4:8], w[3, 4:8], w[4, 8:12], w[5, 8:12] = -128, 127, 0, -128, -1, 127
    assert stacks_rows(w)
    _packed_fully_connected_matches_reference(rng, x, w, stack_rows(w), stacked_rows=True)


def test_fully_connected_of_widened_weights_matches_reference():
    """The kernel given `widen_rows`' int16 halves (the SMLAD pairs of four channels per group of four inputs) reads
    every int8 weight back exactly: the same outputs as TFLite's on weights over the whole int8 range, -128 and 127
    forced in (an odd channel's -128 over an even channel's negative weight too: no borrow in this layout); the
    layout takes whole tiles of four channels over whole groups of eight inputs only."""
    rng = _rng(6)
    x, w = _int8(rng, (1, 40)), _int8(rng, (12, 40))
    w[0, :4], w[1, :4], w[2, 4:8], w[3, 4:8], w[5, 8:16] = -128, -128, 127, -128, -1
    assert widens_rows(w) and not widens_rows(w[:10]) and not widens_rows(w[:, :36])
    _packed_fully_connected_matches_reference(rng, x, w, widen_rows(w), widened_rows=True)


def test_weights_stack_only_where_the_layout_holds_them():
    """`stacks_rows` refuses a shape the layout does not tile (channels not a multiple of 4, inputs not of 4) and an
    odd channel's -128 over an even channel's negative weight (its byte would borrow below -128); over an even
    channel's zero it stacks."""
    ones = np.ones((8, 16), np.int8)
    assert stacks_rows(ones) and not stacks_rows(ones[:6]) and not stacks_rows(ones[:, :14])
    borrow = ones.copy()
    borrow[2, 5], borrow[3, 5] = -1, -128
    assert not stacks_rows(borrow)
    borrow[2, 5] = 0
    assert stacks_rows(borrow)


def test_accumulator_saturating_bias_wraps_like_int32():
    """A bias at the int32 limit: the accumulator wraps exactly as the C reference's int32 does."""
    x, w = np.full((1, 4), 127, np.int8), np.full((1, 4), 127, np.int8)
    bias = np.array([INT32_MAX - 10], np.int32)
    stage = OutputStage(1 << 30, -20, 0, ActivationRange(), Rounding.DOUBLE)
    got = run_te(lambda a, b, c: fully_connected_int8(a, b, c, input_zero_point=-128, output=stage), [x, w, bias])
    want = ref.fully_connected(x, w, bias, -128, 0, 1 << 30, -20)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("shapes", [((1, 4, 4, 3), (1, 4, 4, 3)), ((1, 4, 4, 3), (1, 1, 1, 3))])
def test_add_matches_reference(shapes, rounding):
    rng = _rng(4)
    a, b = _int8(rng, shapes[0]), _int8(rng, shapes[1])
    scales = (np.float32(0.0393), np.float32(0.1042), np.float32(0.0509))
    params = add_params(*scales, rounding)
    got = run_te(
        lambda p, q: add_int8(p, q, lhs_zero_point=-128, rhs_zero_point=4, output_zero_point=127, params=params,
                              activation=ActivationRange(-100, 127), rounding=rounding),
        [a, b],
    )
    want = ref.add(a, np.broadcast_to(b, shapes[0]), -128, 4, 127, *scales, act=(-100, 127),
                   single_rounding=rounding is Rounding.SINGLE)
    np.testing.assert_array_equal(got, want)


POOL_CASES = [((6, 5), (3, 3), (2, 2), (1, 1, 1, 1)), ((6, 6), (2, 2), (2, 2), (0, 0, 0, 0)),
              ((5, 5), (5, 5), (5, 5), (0, 0, 0, 0)), ((4, 4), (2, 2), (1, 1), (0, 0, 1, 1))]


@pytest.mark.parametrize("kernel, reference, seed, activation", [
    (average_pool2d_integer, ref.average_pool2d, 5, (-120, 100)),
    (max_pool2d_integer, ref.max_pool2d, 6, (-128, 90)),
], ids=["average", "max"])
@pytest.mark.parametrize("case", POOL_CASES)
def test_pool_matches_reference(case, kernel, reference, seed, activation):
    hw, pool, strides, padding = case
    x = _int8(_rng(seed), (1, *hw, 3))
    got = run_te(lambda a: kernel(a, pool=pool, strides=strides, padding=padding,
                                  activation=ActivationRange(*activation)), [x])
    np.testing.assert_array_equal(got, reference(x, pool, strides, padding, activation))


@pytest.mark.parametrize("bands", [[7], [2, 3, 2], [1] * 7])
@pytest.mark.parametrize("seed", [9, 10])
def test_a_global_average_pool_summed_band_by_band_matches_the_reference(bands, seed):
    """row_sums over bands of rows (each adding the sums of the bands before) then average_of_sums compute the
    global average pool of the whole input (streamed bands, tvm_ext.transform.patch_prefix): the rounding half
    away from zero of negative and positive sums alike, the saturation to int8."""
    rng = _rng(seed)
    x = _int8(rng, (1, 7, 5, 6))
    x[..., 0], x[..., 1] = -128, 127  # saturated channels: the extreme sums
    sums, start = None, 0
    for rows in bands:
        band = x[:, start:start + rows]
        sums = run_te(row_sums, [band] if sums is None else [band, sums])
        start += rows
    got = run_te(lambda total: average_of_sums(total, count=35, dtype="int8"), [sums])
    want = ref.average_pool2d(x, (7, 5), (7, 5), (0, 0, 0, 0), (-128, 127))
    np.testing.assert_array_equal(got, want)
    assert (sums < 0).any() and (sums > 0).any()


@pytest.mark.parametrize("bands", [[7], [2, 3, 2], [1] * 7])
def test_a_float_global_average_pool_summed_band_by_band_adds_in_the_whole_pools_order(bands):
    """A float pool's row_sums over bands of rows continue one sum (from 0, row after row, column after column:
    TFLite's float AVERAGE_POOL_2D's order of additions), so after the last band they are that sum to the bit,
    and average_of_sums divides it by the count in float: values of mixed signs and magnitudes, where any other
    order of additions rounds differently."""
    rng = _rng(11)
    x = (rng.standard_normal((1, 7, 5, 6)) * 10.0 ** rng.integers(-3, 4, (1, 7, 5, 6))).astype(np.float32)
    sums, start = None, 0
    for rows in bands:
        band = x[:, start:start + rows]
        sums = run_te(row_sums, [band] if sums is None else [band, sums])
        start += rows
    pixels = x.reshape(35, 6)
    want, backwards = np.zeros(6, np.float32), np.zeros(6, np.float32)
    for pixel, other in zip(pixels, pixels[::-1]):  # float32 additions, one at a time
        want, backwards = want + pixel, backwards + other
    np.testing.assert_array_equal(sums.reshape(-1), want)
    assert not np.array_equal(backwards, want)  # the order of additions shows in these values
    got = run_te(lambda total: average_of_sums(total, count=35, dtype="float32"), [sums])
    np.testing.assert_array_equal(got.reshape(-1), want / np.float32(35))


@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("input_scale", [0.1446925, 0.0039, 0.9, 7.5])
def test_softmax_matches_reference(input_scale, rounding):
    rng = _rng(8)
    x = np.concatenate([_int8(rng, (6, 12)), np.full((1, 12), 5, np.int8), np.array([[127] + [-128] * 11], np.int8)])
    table = softmax_exp_table(softmax_params(1.0, np.float32(input_scale), rounding), rounding)
    got = run_te(softmax_int8, [x, table])
    want = ref.softmax(x, np.float32(input_scale), single_rounding=rounding is Rounding.SINGLE)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("input_scale, beta", [(0.0039, 1.0), (0.1446925, 1.0), (0.9, 1.0), (0.1, 0.5), (0.03, 3.0)])
def test_softmax_of_every_difference_matches_reference(input_scale, beta, rounding):
    """A row holding every int8 value has every difference 0..255 to its maximum: every exp table entry."""
    x = np.stack([np.arange(-128, 128), np.arange(127, -129, -1)]).astype(np.int8)
    table = softmax_exp_table(softmax_params(beta, np.float32(input_scale), rounding), rounding)
    want = ref.softmax(x, np.float32(input_scale), beta, single_rounding=rounding is Rounding.SINGLE)
    np.testing.assert_array_equal(run_te(softmax_int8, [x, table]), want)


@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("input_scale, beta", [(0.0039, 1.0), (0.1446925, 1.0), (0.9, 1.0), (0.1, 0.5), (0.03, 3.0)])
def test_softmax_of_rows_of_two_by_their_difference_matches_reference(input_scale, beta, rounding):
    """The pair kernel on rows of two int8 values: each value beside six others, -128 and 127 among them (so
    every difference -255..255)."""
    values = np.arange(-128, 128, dtype=np.int8)
    x = np.stack(np.meshgrid(values, values[::51]), axis=-1).reshape(1, -1, 2)
    table = softmax_pair_table(softmax_params(beta, np.float32(input_scale), rounding), rounding)
    want = ref.softmax(x, np.float32(input_scale), beta, single_rounding=rounding is Rounding.SINGLE)
    np.testing.assert_array_equal(run_te(softmax_pair_int8, [x, table]), want)


def test_lookup_reads_the_entry_of_each_int8_value():
    x = np.arange(-128, 128, dtype=np.int8).reshape(4, 64)[:, ::-1]
    table = _int8(_rng(9), (256,))
    np.testing.assert_array_equal(run_te(lookup_int8, [x, table]), table[x.astype(np.int64) + 128])
