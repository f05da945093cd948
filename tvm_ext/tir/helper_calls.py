"""Calls of a backend's C helpers in scheduled kernels, and which helper libraries the generated C needs.

A backend's schedule writes a helper call as an intrinsic op (``call_intrin(op, ...)``). Each op is
registered once (`register_helper_call`) with the backend's `backends.backend.HelperLibrary` and the helper's
C name for a bundle prefix; C code generation inside `calls_to_helpers(prefix)` turns the op into that
extern call and records the library, which `<model>_internal.h` then defines (`packager.internal_header`).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Optional

import tvm
from tvm import tirx

from backends.backend import HelperLibrary
from tvm_ext.tir.helper_access import HelperAccess, register_helper_access
from tvm_ext.tir.tir_walk import walk


@dataclass
class HelperCalls:
    """While C is generated for a bundle: its helpers' prefix and the helper libraries the kernels call."""

    prefix: str
    libraries: set[HelperLibrary] = field(default_factory=set)

    def used(self) -> tuple[HelperLibrary, ...]:
        """The libraries called, by name."""
        return tuple(sorted(self.libraries, key=lambda library: library.name))


_REGISTERED: dict[str, Callable[[tirx.Expr], tirx.Expr]] = {}
"""Every op `register_helper_call` registered, with its lowering to C."""

_CALLS: contextvars.ContextVar[Optional[HelperCalls]] = contextvars.ContextVar("tvm_ext_helper_calls", default=None)


@contextlib.contextmanager
def calls_to_helpers(prefix: str) -> Iterator[HelperCalls]:
    """Within this block, C code generation calls ``<prefix>_...`` helpers; the yielded record says, once the C
    is generated, which helper libraries the kernels call."""
    calls = HelperCalls(prefix)
    token = _CALLS.set(calls)
    try:
        yield calls
    finally:
        _CALLS.reset(token)


def register_helper_call(op: str, library: HelperLibrary, helper_name: Callable[[str], str],
                         access: Optional[HelperAccess] = None, pure: bool = False) -> None:
    """Register ``op``, a call of ``library``'s helper ``helper_name(prefix)``, for C code generation (inside
    ``calls_to_helpers``, which records that the bundle needs ``library`` and the libraries it needs), and ``access``: the elements a call
    reads and writes through its pointers (``tvm_ext.tir.helper_access``; keep it in step with the helper's C: the
    memory planner lets buffers overlap by it). ``pure`` states that the helper's value depends on its arguments
    alone and it touches no memory (a scalar arithmetic helper), so TVM may share, hoist or drop its calls like the
    arithmetic it stands for; otherwise a call is a state update, kept in place and in order."""

    def to_c(call: tirx.Expr) -> tirx.Expr:
        calls = _CALLS.get()
        if calls is None:
            raise RuntimeError(f"{op} is C code of a tvm_ext bundle: generate it inside calls_to_helpers")
        calls.libraries.update((library, *library.needs))
        returns = "handle" if isinstance(call.ty, tvm.ir.PointerType) else "int32"
        return tirx.call_extern(returns, helper_name(calls.prefix), *(_nested_to_c(arg) for arg in call.args))

    _REGISTERED[op] = to_c
    effect = tirx.CallEffectKind.Pure if pure else tirx.CallEffectKind.UpdateState
    tvm.ir.register_op_attr(op, "TCallEffectKind", effect.value)
    tvm.ir.register_op_attr(op, "TScriptPrinterName", op.replace(".", "_"))
    tirx.register_intrin_lowering(op, "c", f=to_c)
    if access is not None:
        register_helper_access(op, access)


LUT_ENTRIES = 256
"""A lookup table's int8 entries (`tvm_ext.kernels.int8_tables`: indexed by the int8 value + 128)."""

_LOOKUP_FORMS: dict[str, str] = {}
"""Per helper op that writes a kernel's whole int8 output, the op of its form storing each output looked up in a
256-entry int8 table (`register_lookup_form`)."""


def register_lookup_form(op: str, lookup_op: str) -> None:
    """State that a call of ``lookup_op`` with the arguments of a call of ``op`` and then one more, the address of
    a 256-entry int8 table, computes the same outputs each stored as ``table[value + 128]`` (an activation fused
    as a lookup table after the requantization: `tvm_ext.transform.fold_lookups`)."""
    _LOOKUP_FORMS[op] = lookup_op


def lookup_form(op: str) -> Optional[str]:
    """The op registered as ``op``'s form with a lookup table after it, or None."""
    return _LOOKUP_FORMS.get(op)


def _nested_to_c(arg: tirx.Expr) -> tirx.Expr:
    """`arg`, an argument of a helper call being lowered to C, with a helper call at its root lowered too: TVM's
    LowerIntrin does not visit a pointer-valued argument (a helper returning an address, such as an address
    choice), so the call that passes it lowers it."""
    if isinstance(arg, tvm.ir.Call) and isinstance(arg.op, tvm.ir.Op) and arg.op.name in _REGISTERED:
        return _REGISTERED[arg.op.name](arg)
    return arg


def helper_calls_in(mod: tvm.IRModule) -> list[str]:
    """The backend helper ops the PrimFuncs of `mod` call, sorted: calls only a bundle's C can make (TVM's
    host targets have no lowering for them)."""
    return sorted({node.op.name for func in mod.functions.values() if isinstance(func, tirx.PrimFunc)
                   for node in walk(func.body)
                   if isinstance(node, tvm.ir.Call) and isinstance(node.op, tvm.ir.Op) and node.op.name in _REGISTERED})
