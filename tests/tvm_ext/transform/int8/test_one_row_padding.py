"""One price of a one-row FULLY_CONNECTED for every core (``tvm_ext.transform.int8.fully_connected._padded_units``):
a layer of one int8 row whose output channels a MAC tile does not divide is padded to whole tiles only where the
backend's price says its MACs pay the padded kernel's code (``LoweringContext.one_row_padding_pays``), whatever
its channel count, over every call of the kernel the model's one-row layers of its shape share; a layer of several rows of at least a tile's channels is padded always; a backend without a
price (RV32) keeps every one-row layer's channels."""

from __future__ import annotations

import numpy as np
import pytest
from tvm import relax

from backends.schedules import kernel_schedules_of
from target.loading import load_profile
from tvm_ext.kernels import Rounding
from tvm_ext.transform.int8.fully_connected import _padded_units
from tvm_ext.transform.int8.graph import Graph
from tvm_ext.transform.int8.lowering import LoweringContext
from tvm_ext.transform.lower_quantized_to_integer import _backend_choices


def _graph(rows: int, depth: int, units: int, layers: int) -> tuple[Graph, relax.Call, relax.Var]:
    """A graph of ``layers`` matmuls of one input of ``rows`` rows of ``depth`` int8 inputs by [depth, units]
    weights (a recurrent cell's steps unrolled), its first matmul and its input."""
    data = relax.Var("data", relax.TensorType((rows, depth), "int8"))
    builder = relax.BlockBuilder()
    with builder.function("main", [data]):
        with builder.dataflow():
            calls = [relax.op.matmul(data, relax.const(np.ones((depth, units), np.int8))) for _ in range(layers)]
            out = builder.emit_output(builder.emit(relax.Tuple([builder.emit(call) for call in calls])))
        builder.emit_func_output(out)
    graph = Graph(builder.get()["main"])
    (first, *_) = (b.value for b in graph.bindings if isinstance(b.value, relax.Call))
    return graph, first, data


def _padded(target: str, depth: int, units: int, rows: int = 1, layers: int = 1):
    """The padded output channels the lowering for ``target`` gives a FULLY_CONNECTED of ``rows`` int8 rows of
    ``depth`` inputs and ``units`` outputs, one of ``layers`` of that shape (None: kept)."""
    choices = _backend_choices(kernel_schedules_of(load_profile(target)))
    graph, layer, data = _graph(rows, depth, units, layers)
    ctx = LoweringContext(graph=graph, lowered={}, rounding=Rounding.DOUBLE, **choices)
    return _padded_units(np.ones((units, depth), np.int8), data, layer, ctx)


@pytest.mark.parametrize("target", ["cortex-m4f", "cortex-m55"])
def test_every_dsp_core_prices_a_one_row_layer_whatever_its_channels(target):
    # a 10-class head over 48 inputs: 480 MACs do not pay the padded kernel's code, over 1024 they do
    assert _padded(target, 48, 10) is None
    assert _padded(target, 1024, 10) == 12
    # fewer channels than a tile: the same price (2 over 256 keep the loop, 2 over 8192 take the tile)
    assert _padded(target, 256, 2) is None
    assert _padded(target, 8192, 2) == 4
    # several rows repeat the MACs per row: padded always; whole tiles: nothing to pad
    assert _padded(target, 48, 10, rows=2) == 12
    assert _padded(target, 48, 12) is None
    # an unrolled GRU's steps call one kernel: 29 steps of 69 gates over 10 inputs pay together, one alone does not
    assert _padded(target, 10, 69) is None
    assert _padded(target, 10, 69, layers=29) == 72


def test_a_core_without_a_price_keeps_every_one_row_layer():
    assert _padded("rv32imc", 1024, 10) is None
    assert _padded("rv32imc", 48, 10, rows=2) == 12
