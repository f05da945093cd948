"""The arena a join in place costs against its copy, planned from the lifetimes in main (tvm_ext.transform.joins_in_place).

A join in place is one buffer live from its first piece's write to its last read; with the copy, each piece lives
from its own write to the copy, and the join from the copy on. Where a long branch computes a later piece, the
earlier pieces' bytes (and the unwritten rest of the join) are held across that branch, and the arena can grow.
`JoinLifetimes` states main's storages with their live steps (a step per binding of main, in main's order) and
plans them with the memory planner (`memory_planner.plan_memory`), copies kept or joins in place, so the pass keeps
a join in place only where the planned arena is no larger than with its copy.

What this plan does not see: the kernels' scratch buffers and in-place hand-overs (known after code generation) and
the call order the compile chooses later (`memory_planner.order.choose_order`): it compares the two ways on the
same lifetimes, the pieces' and the join's as only they differ.
"""

from __future__ import annotations

import math
from typing import Optional

import tvm
from tvm import relax

from memory_planner import plan_memory
from memory_planner.api import Buffer
from memory_planner.plan import DTYPE_BYTES
from tvm_ext.transform.contiguous_views import returned_vars

_RESHAPE = tvm.ir.Op.get("relax.reshape")
_VIEW = tvm.ir.Op.get("relax.memory.view")


class JoinLifetimes:
    """main's arena storages (kernel results, no model input, output or constant) with their first and last steps,
    and the arena they plan to with some joins in place."""

    def __init__(self, main: relax.Function, alignment: int) -> None:
        """`alignment`: every buffer's, in bytes (the profile's)."""
        self.alignment = alignment
        self.owner: dict = {}  # var -> the var whose storage it is (a view, a reshape, an alias)
        self.nbytes: dict = {}  # storage var -> bytes
        self.first: dict = {}  # storage var -> step of its write
        self.last: dict = {}  # storage var -> step of its last read
        for step, binding in enumerate(b for block in main.body.blocks for b in block.bindings):
            value = binding.value
            source = _source(value)
            for used in relax.analysis.free_vars(value):
                storage = self.owner.get(used)
                if storage is not None:
                    self.last[storage] = step
            if source is not None:
                if source in self.owner:
                    self.owner[binding.var] = self.owner[source]
            elif isinstance(binding.var.ty, relax.TensorType) and binding.var.ty.shape is not None:
                self.owner[binding.var] = binding.var
                self.nbytes[binding.var] = math.prod(int(d) for d in binding.var.ty.shape.values) \
                    * DTYPE_BYTES[str(binding.var.ty.dtype)]
                self.first[binding.var] = self.last[binding.var] = step
        # main's results are the caller's buffers, not in the arena
        self.outputs = {self.owner.get(var, var) for var in returned_vars(main)}

    def arena_bytes(self, joins: dict) -> int:
        """The planned arena (bytes) with each piece storage of `joins` (piece storage var -> join result var) a
        part of its join's buffer, that buffer live from its first piece's write; every other storage its own."""
        buffers: dict = {}
        for storage in self.nbytes:
            if storage in self.outputs:
                continue
            home = _home(storage, joins)
            if home in self.outputs:
                continue
            first, last = buffers.get(home, (self.first[storage], self.last[storage]))
            buffers[home] = (min(first, self.first[storage]), max(last, self.last[storage]))
        return plan_memory([Buffer(f"storage{k}", self.nbytes[home], first, last, self.alignment)
                            for k, (home, (first, last)) in enumerate(buffers.items())]).arena_bytes


def _home(storage: relax.Var, joins: dict) -> relax.Var:
    """The storage whose buffer holds `storage`: its join's (through joins of joins), else itself."""
    while storage in joins:
        storage = joins[storage]
    return storage


def _source(value: relax.Expr) -> Optional[relax.Var]:
    """The var whose bytes `value` is (an alias, a reshape, a view at any offset), None when it is no view."""
    if isinstance(value, relax.Var):
        return value
    if isinstance(value, relax.Call) and (value.op.same_as(_RESHAPE) or value.op.same_as(_VIEW)) \
            and isinstance(value.args[0], relax.Var):
        return value.args[0]
    return None
