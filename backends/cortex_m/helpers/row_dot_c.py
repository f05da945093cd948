"""The bundle's row dot product helper: `<prefix>_row_dot_s8x4`, `static inline` C in `<model>_internal.h`,
called by the SVDF time product on DSP cores (`backends.cortex_m.schedules.row_dot`).

It adds to four int32 accumulators the dot product of each channel's int8 input row with its own int8
weight row. Where the compiler defines `__ARM_FEATURE_DSP`, four inputs and four weights per 32-bit load,
widened by SXTB16 and multiplied two pairs per SMLAD (the dual MAC's word operations, `backends.cortex_m.helpers.dual_mac_c`,
which defines them first); elsewhere, and for the last bytes of a row, portable C. Bit-exact.
"""

from __future__ import annotations


def row_dot_helper_name(prefix: str) -> str:
    """The C name of the helper in the bundle `prefix`."""
    return f"{prefix}_row_dot_s8x4"


def row_dot_helper_c(prefix: str) -> str:
    """The C definition of the helper for the bundle `prefix` (after the dual MAC's word operations)."""
    return f"""
/* acc[c] += sum over k < row_len of x[c * x_channel_stride + k] * w[c * w_channel_stride + k], for the four
   channels c < 4 (strides and lengths in elements). */
static inline int32_t {row_dot_helper_name(prefix)}(int32_t *acc, const int8_t *x, const int8_t *w,
                                    int32_t x_channel_stride, int32_t w_channel_stride, int32_t row_len)
{{
    for (int32_t c = 0; c < 4; ++c) {{
        const int8_t *xc = x + c * x_channel_stride, *wc = w + c * w_channel_stride;
        int32_t sum = acc[c];
        int32_t k = 0;
#if defined(__ARM_FEATURE_DSP)
        for (; k + 4 <= row_len; k += 4) {{
            const int32_t word = {prefix}_load_s8x4(xc + k);
            sum = {prefix}_mac_s8x4(sum, __sxtb16(word), {prefix}_sxtb16_ror8(word), {prefix}_load_s8x4(wc + k));
        }}
#endif
        for (; k < row_len; ++k) {{
            sum += xc[k] * wc[k];
        }}
        acc[c] = sum;
    }}
    return 0;
}}
"""
