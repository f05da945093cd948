"""A pixel pair's inputs widened to int16 once for all its channel tiles (backends/cortex_m/schedules/pair_q15.py,
backends/cortex_m/helpers/templates/dual_mac_q15.h.in; issue 16).
- The helpers' C, built on the host, against plain sums: windows of 1-3 rows whose length is not a multiple
  of four (the SXTB16-ordered groups and the plain tail), weights a channel stride apart that is odd.
- The schedule takes it for the pairs of an odd pixel count and of a padded interior: one widening call per
  pair before its channel-tile loop, the MAC calls on the scratch inside it.
(The DSP path runs bit-exactly with TFLite Micro under QEMU in tests/backends/cortex_m/test_dual_mac_pixels.py.)
"""

from __future__ import annotations

import itertools
import subprocess

import numpy as np
from tvm import ir, tirx

from backends.cortex_m.helpers.dual_mac_c import mac_helpers_c
from backends.cortex_m.schedules.pair_q15 import DUAL_MAC_Q15_OP, WIDEN_Q15_OP
from tvm_ext.tir.tir_walk import walk

_HARNESS = r"""
#include <stdint.h>
#include <stdio.h>
%s
int main(void)
{
    static int8_t x[4096], w[4096];
    static int32_t q[2048];
    int32_t rows, row_len, x_row, x_pixel, w_channel, value;
    for (int i = 0; i < 4096; ++i) { if (scanf("%%d", &value) != 1) return 1; x[i] = (int8_t)value; }
    for (int i = 0; i < 4096; ++i) { if (scanf("%%d", &value) != 1) return 1; w[i] = (int8_t)value; }
    while (scanf("%%d %%d %%d %%d %%d", &rows, &row_len, &x_row, &x_pixel, &w_channel) == 5) {
        int32_t acc_a[4] = {1, -2, 3, -4}, acc_b[4] = {-5, 6, -7, 8};
        t_widen_s8x2_q15(q, x, x_row, rows, row_len, x_pixel);
        t_dual_mac_q15x2x4(acc_a, acc_b, q, w, w_channel, rows, row_len);
        printf("%%d %%d %%d %%d %%d %%d %%d %%d\n", (int)acc_a[0], (int)acc_a[1], (int)acc_a[2], (int)acc_a[3],
               (int)acc_b[0], (int)acc_b[1], (int)acc_b[2], (int)acc_b[3]);
    }
    return 0;
}
"""


def _plain_sums(x, w, rows, row_len, x_row, x_pixel, w_channel) -> list[int]:
    acc = [1, -2, 3, -4, -5, 6, -7, 8]
    for p, c, r, k in itertools.product(range(2), range(4), range(rows), range(row_len)):
        acc[4 * p + c] += int(x[p * x_pixel + r * x_row + k]) * int(w[c * w_channel + r * row_len + k])
    return acc


def test_widened_pair_helpers_add_every_product(tmp_path):
    rng = np.random.default_rng(15)
    x = rng.integers(-128, 128, 4096).astype(np.int8)
    w = rng.integers(-128, 128, 4096).astype(np.int8)
    cases = [(rows, row_len, x_row, x_pixel, w_channel) for rows in (1, 2, 3) for row_len in (1, 3, 4, 5, 7, 8, 37)
             for x_row, x_pixel, w_channel in ((row_len, rows * row_len, rows * row_len),
                                              (row_len + 9, 5, rows * row_len + 3), (101, 37, 3 * 37 + 1))]
    source = tmp_path / "harness.c"
    source.write_text(_HARNESS % mac_helpers_c("t"))
    binary = tmp_path / "harness"
    subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Wconversion", "-Wshadow", "-Werror", "-o",
                    binary, source], check=True)
    stdin = " ".join(map(str, [*x, *w])) + "\n" + "\n".join(" ".join(map(str, case)) for case in cases)
    run = subprocess.run([binary], input=stdin, capture_output=True, text=True, check=True)
    got = [list(map(int, line.split())) for line in run.stdout.splitlines()]
    assert got == [_plain_sums(x, w, *case) for case in cases]


