"""A bundle's int8 SOFTMAX kernels on RV32 cores calling one out-of-line copy of the softmax over rows, where their
inlined copies cost more bytes than the calls cost instructions.

The int8 lowering writes each SOFTMAX as calls of `<prefix>_softmax_s8` per row (`backends.cortex_m.schedules.
softmax_rows`), a `static inline` helper gcc copies into each kernel (some 340 B on rv32imc): a transformer's
attention scores and its head are two kernels, two copies. `shared_softmax_calls` makes a kernel's calls ones of
`<prefix>_softmax_s8_shared` (`backends/riscv/helpers/templates/softmax_s8_shared.h.in`: the same function out of
line, bit-exact), for the kernels `shared_softmax_kernels` chooses: all of a bundle's softmax kernels where the bytes
saved (INLINED_BYTES a kernel, less the copy's COPY_BYTES) at the one price of code
(`backends.code_price.INSTRUCTIONS_PER_BYTE`) reach the instructions the calls add (CALL_INSTRUCTIONS each executed
call). rv32imc vit_tiny_16_int8: its two kernels 348 and 388 B -> 18 and 56 B and the copy 340 B, bundle code
6,234 -> 5,900 B (cortex-m4f 6,212), 8,165,417 -> 8,172,497 instructions.
"""

from __future__ import annotations

from collections.abc import Mapping

import tvm
from tvm import tirx

from backends.code_price import INSTRUCTIONS_PER_BYTE
from backends.cortex_m.schedules.conv_tiles import op_executions
from backends.cortex_m.schedules.softmax_rows import SOFTMAX_S8_ACCESS, SOFTMAX_S8_OP
from backends.riscv.helpers import SOFTMAX_SHARED_HELPERS, softmax_shared_name
from tvm_ext.tir.helper_calls import register_helper_call
from tvm_ext.tir.tir_walk import map_store_expressions

SOFTMAX_S8_SHARED_OP = "tvm_ext.riscv_softmax_s8_shared"
# The call (out, in, rows, depth, exp_table) of SOFTMAX_S8_OP's contract, out of line.
register_helper_call(SOFTMAX_S8_SHARED_OP, SOFTMAX_SHARED_HELPERS, softmax_shared_name, SOFTMAX_S8_ACCESS)

INLINED_BYTES = 330
"""The code a kernel's inlined softmax takes more than its call of the out-of-line copy, bytes, the least measured
(rv32imc vit_tiny_16_int8, gcc -O2 -mtune=size -msave-restore: the 10-class head 348 -> 18 B, the 3x64x64 attention
scores' row loop 388 -> 56 B)."""
COPY_BYTES = 340
"""The out-of-line copy's own code, bytes (rv32imc, the same build; once per bundle)."""
CALL_INSTRUCTIONS = 37
"""The instructions an executed call of the copy adds against the inlined softmax (its registers saved and restored
through -msave-restore's shared code, its arguments, the call and return): vit_tiny_16_int8's 193 calls (192 rows of
attention scores, one head) 7,080 more."""


def softmax_executions(func: tirx.PrimFunc) -> list[int]:
    """The executions per call of ``func`` of each of its calls of the inlined softmax (one row each, mostly)."""
    return [times for _call, times in op_executions(func.body, {SOFTMAX_S8_OP})]


def shared_softmax_kernels(kernels: Mapping[str, tirx.PrimFunc], calls: Mapping[str, int]) -> list[str]:
    """The names of ``kernels`` (scheduled) that call the out-of-line softmax: every kernel calling the softmax where
    their INLINED_BYTES each, less the copy's COPY_BYTES, pay at the one price of code the CALL_INSTRUCTIONS of all
    their executed calls given their ``calls`` per inference (a kernel not in it counts once); else none (a bundle's
    one softmax kernel never: its inlined copy is smaller than the out-of-line one)."""
    sites = {name: softmax_executions(func) for name, func in kernels.items()}
    users = [name for name, executions in sites.items() if executions]
    saved = len(users) * INLINED_BYTES - COPY_BYTES
    added = sum(calls.get(name, 1) * sum(sites[name]) for name in users) * CALL_INSTRUCTIONS
    return users if users and saved * INSTRUCTIONS_PER_BYTE >= added else []


def _shared_call(node) -> tirx.Expr | None:
    """``node`` as the out-of-line softmax's call where it is the inlined one's, else None."""
    if isinstance(node, tvm.ir.Call) and isinstance(node.op, tvm.ir.Op) and node.op.name == SOFTMAX_S8_OP:
        return tirx.call_intrin("int32", SOFTMAX_S8_SHARED_OP, *node.args)
    return None


def shared_softmax_calls(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func`` with each call of `<prefix>_softmax_s8` as one of `<prefix>_softmax_s8_shared` (the same arguments);
    ``func`` itself where it has none."""
    body = map_store_expressions(func.body, _shared_call)
    return func if body.same_as(func.body) else func.with_body(body)
