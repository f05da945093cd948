"""Which bytes a C helper call reaches through its pointer arguments, as data (`HelperAccess`).

A scheduled kernel may hand addresses to a bundle helper (``call_intrin(op, address_of(acc[i]),
address_of(x[j]), ..., sizes...)``: the MAC helpers of ``backends.cortex_m.schedules.dual_mac`` and ``backends.cortex_m.schedules.depthwise_mac``).
TIR then no longer shows the helper's loads and stores, so ``tvm_ext.codegen.stream_order`` cannot bound them from
the indices. A helper's registration states them instead, as one `HelperAccess` record per op
(`register_helper_access`), and stream_order bounds the call's accesses from it.

The record's contract (whoever changes a helper's C updates its record with it): for each pointer argument
that may be a kernel parameter's address, the elements the call may read or write are

    start + sum over axes d of i_d * stride_d,   0 <= i_d < extent_d,

where `start` is the element the address points at, and each extent and stride (in elements of the
pointer's own type) is a constant or the value of another argument of the call (`Arg`: a constant at every
call site). The set may be wider than what the helper touches (a wider bound only asks the planner for more
distance between buffers), never narrower. A pointer argument a record does not list makes stream_order
give no order for the parameter it points into.

An address argument may also be a choice between two addresses: a call of an op registered with
`register_address_choice`, ``op(condition, a, b)``, is the address `a` where `condition` holds, else `b`
(TIR has no `Select` of pointers); stream_order reads the call once per branch, as it reads a `Select` of
constants among the sizes.

A helper may also be registered out of line (`register_out_of_line`): its C is one copy per bundle that no call
inlines (gcc `noinline`), so its value arguments are run-time parameters at every call, inside a loop or not
(`tvm_ext.transform.share_constant_variants` may then pass them from a kernel's array of constants).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union


@dataclass(frozen=True)
class Arg:
    """The value of the call's argument number `index` (0-based, among the op's arguments)."""

    index: int


Size = Union[int, Arg]


@dataclass(frozen=True)
class Axis:
    """`extent` steps of `stride` elements (each a constant or an argument of the call)."""

    extent: Size
    stride: Size


@dataclass(frozen=True)
class PointerAccess:
    """The elements the call may read or write through its pointer argument number `argument`: every
    ``start + sum(i_d * stride_d)`` over the `axes` (module docstring)."""

    argument: int
    axes: tuple[Axis, ...]

    def span(self, arguments: list[Optional[int]]) -> Optional[tuple[int, int]]:
        """The lowest and highest element offset relative to the start (low > high: the call reaches no
        element), given the call's `arguments` (None: not a constant); None when a size this record needs
        is not a constant."""

        def value(size: Size) -> Optional[int]:
            return size if isinstance(size, int) else arguments[size.index]

        low = high = 0
        for axis in self.axes:
            extent, stride = value(axis.extent), value(axis.stride)
            if extent is None or stride is None:
                return None
            if extent <= 0:
                return (0, -1)  # the call reaches no element
            reach = (extent - 1) * stride
            low, high = low + min(reach, 0), high + max(reach, 0)
        return low, high


@dataclass(frozen=True)
class HelperAccess:
    """Every pointer argument of one helper op through which it may reach a kernel parameter's bytes."""

    pointers: tuple[PointerAccess, ...]


_ACCESS: dict[str, HelperAccess] = {}
_ADDRESS_CHOICES: set[str] = set()
_TRUTH_HINTS: set[str] = set()
_OUT_OF_LINE: set[str] = set()


def register_helper_access(op: str, access: HelperAccess) -> None:
    """State the bytes calls of the op named `op` reach (replaces an earlier record of `op`)."""
    _ACCESS[op] = access


def helper_access(op: str) -> Optional[HelperAccess]:
    """The record registered for the op named `op`, or None."""
    return _ACCESS.get(op)


def register_address_choice(op: str) -> None:
    """State that a call ``op(condition, a, b)`` of the op named `op` is the address `a` where `condition` holds,
    else the address `b` (module docstring)."""
    _ADDRESS_CHOICES.add(op)


def is_address_choice(op: str) -> bool:
    """Whether the op named `op` was registered as a choice between two addresses."""
    return op in _ADDRESS_CHOICES


def register_truth_hint(op: str) -> None:
    """State that a call ``op(x)`` of the op named `op` is `x` (a hint to the C compiler, such as a test's
    likelihood): stream_order reads a branch's condition through it, so a branch that never runs in a pass still
    reaches nothing there."""
    _TRUTH_HINTS.add(op)


def is_truth_hint(op: str) -> bool:
    """Whether the op named `op` was registered as a hint whose value is its argument."""
    return op in _TRUTH_HINTS


def register_out_of_line(op: str) -> None:
    """State that the helper a call of the op named `op` makes is one out-of-line copy per bundle (its C
    `noinline`): no call site specializes it on its constant arguments."""
    _OUT_OF_LINE.add(op)


def is_out_of_line(op: str) -> bool:
    """Whether the op named `op` was registered as an out-of-line helper's call."""
    return op in _OUT_OF_LINE
