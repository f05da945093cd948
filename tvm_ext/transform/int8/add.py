"""ADD: ``q([act](add(dq(a), dq(b))))`` of two int8 operands, or two int16 ones (16x8) -> TFLite's integer ADD
kernel; the backend's own int8 ADD kernel (``LoweringContext.int8_add``) where it fits and, priced per model, pays
(``LoweringContext.int8_add_pays``: its out-of-line helpers are one copy a bundle)."""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Callable, Optional

from tvm import relax, te

from ...kernels import Rounding, add_int8
from ...kernels.quant_params import AddParams, add_params, add_params_int16
from .binary import binary_lowering, elements_of
from .graph import Graph, is_call_to
from .lowering import LoweringContext

_ELEMENTWISE_OPS = frozenset({"relax.add", "relax.subtract", "relax.multiply"})
_ADDS: "weakref.WeakKeyDictionary[Graph, dict[Rounding, tuple[ComputedAdd, ...]]]" = weakref.WeakKeyDictionary()


def _elementwise_result(graph: Graph, source: relax.Expr) -> bool:
    """Whether the int8 activation ``source`` is the quantized result of an ADD, SUB or MUL of dequantized operands
    (``q(op(dq(a), dq(b)))``): an elementwise kernel's, with which a generic ADD reading it fuses (a layer norm's
    scaled input and its shifted mean: q(mul) + q(sub)); not a MAC layer's (its bias added to a product)."""
    value = graph.value_of(source)
    if not is_call_to(value, "relax.quantize"):
        return False
    inner = graph.value_of(value.args[0])
    return isinstance(inner, relax.Call) and any(is_call_to(inner, op) for op in _ELEMENTWISE_OPS) \
        and all(graph.dequantized(arg)[0] is not None for arg in inner.args)


@dataclass(frozen=True)
class ComputedAdd:
    """An int8 ADD of two dequantized int8 activations (neither a constant) of one shape: its output elements,
    whether both operands are elementwise kernels' results (`_elementwise_result`), and TFLite's multipliers
    (``params``, of ``rounding``), which a backend's kernel contract reads."""

    elements: int
    fused: bool
    params: AddParams
    rounding: Rounding


def computed_adds(graph: Graph, rounding: Rounding) -> tuple[ComputedAdd, ...]:
    """Each of ``graph``'s int8 ADDs of two dequantized int8 activations (neither a constant) of one shape and a
    per-tensor output quantization, in order: the ADDs a backend's own kernel may take (``binary_lowering``'s
    ``own_first``), its multipliers as the lowering computes them (``add_params`` of ``rounding``). Read once per
    graph and rounding."""
    known = _ADDS.setdefault(graph, {})
    if rounding not in known:
        adds = []
        for binding in graph.bindings:
            quantize = binding.value
            if not is_call_to(quantize, "relax.quantize"):
                continue
            core = graph.value_of(quantize.args[0])
            if is_call_to(core, "relax.nn.relu") or is_call_to(core, "relax.clip"):
                core = graph.value_of(core.args[0])
            out = graph.quant(quantize.args[1], quantize.args[2])
            if not is_call_to(core, "relax.add") or out is None:
                continue
            operands = [graph.dequantized(arg) for arg in core.args]
            if any(source is None or quant is None or graph.constant(source) is not None
                   or str(source.ty.dtype) != "int8" for source, quant in operands):
                continue
            shapes = [[getattr(d, "value", None) for d in source.ty.shape] for source, _ in operands]
            if None not in shapes[0] and shapes[0] == shapes[1]:
                (lhs, lhs_quant), (rhs, rhs_quant) = operands
                adds.append(ComputedAdd(elements_of(core), _elementwise_result(graph, lhs)
                                        and _elementwise_result(graph, rhs),
                                        add_params(lhs_quant.scale, rhs_quant.scale, out.scale, rounding), rounding))
        known[rounding] = tuple(adds)
    return known[rounding]


def declined(*_operands, **_keywords) -> None:
    """The backend's own int8 ADD kernel where the model's ADDs do not pay it: it takes none (the generic kernel
    then, as where it does not fit an ADD; not the kernel from the operands' rescaled values, whose tables would cost
    1 KB of flash each: vit2h_d30_b1_24x16_tanh_int8 on cortex-m55, 6,256 B more weights)."""
    return None


def own_add(ctx: LoweringContext) -> Optional[Callable[..., Optional[te.Tensor]]]:
    """The backend's own int8 ADD kernel (None: none) where the model's ADDs pay it (``LoweringContext.int8_add_pays``
    of `computed_adds`), else `declined`."""
    if ctx.int8_add is None or ctx.int8_add_pays is None or ctx.int8_add_pays(computed_adds(ctx.graph, ctx.rounding)):
        return ctx.int8_add
    return declined


def values_before_own(ctx: LoweringContext) -> bool:
    """Whether the backend's kernel from values tabled at compile time comes before its own int8 ADD kernel in the
    model (``LoweringContext.int8_add_values_first`` of `computed_adds`), where that one is the model's (it pays)."""
    if ctx.int8_add_values_first is None or own_add(ctx) in (None, declined):
        return False
    return ctx.int8_add_values_first(computed_adds(ctx.graph, ctx.rounding))


LOWERING = binary_lowering("ADD", "relax.add", add_int8, add_params, add_params_int16,
                           backend_kernel=own_add, rescaled_sign=1, values_first=values_before_own)
