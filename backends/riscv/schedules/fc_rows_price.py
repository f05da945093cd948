"""Whether a bundle's per-tensor FULLY_CONNECTED layers on RV32 cores call the shared out-of-line row helper
(`<prefix>_fc_rows_s8x8`: `backends.cortex_m.schedules.fc_rows`, `mac.RISCV_FC_ROWS`) or keep their own loops over
channel tiles (each tile one call of the paired MAC, `<prefix>_mac_s8x8_pairs`, then its requantization inlined),
priced per bundle at the one price of code (`backends.code_price.INSTRUCTIONS_PER_BYTE`).

The helper is one copy per bundle (FC_ROWS_CODE_BYTES beyond the paired MAC it holds inlined); each kernel that calls
it is that much smaller than its own loop (FC_ROWS_KERNEL_BYTES); each tile it runs saves some instructions
(FC_ROWS_SAVED_PER_TILE). The helper pays where the kernels' bytes saved, and the instructions saved per inference
over the price, reach its copy's bytes: a bundle of many such layers (ad01_int8's ten) takes it, one of a few small
ones (hello_world_int8's two 16-unit layers: 1,128 -> 936 B of code on rv32imc for 1,939 -> 2,061 instructions) does
not. A kernel stands for the kernels tvm_ext.transform.share_constant_variants shares with it (one C function; its
calls are theirs: `tvm_ext.lower.bundle_choice`).
"""

from __future__ import annotations

from collections.abc import Mapping

import tvm
from tvm import tirx

from backends.code_price import INSTRUCTIONS_PER_BYTE
from backends.riscv.schedules.mac import FC_ROWS_OPS
from tvm_ext.tir.tir_walk import walk

FC_ROWS_CODE_BYTES = 470
"""The code of the helper's one copy per bundle beyond the paired MAC's copy, bytes (rv32imc hello_world_int8:
`fc_rows_any` 884 B, which holds the paired MAC inlined, against `mac_s8x8_pairs`' 414 B)."""
FC_ROWS_KERNEL_BYTES = 150
"""The code a kernel's own loop over its channel tiles takes more than its call of the helper, bytes (rv32imc
hello_world_int8's 16-unit layers: 172 and 174 B against 22 B)."""
FC_ROWS_SAVED_PER_TILE = 40
"""The instructions the helper saves per tile run, at the most (rv32imc hello_world_int8's 16-unit layers of two
tiles: 52 and 70 fewer per call; its constants passed as values where the kernel's loop reloads them)."""

_OPS = frozenset(FC_ROWS_OPS.values())


def fc_row_tiles(func: tirx.PrimFunc) -> int:
    """The channel tiles ``func`` (a scheduled kernel) runs in calls of the row helper per call of ``func`` (each
    call's last argument: its tiles); 0 where it calls none."""
    tiles = 0
    for node in walk(func.body):
        if isinstance(node, tvm.ir.Call) and isinstance(node.op, tvm.ir.Op) and node.op.name in _OPS:
            tiles += int(node.args[-1])
    return tiles


def fc_rows_pay(kernels: Mapping[str, tirx.PrimFunc], calls: Mapping[str, int]) -> bool:
    """Whether the row helper pays in the bundle of ``kernels`` (name -> PrimFunc, scheduled with the helper's calls)
    and their ``calls`` per inference (name -> calls; a kernel not in it counts once): the bytes its calling kernels
    save (FC_ROWS_KERNEL_BYTES each) plus the instructions it saves per inference (FC_ROWS_SAVED_PER_TILE a tile)
    over the price reach its copy's bytes (FC_ROWS_CODE_BYTES); True where no kernel calls it (nothing to choose)."""
    tiles = {name: fc_row_tiles(func) for name, func in kernels.items()}
    users = [name for name, count in tiles.items() if count]
    return not users or row_helper_pays(len(users), sum(tiles[name] * calls.get(name, 1) for name in users))


def row_helper_pays(users: int, tiles: int) -> bool:
    """Whether the row helper's one copy (FC_ROWS_CODE_BYTES) is paid by ``users`` kernels calling it
    (FC_ROWS_KERNEL_BYTES saved each) and the ``tiles`` they run in it per inference (FC_ROWS_SAVED_PER_TILE
    instructions saved each, at the one price of code)."""
    return (users * FC_ROWS_KERNEL_BYTES - FC_ROWS_CODE_BYTES) * INSTRUCTIONS_PER_BYTE \
        + tiles * FC_ROWS_SAVED_PER_TILE >= 0


def fc_rows_users(kernels: Mapping[str, tirx.PrimFunc]) -> list[str]:
    """The names of ``kernels`` (scheduled) that call the row helper, in their order."""
    return [name for name, func in kernels.items() if fc_row_tiles(func)]
