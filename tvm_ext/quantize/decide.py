"""`--quantize auto`: whether a float model is quantized for a profile, and why, in one line.

Quantize when the profile has no FPU (float would run as software emulation), or when the float bundle
cannot fit: its weights exceed the flash, or its arena must exceed the SRAM. The arena figure is a lower
bound read from the float graph (the largest sum of one layer's input and output activations, model inputs
and outputs excluded, as the bundle keeps those in the caller's buffers), so "does not fit" is certain; a
float model under the bound may still be refused by the float compile's own exact check.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from tvm import relax
from tvm.ir.expr import Constant

from target.profile import Profile
from tvm_ext.layers import bindings_of

from .qdq import layer_of_vars, layer_outputs


@dataclass(frozen=True)
class Decision:
    quantize: bool
    reason: str  # one line, for the log and the manifest


def float_weight_bytes(main: relax.Function) -> int:
    """Bytes of the distinct constants main reads (the float bundle's weights, before folding)."""
    seen: dict[Constant, int] = {}
    for binding in bindings_of(main):
        value = binding.value
        for arg in value.args if isinstance(value, relax.Call) else ():
            if isinstance(arg, Constant):
                seen[arg] = arg.value.numpy().nbytes
    return sum(seen.values())


def arena_lower_bound(main: relax.Function, itemsize: int | None = None) -> int:
    """The largest sum of bytes of the activations one layer reads from other layers and writes for them, each
    element taking `itemsize` bytes (default: its own type's, float32 in a float main): no arena holds less."""
    bindings = bindings_of(main)
    layer_of = layer_of_vars(main)
    returned = main.body.body
    leaving = [v for v in layer_outputs(main) if not v.same_as(returned)]
    live: dict[tuple, set] = {}
    for binding in bindings:
        for arg in binding.value.args if isinstance(binding.value, relax.Call) else ():
            if any(arg.same_as(v) for v in leaving) and layer_of[arg] != layer_of[binding.var]:
                live.setdefault(layer_of[binding.var], set()).add(arg)
    for var in leaving:
        live.setdefault(layer_of[var], set()).add(var)
    return max((sum(_bytes(v, itemsize) for v in vars_) for vars_ in live.values()), default=0)


def _bytes(var: relax.Var, itemsize: int | None) -> int:
    return int(np.prod([int(d) for d in var.ty.shape])) * (itemsize or np.dtype(str(var.ty.dtype)).itemsize)


def decide(main: relax.Function, profile: Profile) -> Decision:
    """Whether to quantize the float `main` for `profile`, with the reason."""
    if profile.fpu == "none":
        return Decision(True, f"quantizing to int8: {profile.name} has no FPU (float would run in software)")
    weights, arena = float_weight_bytes(main), arena_lower_bound(main)
    overruns = []
    if arena > profile.sram_bytes:
        overruns.append(f"float arena needs at least {arena:,} B of SRAM, {profile.name} has {profile.sram_bytes:,} B")
    if weights > profile.flash_bytes:
        overruns.append(f"float weights need {weights:,} B of flash, {profile.name} has {profile.flash_bytes:,} B")
    if overruns:
        return Decision(True, f"quantizing to int8: {'; '.join(overruns)}")
    return Decision(False, f"keeping float: {profile.name} has an FPU and the float model's weights ({weights:,} B) "
                           f"and arena (at least {arena:,} B) are within its flash and SRAM")
