"""Which CONV_2D kernels take tiled weights on RV32 (`backends.riscv.schedules.tiled_conv_price.tiled_convs_pay`):
those whose inlined window MAC's code pays their calls of the one tiled copy, where together they pay the copy."""

from __future__ import annotations

from backends.riscv.schedules.tiled_conv_price import MIN_WINDOW, tiled_convs_pay


def test_yolo_tiny_kernels_take_the_tiled_copy() -> None:
    # yolo_tiny_80x48_w11's 3x3 kernels of 30, 45 (two) and 70 (two) channels: window inputs, pixels times tiles
    convs = ((153, 240 * 4), (270, 60 * 6), (603, 60 * 6), (405, 15 * 9), (315, 15 * 9))
    assert tiled_convs_pay(convs) == frozenset(range(5))


def test_one_kernel_or_short_windows_do_not_pay_the_copy() -> None:
    # resnet8_w11_32x44's two 3x3 kernels of 21 channels (352 pixels, three tiles) save less than the copy costs;
    # its 1x1 one over 11 inputs is unrolled whole inlined
    assert tiled_convs_pay(((99, 1056), (189, 1056), (11, 1056))) == frozenset()
    assert tiled_convs_pay(((153, 240 * 4),)) == frozenset()
    assert tiled_convs_pay(((MIN_WINDOW - 1, 10), (153, 10), (153, 10))) == frozenset({1, 2})
