"""ADD: ``q([act](add(dq(a), dq(b))))`` of two int8 operands, or two int16 ones (16x8) -> TFLite's integer ADD
kernel; the backend's own int8 ADD kernel (``LoweringContext.int8_add``) where it fits and, priced per model, pays
(``LoweringContext.int8_add_pays``: its out-of-line helpers are one copy a bundle)."""

from __future__ import annotations

import weakref
from typing import Callable, Optional

from tvm import relax, te

from ...kernels import add_int8
from ...kernels.quant_params import add_params, add_params_int16
from .binary import binary_lowering, elements_of
from .graph import Graph, is_call_to
from .lowering import LoweringContext

_ELEMENTWISE_OPS = frozenset({"relax.add", "relax.subtract", "relax.multiply"})
_ADDS: "weakref.WeakKeyDictionary[Graph, tuple[tuple[int, bool], ...]]" = weakref.WeakKeyDictionary()


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


def computed_adds(graph: Graph) -> tuple[tuple[int, bool], ...]:
    """(output elements, whether both operands are elementwise kernels' results: `_elementwise_result`) of each of
    ``graph``'s ADDs of two dequantized int8 activations (neither a constant) of one shape, in order: the ADDs a
    backend's own kernel may take (``binary_lowering``'s ``own_first``). Read once per graph."""
    if graph not in _ADDS:
        adds = []
        for binding in graph.bindings:
            if not is_call_to(binding.value, "relax.add"):
                continue
            sources = [graph.dequantized(arg)[0] for arg in binding.value.args]
            if any(source is None or graph.constant(source) is not None or str(source.ty.dtype) != "int8"
                   for source in sources):
                continue
            shapes = [[getattr(d, "value", None) for d in source.ty.shape] for source in sources]
            if None not in shapes[0] and shapes[0] == shapes[1]:
                adds.append((elements_of(binding.value), all(_elementwise_result(graph, s) for s in sources)))
        _ADDS[graph] = tuple(adds)
    return _ADDS[graph]


def declined(*_operands, **_keywords) -> None:
    """The backend's own int8 ADD kernel where the model's ADDs do not pay it: it takes none (the generic kernel
    then, as where it does not fit an ADD; not the kernel from the operands' rescaled values, whose tables would cost
    1 KB of flash each: vit2h_d30_b1_24x16_tanh_int8 on cortex-m55, 6,256 B more weights)."""
    return None


def own_add(ctx: LoweringContext) -> Optional[Callable[..., Optional[te.Tensor]]]:
    """The backend's own int8 ADD kernel (None: none) where the model's ADDs pay it (``LoweringContext.int8_add_pays``
    of `computed_adds`), else `declined`."""
    if ctx.int8_add is None or ctx.int8_add_pays is None or ctx.int8_add_pays(computed_adds(ctx.graph)):
        return ctx.int8_add
    return declined


LOWERING = binary_lowering("ADD", "relax.add", add_int8, add_params, add_params_int16,
                           backend_kernel=own_add, rescaled_sign=1)
