"""The two-pixel window MAC over a padded tile's live channels only (RV32).

A CONV_2D whose output channels the int8 lowering padded to one whole tile of MAC_CHANNELS
(``tvm_ext.transform.int8.conv._padded_channels``: a DenseNet's growth of 5, a narrow ResNet's 6 computed as 8) ran
the two-pixel helper over all eight channels, the padded rows' loads, MULs and ADDs included, though its epilogue
calls store fewer. Where a sequence holds one call of the two-pixel helper (`mac.MAC_2PX_OP`, `mac.MAC_2PX_ROW_OP`),
only the zeroing of sums besides (statements that read no tensor), and the requantization epilogues of its sums, each
storing a constant count of channels, the call becomes the helper's form over the most channels those epilogues store
(`mac.MAC_2PX_N_OPS`, a trailing argument): the sums beyond are never read. rv32imc, a DenseNet-like net at 30x26
(growth 5): its 3x3 convolutions of 5 channels over 20, 4,013,741 -> 2,558,290 instructions a call (5.7 -> 3.6 a MAC).
"""

from __future__ import annotations

from typing import Optional

import tvm
from tvm import s_tir, tirx
from tvm.ir import TensorLoad

from backends.cortex_m.schedules.conv_tiles import call_of, pointee
from backends.cortex_m.schedules.requantize_epilogue import stored_channels
from backends.riscv.helpers import MAC_CHANNELS
from backends.riscv.schedules.mac import MAC_2PX_N_OPS, REQUANTIZE_LUT_OPS_BY_BIAS, REQUANTIZE_OPS_BY_BIAS
from tvm_ext.tir.tir_walk import map_child_stmts, walk

_EPILOGUE_OPS = (*REQUANTIZE_OPS_BY_BIAS.values(), *REQUANTIZE_LUT_OPS_BY_BIAS.values())
_ACC_ARG = 1
"""The position of an epilogue call's sums among its arguments (`requantize_small.h.in`: out, acc, ...)."""


def live_channel_macs(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func`` (a scheduled kernel after its epilogue calls) with each two-pixel MAC call whose sums' epilogues
    store fewer than MAC_CHANNELS channels in the form over those channels only (module docstring); any other
    function unchanged."""
    body = _rewritten(func.body)
    return func if body.same_as(func.body) else func.with_body(body)


def _rewritten(stmt: tirx.Stmt) -> tirx.Stmt:
    """``stmt`` with each such sequence under it rewritten (`_sized_sequence`)."""
    if isinstance(stmt, s_tir.SBlockRealize):
        block = stmt.block
        body = _rewritten(block.body)
        if body.same_as(block.body):
            return stmt
        return s_tir.SBlockRealize(stmt.iter_values, stmt.predicate, s_tir.SBlock(
            block.iter_vars, block.reads, block.writes, block.name_hint, body, block.init, block.alloc_buffers,
            block.match_buffers, block.annotations))
    if isinstance(stmt, tirx.SeqStmt):
        stmts = [_rewritten(child) for child in stmt.seq]
        sized = _sized_sequence(stmts)
        if sized is None and all(a.same_as(b) for a, b in zip(stmts, stmt.seq)):
            return stmt
        return tirx.SeqStmt(sized or stmts)
    if isinstance(stmt, (tirx.For, tirx.IfThenElse, tirx.AttrStmt, tirx.While)):
        return map_child_stmts(stmt, _rewritten)
    return stmt


def _sized_sequence(stmts: list) -> Optional[list]:
    """``stmts`` with its one two-pixel MAC call in the form over its live channels, or None where the sequence is
    not one such MAC, its sums' zeroing and their epilogues, or they store all MAC_CHANNELS channels."""
    macs = [(at, call) for at, call in enumerate(call_of(stmt, tuple(MAC_2PX_N_OPS)) for stmt in stmts)
            if call is not None]
    epilogues = [call for call in (call_of(stmt, _EPILOGUE_OPS) for stmt in stmts) if call is not None]
    if len(macs) != 1 or not epilogues or len(epilogues) + 1 + sum(map(_reads_nothing, stmts)) != len(stmts):
        return None
    at, mac = macs[0]
    counts = [stored_channels(call) for call in epilogues]
    if None in counts or not all(_reads_sums(call, mac) for call in epilogues):
        return None
    live = max(counts)
    if live >= MAC_CHANNELS:
        return None
    sized = tirx.call_intrin("int32", MAC_2PX_N_OPS[mac.op.name], *mac.args, live)
    realize = stmts[at]
    block = realize.block
    stmts = list(stmts)
    stmts[at] = s_tir.SBlockRealize(realize.iter_values, realize.predicate, s_tir.SBlock(
        block.iter_vars, block.reads, block.writes, block.name_hint, tirx.Evaluate(sized), block.init,
        block.alloc_buffers, block.match_buffers, block.annotations))
    return stmts


def _reads_sums(epilogue: tvm.ir.Call, mac: tvm.ir.Call) -> bool:
    """Whether ``epilogue`` reads its sums from the tensor of ``mac``'s, from a pixel's first channel. A constant
    count below MAC_CHANNELS in every epilogue means the layer's channels are one tile (a padded tile beside whole
    ones stores a count that varies by tile), so a pixel's first channel is the tile's."""
    sums = [pointee(arg) for arg in (epilogue.args[_ACC_ARG], *mac.args[:2])]
    if None in sums or not all(load.source.same_as(sums[0].source) for load in sums[1:]):
        return False
    channel = sums[0].indices[-1]
    return isinstance(channel, tirx.IntImm) and int(channel) == 0


def _reads_nothing(stmt: tirx.Stmt) -> bool:
    """Whether ``stmt`` only stores constants (a sum's zeroing): no tensor read, no call evaluated."""
    nodes = list(walk(stmt))
    return not any(isinstance(node, (TensorLoad, tirx.Evaluate)) for node in nodes) and all(
        isinstance(node.value, tirx.IntImm) for node in nodes if isinstance(node, tirx.BufferStore))
