"""numpy reference of TFLite's integer (int8) kernel rules, the unit-test oracle of tvm_ext.kernels.

Our own code, written from the published rules (TFLite reference kernels and gemmlowp fixedpoint);
deliberately naive: numpy int64 arithmetic for the vectorisable parts, plain Python integers for the
scalar fixed-point algorithms. Nothing here imports tvm or tvm_ext.
"""

from __future__ import annotations

import math

import numpy as np

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


# ------------------------------------------------------------------------------------ multipliers
def quantize_multiplier(real: float, single_rounding: bool = False) -> tuple[int, int]:
    """real ~= multiplier * 2^(shift-31), multiplier in [2^30, 2^31) (0, 0 for real == 0)."""
    if real == 0:
        return 0, 0
    mantissa, exponent = np.frexp(np.float64(real))
    scaled = float(mantissa) * 2.0**31
    q = int(math.copysign(math.floor(abs(scaled) + 0.5), scaled))
    if q == 2**31:
        q, exponent = q // 2, exponent + 1
    if exponent < -31:
        return 0, 0
    if single_rounding and exponent > 30:
        return 2**31 - 1, 30
    return q, int(exponent)


# -------------------------------------------------------------------------------- fixed point
def wrap_int32(x: np.ndarray) -> np.ndarray:
    return ((np.asarray(x, np.int64) + 2**31) % 2**32 - 2**31).astype(np.int64)


