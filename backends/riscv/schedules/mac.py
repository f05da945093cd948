"""The int8 window MAC of RV32 cores, reached from a scheduled CONV_2D or FULLY_CONNECTED kernel.

The reduction of such a kernel tiled to MAC_CHANNELS (8) output channels (`tvm_ext.schedule.kernel_schedule`)
becomes one call of `<prefix>_mac_s8x8` (`backends/riscv/helpers/templates/mac_s8x8.h.in`) per output pixel
and channel tile, or of `<prefix>_mac_s8x2x8` per two pixels (each weight loaded feeds both) where the
schedule pairs pixels (`backends.riscv.schedules`), where the window has the dual MAC's geometry
(`backends.cortex_m.schedules.dual_mac`: `window_geometry`): int32 `acc += int32(x) * int32(w)` over int8 x and w, the input read as `rows` runs of
`row_len` contiguous bytes `x_row_stride` apart, each channel's weights one contiguous run (OHWI), no padding
test, and at least MIN_REDUCTION MACs per output. Each channel's sum is added in the same order but for its
groups of two or four products: integer sums, bit-exact.
"""

from __future__ import annotations

from typing import Optional

from tvm import s_tir

from backends.cortex_m.schedules.dual_mac import (mac_window, window_call_block, window_mac_2px_access,
                                                 window_mac_access)
from backends.riscv.helpers import MAC_CHANNELS, RISCV_HELPERS, mac_2px_helper_name, mac_helper_name
from tvm_ext.tir.helper_calls import register_helper_call

MAC_OP = "tvm_ext.riscv_mac_s8x8"
MAC_ACCESS = window_mac_access(MAC_CHANNELS)  # the dual MAC's call, over eight channels
register_helper_call(MAC_OP, RISCV_HELPERS, mac_helper_name, MAC_ACCESS)

MAC_2PX_OP = "tvm_ext.riscv_mac_s8x2x8"
MAC_2PX_ACCESS = window_mac_2px_access(MAC_CHANNELS)
register_helper_call(MAC_2PX_OP, RISCV_HELPERS, mac_2px_helper_name, MAC_2PX_ACCESS)

MIN_REDUCTION = 32
"""The shortest window (MACs per output) the helper takes: a shorter one (vww's first 3x3 convolution on three
channels, 27) spends more on the call's accumulator loads and stores and its rows' last inputs than the
unrolled passes save (measured under QEMU: 11.0 -> 12.1 instructions per MAC with the helper)."""


def mac_replacement(realize: s_tir.SBlockRealize, loops: list,
                    outlined_depthwise: bool = False) -> Optional[s_tir.SBlockRealize]:
    """The helper's call block computing what the For nodes `loops` (the reduction loops, then optionally a
    loop of two output pixels, then the unit-stride loop of MAC_CHANNELS output channels, innermost) around
    `realize` compute, or None where it would not compute exactly that (a depthwise reduction among them:
    `outlined_depthwise` is the MacSchedules signature's, unused)."""
    window = mac_window(realize, loops, ("int8",), MAC_CHANNELS)
    if window is None or window.geometry.rows * window.geometry.row_len < MIN_REDUCTION:
        return None
    return window_call_block(MAC_OP, MAC_2PX_OP, window.reduction, window.bindings, window.inner, window.geometry,
                             MAC_CHANNELS)