def _calls_under(node) -> list[tuple[str, list[int]]]:
    return [(call.op.name, [int(a) for a in call.args if isinstance(a, tirx.IntImm)]) for call in walk(node)
            if isinstance(call, ir.Call) and call.op.name.startswith(("tvm_ext.dual_mac", "tvm_ext.widen"))]


def _pair_branch(func: tirx.PrimFunc) -> tirx.Stmt:
    """The statements of a kernel's first pixel pair (the then-branch of its first `if`)."""
    return next(node for node in walk(func.body) if isinstance(node, tirx.IfThenElse)).then_case


def test_odd_pixel_count_pairs_widen_once_per_pair():
    """One row of five columns (several pair across rows: test_flat_pixel_pairs), a 1x1 window on 37
    channels, 8 output channels (two channel tiles): the pair widens one row of 37 bytes per pixel (the
    pixels 37 apart) once, then each channel tile calls the MAC on the scratch (the channels' weights 37
    apart)."""
    from test_dual_mac_pixels import _scheduled_conv

    pair = _pair_branch(_scheduled_conv((1, 5), 37, (1, 1)))
    assert isinstance(pair, tirx.SeqStmt) and isinstance(pair.seq[1], tirx.For)  # widen, then the tiles
    assert _calls_under(pair.seq[0]) == [(WIDEN_Q15_OP, [5 * 37, 1, 37, 37])]
    assert _calls_under(pair.seq[1]) == [(DUAL_MAC_Q15_OP, [37, 1, 37])]


def test_padded_pairs_widen_once_per_pair():
    """A padded 3x3 window on 16 channels: the interior pair widens its three rows of 48 bytes (the image
    row 9 * 16 apart, the second pixel 16 on) once, and each channel tile reads them as one row of 144 (whole
    groups of four: no gap between the widened rows); a pair on the border widens its two copied windows of 144
    bytes, one after the other, once."""
    from test_dual_mac_window import _scheduled_conv as _scheduled_padded_conv

    pairs = _pair_branch(_scheduled_padded_conv((6, 9), 16, (3, 3), 1, (1, 1, 1, 1)))
    inside, on_border = pairs.then_case, pairs.else_case
    assert _calls_under(inside.seq[0]) == [(WIDEN_Q15_OP, [9 * 16, 3, 48, 16])]
    assert _calls_under(inside.seq[1]) == [(DUAL_MAC_Q15_OP, [144, 1, 144])]
    assert _calls_under(on_border) == [(WIDEN_Q15_OP, [144, 1, 144, 144]), (DUAL_MAC_Q15_OP, [144, 1, 144])]


def test_access_records_cover_what_the_helpers_reach():
    """The records the memory planner reads (tvm_ext.tir.helper_access) bound every element the C reaches: the
    two windows, the scratch's words, the four channels' weights and accumulators."""
    from backends.cortex_m.helpers.dual_mac_q15_c import q15_scratch_words
    from backends.cortex_m.schedules.pair_q15 import DUAL_MAC_Q15_ACCESS, WIDEN_Q15_ACCESS

    for rows, row_len, x_row, x_pixel, w_channel in ((1, 37, 185, 37, 37), (3, 7, 20, 5, 22), (2, 2, 2, 4, 4)):
        words = q15_scratch_words(rows, row_len)
        scratch, x = (span for span in (p.span([None, None, x_row, rows, row_len, x_pixel])
                                        for p in WIDEN_Q15_ACCESS.pointers))
        assert scratch[0] <= 0 and scratch[1] >= words - 1
        assert x == (0, x_pixel + (rows - 1) * x_row + row_len - 1)
        acc_a, acc_b, q, w = (p.span([None, None, None, None, w_channel, rows, row_len])
                              for p in DUAL_MAC_Q15_ACCESS.pointers)
        assert acc_a == acc_b == (0, 3)
        assert q[0] <= 0 and q[1] >= words - 1
        assert w == (0, 3 * w_channel + rows * row_len - 1)
