"""Which convolutions run their outermost loop backwards: those whose reversal gives a smaller arena.

A convolution run forwards may write its output over its input when the output starts at least the
kernel's lead below it (`memory_planner.api.StreamOrder.lead_bytes`); a chain of them (str_ww_ref_model's
depthwise and pointwise convolutions) drifts down the arena by every lead, so the chain's first large buffer
sits above the whole drift and the arena exceeds the liveness bound (str_ww_ref_model on cortex-m4f: 4,352 B
against a bound of 3,712 B). Run backwards (`tvm_ext.codegen.reverse_outer_loop`), a kernel's output starts
above its input instead (`StreamOrder.trail_bytes`), so a reversed kernel lifts the rest of the chain back up.

The choice is the memory plan's, from the stream orders the forward kernels already have: a kernel's reversed
order is its passes in the opposite order (`StreamOrder.reversed`; exact when its outer loop is its only pass
loop, an estimate otherwise). `kernels_to_reverse` flips the reversible kernels (`REVERSIBLE_KINDS`: every
call only a convolution, whose outer loop runs over output rows, each output element computed within one
iteration) greedily, at most `MAX_TRIED` of them, those of the largest hand-over first, keeping a flip
only when the planned arena shrinks, and stops at the liveness bound. The caller then generates the chosen
kernels reversed, plans again with their own stream orders, and keeps the result only when its arena is
smaller still: a model whose plan does not improve keeps its bundle byte for byte. Where the estimate was
wrong (the generated kernels' own orders plan no smaller), the caller chooses once more without those kernels
(`ESTIMATE_RETRIES`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from memory_planner.api import MemoryPlan
from memory_planner.plan import ExecutionPlan, InplaceOutput, KernelAccess, KernelCall

# The model operators whose kernels may run backwards: TFLite's and ONNX's convolutions (reverse_outer_loop).
REVERSIBLE_KINDS = frozenset({"CONV_2D", "DEPTHWISE_CONV_2D", "Conv"})
MAX_TRIED = 8  # kernels tried per model: each try is one planning
ESTIMATE_RETRIES = 1
"""Choices made again, without the kernels chosen before, when the chosen kernels generated backwards plan no
smaller than forwards (their reversed order was an estimate: `StreamOrder.reversed`). Each is one generation
and planning more, only for such a model (mobilenet_v2_050_64_int8 on rv32imc: its stride-2 depthwise kernel's
estimate 49,408 B, generated 49,920 B, where the 1x1 convolution the next choice takes reaches the bound,
49,408 B, and forwards is 49,456 B)."""


def _reversible(call: KernelCall) -> bool:
    """Whether `call` implements convolutions only and has an in-place fact with a stream order."""
    return (bool(call.operators) and all(op.kind in REVERSIBLE_KINDS for op in call.operators)
            and any(fact.stream is not None for fact in call.access.inplace_outputs))


def reversible_kernels(plan: ExecutionPlan) -> list[str]:
    """The C names of the kernels all of whose calls are reversible (`_reversible`), those of the largest
    hand-over (input and output bytes of one call) first, then in call order."""
    calls_of: dict[str, list[KernelCall]] = {}
    for call in plan.calls:
        calls_of.setdefault(call.kernel, []).append(call)

    def pair_bytes(call: KernelCall) -> int:
        return max(plan.tensors[fact.input].nbytes + plan.tensors[fact.output].nbytes
                   for fact in call.access.inplace_outputs)

    kernels = [name for name, calls in calls_of.items() if all(_reversible(call) for call in calls)]
    position = {name: index for index, name in enumerate(calls_of)}
    return sorted(kernels, key=lambda name: (-max(pair_bytes(call) for call in calls_of[name]), position[name]))


def _reversed_fact(fact: InplaceOutput) -> InplaceOutput:
    return fact if fact.stream is None else replace(fact, stream=fact.stream.reversed())


def with_reversed_streams(plan: ExecutionPlan, kernels: frozenset[str]) -> ExecutionPlan:
    """`plan` with the stream orders of the calls of `kernels` (C names) as they would be run backwards."""
    calls = [replace(call, access=KernelAccess(tuple(_reversed_fact(f) for f in call.access.inplace_outputs)))
             if call.kernel in kernels else call for call in plan.calls]
    return replace(plan, calls=calls)


def kernels_to_reverse(plan: ExecutionPlan, memory: MemoryPlan, arena_of: Callable[[ExecutionPlan], int],
                       refused: frozenset[str] = frozenset()) -> frozenset[str]:
    """The kernels (C names) of `plan` to run backwards, chosen greedily (module docstring) from the forward
    plan's arena `memory`, never one of `refused` (nor counted among the `MAX_TRIED`); `arena_of(plan)` plans a
    plan and gives its arena's bytes. Empty when the arena is at its liveness bound already or no flip makes it
    smaller."""
    chosen: frozenset[str] = frozenset()
    best = memory.arena_bytes
    for kernel in [name for name in reversible_kernels(plan) if name not in refused][:MAX_TRIED]:
        if best <= memory.lower_bound:
            break
        arena = arena_of(with_reversed_streams(plan, chosen | {kernel}))
        if arena < best:
            chosen, best = chosen | {kernel}, arena
    return chosen
