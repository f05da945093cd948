"""Concatenated tensors share one quantization range, as TFLite's converter makes them.

TFLite Micro's int8 CONCATENATION copies the stored values of its inputs: it requires every input to be
quantized as its output is. TFLite's converter arranges it by giving the inputs the output's quantization;
`shared_concatenation_ranges(main, ranges)` does the same with the observed ranges: every layer output in a
concatenation's group gets the group's union range (the concatenation's own range is already the union of
its pieces'). A group also spans the data movement and pooling between a piece and the layer that computes
it (RESHAPE, TRANSPOSE and the pools keep their input's quantization in the QDQ graph), so the layer output
they read takes the shared range too.
"""

from __future__ import annotations

import tvm
from tvm import relax

from tvm_ext.layers import bindings_of

from .qdq import PASSTHROUGH

_CONCAT = "relax.concat"


def shared_concatenation_ranges(main: relax.Function, ranges: dict[relax.Var, tuple[float, float]]
                                ) -> dict[relax.Var, tuple[float, float]]:
    """`ranges` (layer output var of `main` -> (low, high)) with the vars of each concatenation's group given
    the group's union range; the same dict when `main` concatenates nothing."""
    parent: dict[relax.Var, relax.Var] = {}

    def root(var: relax.Var) -> relax.Var:
        while parent.get(var, var) is not var:
            var = parent[var]
        return var

    def join(first: relax.Var, second: relax.Var) -> None:
        parent[root(second)] = root(first)

    concatenated = []
    for binding in bindings_of(main):
        value = binding.value
        if not (isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.Op) and value.args):
            continue
        name = value.op.name
        if name == _CONCAT and isinstance(value.args[0], relax.Tuple):
            concatenated.append(binding.var)
            for piece in value.args[0].fields:
                if isinstance(piece, relax.Var):
                    join(binding.var, piece)
        elif name in PASSTHROUGH and isinstance(value.args[0], relax.Var):
            join(value.args[0], binding.var)
    if not concatenated:
        return ranges
    groups: dict[relax.Var, list[relax.Var]] = {}
    for var in ranges:
        groups.setdefault(root(var), []).append(var)
    shared = dict(ranges)
    for concat in concatenated:
        members = groups.get(root(concat), [])  # none when the concatenation and its pieces are inside a layer
        if members:
            low, high = min(ranges[m][0] for m in members), max(ranges[m][1] for m in members)
            shared.update({member: (low, high) for member in members})
    return shared