def srdhm(a, b) -> np.ndarray:
    """SaturatingRoundingDoublingHighMul, elementwise on int32 values held in int64."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    ab = a * b  # |a*b| <= 2^62 fits int64
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    total = ab + nudge
    high = np.where(total >= 0, total // (1 << 31), -((-total) // (1 << 31)))  # truncation toward zero
    return np.where((a == b) & (a == INT32_MIN), INT32_MAX, high).astype(np.int64)


def rdbpot(x, exponent) -> np.ndarray:
    """RoundingDivideByPOT: nearest, ties away from zero."""
    x = np.asarray(x, np.int64)
    exponent = np.asarray(exponent, np.int64)
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def multiply_by_quantized_multiplier(x, multiplier, shift, single_rounding: bool = False) -> np.ndarray:
    x = np.asarray(x, np.int64)
    multiplier = np.asarray(multiplier, np.int64)
    shift = np.asarray(shift, np.int64)
    if single_rounding:
        total = 31 - shift
        return (x * multiplier + (np.int64(1) << (total - 1))) >> total
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    return rdbpot(srdhm(wrap_int32(x << left), multiplier), right)


def _to_int8(x, low: int = -128, high: int = 127) -> np.ndarray:
    return np.clip(x, low, high).astype(np.int8)


# ------------------------------------------------------------------------------------ kernels
def _patches(x_centered: np.ndarray, kernel, strides, padding, dilation, out_hw):
    """Yield (ky, kx, window) where window[n, oy, ox, c] = centered input under tap (ky, kx), 0 outside."""
    n, h, w, c = x_centered.shape
    top, left = padding[0], padding[1]
    padded = np.zeros((n, h + top + padding[2] + kernel[0] * dilation[0], w + left + padding[3] + kernel[1] * dilation[1], c), np.int64)
    padded[:, top : top + h, left : left + w, :] = x_centered
    for ky in range(kernel[0]):
        for kx in range(kernel[1]):
            y0, x0 = ky * dilation[0], kx * dilation[1]
            yield ky, kx, padded[:, y0 : y0 + strides[0] * out_hw[0] : strides[0], x0 : x0 + strides[1] * out_hw[1] : strides[1], :]


def _out_hw(shape, kernel, strides, padding, dilation):
    h, w = shape[1], shape[2]
    return (
        (h + padding[0] + padding[2] - (kernel[0] - 1) * dilation[0] - 1) // strides[0] + 1,
        (w + padding[1] + padding[3] - (kernel[1] - 1) * dilation[1] - 1) // strides[1] + 1,
    )


def conv2d(x, w_hwio, bias, in_zp, out_zp, multipliers, shifts, strides=(1, 1), padding=(0, 0, 0, 0),
           dilation=(1, 1), act=(-128, 127), single_rounding=False) -> np.ndarray:
    """Per-channel int8 CONV_2D, NHWC x HWIO; padding (top, left, bottom, right)."""
    kh, kw, _, cout = w_hwio.shape
    out_hw = _out_hw(x.shape, (kh, kw), strides, padding, dilation)
    acc = np.zeros((x.shape[0], *out_hw, cout), np.int64)
    for ky, kx, window in _patches(x.astype(np.int64) - in_zp, (kh, kw), strides, padding, dilation, out_hw):
        acc += np.einsum("nyxc,co->nyxo", window, w_hwio[ky, kx].astype(np.int64))
    return _requantize(acc, bias, out_zp, multipliers, shifts, act, single_rounding)


def depthwise_conv2d(x, w_hwc, bias, in_zp, out_zp, multipliers, shifts, strides=(1, 1), padding=(0, 0, 0, 0),
                     dilation=(1, 1), act=(-128, 127), single_rounding=False) -> np.ndarray:
    """Per-channel int8 DEPTHWISE_CONV_2D; weight (KH, KW, C * depth_multiplier)."""
    kh, kw, cout = w_hwc.shape
    mult = cout // x.shape[3]
    out_hw = _out_hw(x.shape, (kh, kw), strides, padding, dilation)
    acc = np.zeros((x.shape[0], *out_hw, cout), np.int64)
    centered = np.repeat(x.astype(np.int64) - in_zp, mult, axis=3)
    for ky, kx, window in _patches(centered, (kh, kw), strides, padding, dilation, out_hw):
        acc += window * w_hwc[ky, kx].astype(np.int64)
    return _requantize(acc, bias, out_zp, multipliers, shifts, act, single_rounding)


def fully_connected(x, w_ok, bias, in_zp, out_zp, multiplier, shift, act=(-128, 127), single_rounding=False):
    """int8 FULLY_CONNECTED, x (N, K), weight (O, K)."""
    acc = (x.astype(np.int64) - in_zp) @ w_ok.astype(np.int64).T
    return _requantize(acc, bias, out_zp, multiplier, shift, act, single_rounding)


def _requantize(acc, bias, out_zp, multipliers, shifts, act, single_rounding):
    if bias is not None:
        acc = wrap_int32(acc + np.asarray(bias, np.int64))
    scaled = multiply_by_quantized_multiplier(wrap_int32(acc), multipliers, shifts, single_rounding)
    return _to_int8(scaled + out_zp, *act)


def add(a, b, a_zp, b_zp, out_zp, a_scale, b_scale, out_scale, act=(-128, 127), single_rounding=False):
    """int8 ADD: left shift 20, per-input rescale to twice the larger input scale, output rescale."""
    twice_max = 2.0 * float(max(np.float32(a_scale), np.float32(b_scale)))
    m1 = quantize_multiplier(float(a_scale) / twice_max, single_rounding)
    m2 = quantize_multiplier(float(b_scale) / twice_max, single_rounding)
    mo = quantize_multiplier(twice_max / (2**20 * float(out_scale)), single_rounding)
    sa = multiply_by_quantized_multiplier((a.astype(np.int64) - a_zp) << 20, *m1, single_rounding)
    sb = multiply_by_quantized_multiplier((b.astype(np.int64) - b_zp) << 20, *m2, single_rounding)
    return _to_int8(multiply_by_quantized_multiplier(sa + sb, *mo, single_rounding) + out_zp, *act)


def _pool_windows(x, pool, strides, padding):
    n, h, w, c = x.shape
    out_h = (h + padding[0] + padding[2] - pool[0]) // strides[0] + 1
    out_w = (w + padding[1] + padding[3] - pool[1]) // strides[1] + 1
    for oy in range(out_h):
        for ox in range(out_w):
            y0, x0 = oy * strides[0] - padding[0], ox * strides[1] - padding[1]
            yield oy, ox, x[:, max(y0, 0) : min(y0 + pool[0], h), max(x0, 0) : min(x0 + pool[1], w), :]
    return out_h, out_w


def _pool(x, pool, strides, padding, reduce, act):
    n, h, w, c = x.shape
    out_h = (h + padding[0] + padding[2] - pool[0]) // strides[0] + 1
    out_w = (w + padding[1] + padding[3] - pool[1]) // strides[1] + 1
    out = np.zeros((n, out_h, out_w, c), np.int64)
    for oy, ox, window in _pool_windows(x, pool, strides, padding):
        out[:, oy, ox, :] = reduce(window.astype(np.int64))
    return _to_int8(out, *act)


def average_pool2d(x, pool, strides, padding=(0, 0, 0, 0), act=(-128, 127)):
    def rounded_mean(window):
        total = window.sum(axis=(1, 2))
        count = window.shape[1] * window.shape[2]
        magnitude = (np.abs(total) + count // 2) // count
        return np.sign(total) * magnitude

    return _pool(x, pool, strides, padding, rounded_mean, act)


def max_pool2d(x, pool, strides, padding=(0, 0, 0, 0), act=(-128, 127)):
    return _pool(x, pool, strides, padding, lambda window: window.max(axis=(1, 2)), act)


# ------------------------------------------------------------------------------------ softmax
def _srdhm1(a: int, b: int) -> int:
    return int(srdhm(a, b))


def _rdbpot1(x: int, e: int) -> int:
    return int(rdbpot(x, e))


def _sat_shl(x: int, e: int) -> int:
    limit = (1 << (31 - e)) - 1
    return INT32_MAX if x > limit else INT32_MIN if x < -limit else x << e


def _exp_on_negative_values_q5_26(a: int) -> int:
    quarter = 1 << 24
    a_mod = (a & (quarter - 1)) - quarter
    x = _sat_shl(a_mod, 5) + (1 << 28)
    x2 = _srdhm1(x, x)
    x3 = _srdhm1(x2, x)
    x4_over_4 = _rdbpot1(_srdhm1(x2, x2), 2)
    poly = _rdbpot1(_srdhm1(x4_over_4 + x3, 715827883) + x2, 1)
    result = 1895147668 + _srdhm1(1895147668, x + poly)
    remainder = a_mod - a
    for k, multiplier in ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
                          (2, 39332535), (3, 720401), (4, 242)):
        if remainder & (1 << (26 + k)):
            result = _srdhm1(result, multiplier)
    return INT32_MAX if a == 0 else result


def _one_over_one_plus_x_q0_31(a: int) -> int:
    total = a + INT32_MAX
    rounded = total + (1 if total >= 0 else -1)
    half = rounded // 2 if rounded >= 0 else -((-rounded) // 2)  # C division truncates toward zero
    x = 1515870810 + _srdhm1(half, -1010580540)
    for _ in range(3):
        x = x + _sat_shl(_srdhm1(x, (1 << 29) - _srdhm1(half, x)), 2)
    return _sat_shl(x, 1)


def softmax(x, input_scale, beta=1.0, single_rounding=False) -> np.ndarray:
    """int8 SOFTMAX over the last axis, output scale 1/256 and zero point -128 (reference_ops::Softmax)."""
    max_real = float(2**30 - 1) if single_rounding else float(2**31 - 1)
    real = min(beta * float(input_scale) * 2.0**26, max_real)
    multiplier, left_shift = quantize_multiplier(real, single_rounding)
    diff_min = -math.floor(31 * 2.0**26 / 2.0**left_shift)
    rows = x.reshape(-1, x.shape[-1]).astype(np.int64)
    out = np.full(rows.shape, -128, np.int64)
    for r, row in enumerate(rows):
        diffs = [int(v) - int(row.max()) for v in row]
        exps = [
            _exp_on_negative_values_q5_26(int(multiply_by_quantized_multiplier(d, multiplier, left_shift, single_rounding)))
            if d >= diff_min else None
            for d in diffs
        ]
        total = sum(_rdbpot1(e, 12) for e in exps if e is not None)
        headroom = 32 - total.bit_length()
        bits_over_unit = 12 - headroom
        scale = _one_over_one_plus_x_q0_31(((total << headroom) - (1 << 31)))
        for c, e in enumerate(exps):
            if e is not None:
                out[r, c] = min(max(_rdbpot1(_srdhm1(scale, e), bits_over_unit + 23) - 128, -128), 127)
    return out.reshape(x.shape).astype(np.int8)
