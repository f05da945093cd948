"""C text shared by the two-pixel MAC helpers (`backends.cortex_m.helpers.dual_mac_c`, `backends.cortex_m.helpers.dual_mac_q15_c`): their 2x2
tile of accumulators (pixels a and b, channels c and c + 1: a0, a1, b0, b1) multiplied by one weight word
per channel, and stored back."""

from __future__ import annotations


def smlad_2x2_tile_c(prefix: str, indent: str) -> str:
    """Statements adding to a0, a1, b0, b1 the products of the input pairs a02, a13, b02, b13 (int16 pairs in
    SXTB16 order) with the weight words weights0 and weights1 (channels c and c + 1), each line ``indent``ed."""
    lines = [
        f"const int32_t w0_02 = __sxtb16(weights0), w0_13 = {prefix}_sxtb16_ror8(weights0);",
        "a0 = __smlad(a13, w0_13, __smlad(a02, w0_02, a0));",
        "b0 = __smlad(b13, w0_13, __smlad(b02, w0_02, b0));",
        f"const int32_t w1_02 = __sxtb16(weights1), w1_13 = {prefix}_sxtb16_ror8(weights1);",
        "a1 = __smlad(a13, w1_13, __smlad(a02, w1_02, a1));",
        "b1 = __smlad(b13, w1_13, __smlad(b02, w1_02, b1));",
    ]
    return "".join(f"{indent}{line}\n" for line in lines)


TILE_STORE_C = """        acc_a[c] = a0;
        acc_a[c + 1] = a1;
        acc_b[c] = b0;
        acc_b[c + 1] = b1;
"""
"""The statements storing the 2x2 tile back to acc_a[c], acc_a[c + 1], acc_b[c], acc_b[c + 1]."""
