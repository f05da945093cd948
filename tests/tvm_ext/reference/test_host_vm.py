"""`tvm_ext.reference.host_vm`: a Relax module's VM is reused only for a module structurally equal to it as built."""

from __future__ import annotations

import numpy as np
import tvm
from tvm import relax

from tvm_ext.reference.host_vm import CACHED_MODULES, host_vm


def _adds(constant: float) -> tvm.IRModule:
    """main(x) = x + `constant`, for float32 x of 4 elements."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((4,), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.add(x, relax.const(np.full(4, constant, np.float32))))
        bb.emit_func_output(out)
    return bb.get()


def _run(mod: tvm.IRModule) -> np.ndarray:
    return host_vm(mod)["main"](tvm.runtime.tensor(np.zeros(4, np.float32))).numpy()


def test_an_equal_module_reuses_the_vm_and_another_constant_does_not() -> None:
    first = host_vm(_adds(1.0))
    assert host_vm(_adds(1.0)) is first  # a new object, structurally equal: built once
    assert host_vm(_adds(2.0)) is not first  # equal but for the constant's value
    np.testing.assert_array_equal(_run(_adds(2.0)), np.full(4, 2.0, np.float32))


def test_a_module_edited_in_place_after_its_build_is_built_again() -> None:
    mod = _adds(3.0)
    np.testing.assert_array_equal(_run(mod), np.full(4, 3.0, np.float32))
    mod["main"] = _adds(5.0)["main"]  # what a Python pass may do to the object it was given
    np.testing.assert_array_equal(_run(mod), np.full(4, 5.0, np.float32))


def test_only_the_last_modules_are_kept() -> None:
    oldest = host_vm(_adds(10.0))
    for value in range(CACHED_MODULES):
        host_vm(_adds(11.0 + value))
    assert host_vm(_adds(10.0)) is not oldest
