"""Mixed precision where it pays: a layer whose quantization adds far more error than the others keeps its
float weights and arithmetic, when the profile has an FPU.

The per-layer errors (`layer_error`) accumulate: a layer's int8 output carries the error of every layer
before it. What a layer itself adds is its error less the largest error of the layer outputs it reads
(0 for model inputs), floored at 0. The budget is BUDGET_FACTOR x the median of what the layers add, and
at least BUDGET_FLOOR: a layer that adds more stays float. Keeping a layer float removes its weights' and
arithmetic's rounding, not its output's: its inputs and output stay int8 (dequantize -> float layer ->
quantize), so an error that comes from the output's range is not helped, and what the layer adds is read as
the rounding of its weights and arithmetic. Not candidates: pooling and reshape layers, which run on the int8
values, and SOFTMAX, whose output quantization is fixed (1/256) and whose exponential amplifies the error of
the logits it reads (pretrainedResnet: +11.9 % "added" by the softmax with min/max ranges, 7.0 % with the
percentile default, with the same top-1 agreement when it stays float). A profile without an FPU keeps every
layer int8 (float would be emulated in software).

Measured and not taken (issue 18): a choice by each layer's effect on the network output. pretrainedResnet
and vww_96_float, calibration crops seed 1, integer top-1 agreement with the float model on 800 selection
crops (seeds 3-6; one crop = 0.125 points). Sensitivity "every layer int8 but L" (L float, as above), L
ranked by the calibration output's KL or mean squared error against the float model's (13 candidates: 41 s
of host QDQ runs; vww_96_float 28: 160 s): pretrainedResnet all int8 93.9 %, the 1/2/3/5 most sensitive
float 94.25/92.75/93.75/93.4 % (KL ranking), 94.25/94.75/94.4/94.4 % (MSE ranking), every candidate float
93.9 %; vww_96_float all int8 98.9 %, the rule above (one layer) 99.0 %, by KL 99.0/98.9/98.5/98.6 %, every
candidate float 98.1 %. A float layer keeps int8 inputs and output, so only its weights' and arithmetic's
rounding goes, and that is not where pretrainedResnet's loss is: the float model with every layer output
rounded to its int8 grid (host, float weights) gives 94.1 %, and keeping float the 1/2/3/5 outputs whose
rounding costs the logits most (each alone lowers the calibration KL by at most 7.4 %) 93.5/94.4/94.1/94.9 %.
The loss is spread over all activations: no 1-3 layers at higher precision (float or int16 activations) bring
it to 97 %; int16 activations for the whole model (`activation_type`) do.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from tvm import relax

from target.profile import Profile
from tvm_ext.layers import bindings_of

from .layer_error import LayerError
from .qdq import PASSTHROUGH, SOFTMAX, layer_of_vars

BUDGET_FACTOR = 8.0  # a layer adding more than 8 x the median layer's added error stays float ...
BUDGET_FLOOR = 0.02  # ... if that is also more than 2 % relative L2 error: tiny errors never cost float


@dataclass(frozen=True)
class PrecisionChoice:
    """The layers that stay float (their output vars), every layer's error with its precision, and the
    decision line."""

    float_layers: frozenset[relax.Var]
    layers: list[LayerError]
    reason: str


def choose_precision(main: relax.Function, taps: list[relax.Var], errors: list[LayerError],
                     profile: Profile) -> PrecisionChoice:
    """Which layers of `main` (one output var each in `taps`, measured as `errors` in the same order) stay
    float on `profile`, as the module's rule says."""
    error_of = {var: error.relative_error for var, error in zip(taps, errors)}
    inputs = _layer_inputs(main, taps)
    added = {var: max(0.0, error_of[var] - max((error_of[v] for v in inputs[var]), default=0.0)) for var in taps}
    budget = max(BUDGET_FACTOR * float(np.median(list(added.values()))), BUDGET_FLOOR) if added else BUDGET_FLOOR
    candidates = _computing_layers(main, taps)
    over = [var for var in taps if var in candidates and added[var] > budget]
    rule = f"budget {BUDGET_FACTOR:g} x the median added error, at least {100 * BUDGET_FLOOR:g}%: {100 * budget:.2f}%"
    if not profile.hardware_float:
        chosen: list[relax.Var] = []
        reason = f"all layers int8: {profile.name} has no FPU"
    elif over:
        chosen = over
        named = ", ".join(f"{error.layer} adds {100 * added[var]:.2f}%"
                          for var, error in zip(taps, errors) if var in over)
        reason = f"mixed precision: {len(over)} of {len(taps)} layers stay float ({rule}): {named}"
    else:
        chosen = []
        reason = f"all layers int8: none adds more error than the {rule}"
    layers = [replace(error, added_error=added[var], precision="float" if var in chosen else "int8")
              for var, error in zip(taps, errors)]
    return PrecisionChoice(frozenset(chosen), layers, reason)


def _layer_inputs(main: relax.Function, taps: list[relax.Var]) -> dict[relax.Var, list[relax.Var]]:
    """Each tap -> the taps its layer reads (vars of other layers; model inputs are not taps)."""
    layer_of = layer_of_vars(main)
    alias = {b.var: b.value for b in bindings_of(main) if isinstance(b.value, relax.Var)}
    reads: dict[tuple, list[relax.Var]] = {}
    for binding in bindings_of(main):
        for arg in binding.value.args if isinstance(binding.value, relax.Call) else ():
            while arg in alias:
                arg = alias[arg]
            if arg in taps and layer_of[arg] != layer_of[binding.var]:
                reads.setdefault(layer_of[binding.var], []).append(arg)
    return {var: reads.get(layer_of[var], []) for var in taps}


def _computing_layers(main: relax.Function, taps: list[relax.Var]) -> set[relax.Var]:
    """The taps whose layer computes something other than pooling or reshape, and no softmax."""
    layer_of = layer_of_vars(main)
    ops: dict[tuple, set[str]] = {}
    for binding in bindings_of(main):
        if isinstance(binding.value, relax.Call):
            ops.setdefault(layer_of[binding.var], set()).add(binding.value.op.name)
    return {var for var in taps
            if ops.get(layer_of[var], set()) - PASSTHROUGH and SOFTMAX not in ops[layer_of[var]]}
