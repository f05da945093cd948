"""The biased requantizations (saturated to int8) of an RV32 element kernel run too few times per inference to pay
for their inlined copies, as calls of one out-of-line function per bundle.

An int8 element kernel's rescales are calls of `<prefix>_requantize_biased_s8`
(`backends.cortex_m.schedules.biased_requantize`), inlined: some 14 RV32 instructions each, with their clamp to int8
(no SMMLAR, no SSAT). A fused chain holds many (an unrolled GRU step's gate arithmetic: nine to thirteen); where the
kernel runs a few times per inference (the GRU's first step, its zero state folded in: once), those copies cost
more bytes than their speed is worth. `out_of_line_requantize` makes each a call of
`<prefix>_requantize_biased_s8_call` (`backends/riscv/helpers/templates/requantize_biased_call.h.in`: the same
function, bit-exact), where `cold_requantize_pays`: the bytes saved (CALL_SAVED_BYTES a call site, less the function's
one copy, CALL_CODE_BYTES) at the one price of code (`backends.code_price.INSTRUCTIONS_PER_BYTE`) reach the
instructions the calls add (CALL_EXTRA_INSTRUCTIONS each executed call). rv32imc kws_gru_40x16_int8: its first step's
kernel 692 -> 440 B (the function 54 B), bundle code 9,112 -> 8,912 B, 1,731,178 -> 1,733,362 instructions; its
other steps' shared kernel (39 calls) keeps its inlined copies (out of line: -404 B for +85,000 instructions).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import tvm
from tvm import tirx

from backends.code_price import INSTRUCTIONS_PER_BYTE
from backends.cortex_m.schedules.biased_requantize import REQUANTIZE_BIASED_S8_OP
from backends.riscv.helpers import REQUANTIZE_BIASED_CALL_HELPERS, requantize_biased_call_name
from tvm_ext.tir.helper_calls import register_helper_call
from tvm_ext.tir.tir_walk import children, map_nodes, map_store_expressions

REQUANTIZE_BIASED_S8_CALL_OP = "tvm_ext.riscv_requantize_biased_s8_call"
# The call (acc, multiplier, right, bias) of REQUANTIZE_BIASED_S8_OP's contract, out of line.
register_helper_call(REQUANTIZE_BIASED_S8_CALL_OP, REQUANTIZE_BIASED_CALL_HELPERS, requantize_biased_call_name,
                     pure=True)

CALL_SAVED_BYTES = 28
"""The code a call site of the out-of-line function saves against the inlined copy, bytes (rv32imc
kws_gru_40x16_int8's first GRU step: 692 -> 440 B for its nine)."""
CALL_CODE_BYTES = 54
"""The out-of-line function's one copy, bytes (rv32imc, gcc 12 -O2)."""
CALL_EXTRA_INSTRUCTIONS = 6
"""The instructions an executed call adds against the inlined copy, at the most (the same kernel: 2,184 more for
432 calls, 5.1 each: the call, the return and its arguments' moves)."""


def cold_requantize_pays(func: tirx.PrimFunc, calls: int) -> bool:
    """Whether ``func`` (a scheduled kernel), called ``calls`` times per inference, is smaller by more than the
    instructions it adds are worth with its biased requantizations out of line (CALL_SAVED_BYTES a call site, the
    function's copy CALL_CODE_BYTES counted against each kernel; CALL_EXTRA_INSTRUCTIONS an executed call); False
    where it has none."""
    sites = list(_site_executions(func.body))
    if not sites:
        return False
    saved = len(sites) * CALL_SAVED_BYTES - CALL_CODE_BYTES
    return saved * INSTRUCTIONS_PER_BYTE >= calls * sum(sites) * CALL_EXTRA_INSTRUCTIONS


def _site_executions(node, times: int = 1) -> Iterator[int]:
    """The executions per call of its function of each call of `<prefix>_requantize_biased_s8` under ``node``
    (those in another's arguments too): the product of the constant extents of the loops around it (a loop of
    another extent counts once)."""
    if isinstance(node, tirx.For) and isinstance(node.extent, tirx.IntImm):
        times *= int(node.extent)
    if isinstance(node, tvm.ir.Call) and isinstance(node.op, tvm.ir.Op) and node.op.name == REQUANTIZE_BIASED_S8_OP:
        yield times
    for child in children(node):
        yield from _site_executions(child, times)


def cold_requantize_kernels(kernels: Mapping[str, tirx.PrimFunc], calls: Mapping[str, int]) -> list[str]:
    """The names of ``kernels`` (scheduled) whose biased requantizations pay out of line (`cold_requantize_pays`)
    given their ``calls`` per inference (a kernel not in it counts once), in their order."""
    return [name for name, func in kernels.items() if cold_requantize_pays(func, calls.get(name, 1))]


def _call(node) -> tirx.Expr | None:
    """``node`` as the out-of-line function's call where it is the inlined one's (its arguments too), else None."""
    if isinstance(node, tvm.ir.Call) and isinstance(node.op, tvm.ir.Op) and node.op.name == REQUANTIZE_BIASED_S8_OP:
        return tirx.call_intrin("int32", REQUANTIZE_BIASED_S8_CALL_OP, *(map_nodes(arg, _call) for arg in node.args))
    return None


def out_of_line_requantize(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func`` with each call of `<prefix>_requantize_biased_s8` as one of `<prefix>_requantize_biased_s8_call`
    (the same arguments); ``func`` itself where it has none."""
    body = map_store_expressions(func.body, _call)
    return func if body.same_as(func.body) else func.with_body(body)
