"""Relax modules run on TVM's Relax VM on the host (LLVM), each distinct module built once per thread.

One quantized compile runs the same module several times: the float graph with its taps (to observe the
activation ranges, then again for the layer errors), the integer module (its accuracy on the calibration
samples, on the held-back ones, then as the bundle's reference). Building a module for LLVM and setting up
its VM took 0.6-3 s each time on vww_96_float; the VM of a module built before is reused instead.

Contract: `host_vm(mod)` returns a VM built from a module structurally equal to `mod` as it is at the call
(constants compared by value), so reusing one is indistinguishable from building anew. The last
CACHED_MODULES modules' VMs are kept, per thread (a VM is not shared between threads that may run it at
once); a process forked from this one may use the VMs it inherited (host memory and code only).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import tvm
import tvm_ffi
from tvm import relax

CACHED_MODULES = 4  # enough for one quantized compile: the float graph, its tapped form, the QDQ and integer modules


class _Built(threading.local):
    """This thread's VMs: structural hash -> (the module as built, its VM), least recently used first."""

    def __init__(self) -> None:
        self.vms: OrderedDict[int, tuple[tvm.IRModule, relax.VirtualMachine]] = OrderedDict()


_BUILT = _Built()


def host_vm(mod: tvm.IRModule) -> relax.VirtualMachine:
    """The Relax VM of `mod` built for the host with LLVM, reused when a structurally equal module was
    built before in this thread (see the module's contract)."""
    key = tvm_ffi.structural_hash(mod)
    entry = _BUILT.vms.get(key)
    if entry is not None and tvm_ffi.structural_equal(entry[0], mod):
        _BUILT.vms.move_to_end(key)
        return entry[1]
    # A copy: a Python pass may later edit `mod` in place (mod["main"] = ...); the entry keeps what was built.
    built = tvm.IRModule(dict(mod.functions), attrs=mod.attrs, global_infos=mod.global_infos)
    vm = relax.VirtualMachine(relax.build(built, target="llvm"), tvm.cpu())
    _BUILT.vms[key] = (built, vm)
    while len(_BUILT.vms) > CACHED_MODULES:
        _BUILT.vms.popitem(last=False)
    return vm
