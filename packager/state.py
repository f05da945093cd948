"""The model's state (TFLite variable tensors, e.g. SVDF's activation state; the persistent buffers of TFLite
Micro's signal operators, e.g. the spectral subtraction's noise estimate) as static buffers of the bundle.

Each STATE tensor of the plan is `static <T> <model>_<tensor>[n]` in `<model>_model.c`, initialised to its reset
value (TFLM resets a variable tensor to its zero point when it allocates it, and a signal operator's buffers in
its Prepare), so the first run needs no call to
`<model>_reset()`; that function restores every state buffer to its reset value. The state is the bundle's
own memory, not the arena: it lives across runs, so one bundle is one model instance and its run functions
are not reentrant.
"""

from __future__ import annotations

import numpy as np

from memory_planner.plan import ExecutionPlan
from packager.c_text import array_body
from packager.c_types import c_type_of


def state_symbol(plan: ExecutionPlan, tensor_name: str) -> str:
    return f"{plan.model}_{tensor_name}"


def reset_signature(plan: ExecutionPlan) -> str:
    """The C prototype of `<model>_reset`, without the trailing semicolon."""
    return f"void {plan.model}_reset(void)"


def state_bytes(plan: ExecutionPlan) -> int:
    """Bytes of static state the bundle holds besides the arena (0 for a stateless model)."""
    return sum(t.nbytes for t in plan.states())


def state_definitions(plan: ExecutionPlan) -> list[str]:
    """The static state buffers, each initialised to its reset value, and `<model>_reset()`; none when the
    model has no state."""
    states = plan.states()
    if not states:
        return []
    lines = ["/* The model's state: kept from one run to the next, restored by the reset function. */"]
    for tensor in states:
        value = plan.state_reset[tensor.name]
        initial = array_body(np.full(tensor.elements, value), tensor.dtype) if value else "{0}"
        lines.append(f"static {c_type_of(tensor.dtype)} {state_symbol(plan, tensor.name)}[{tensor.elements}] = {initial};")
    lines += ["", reset_signature(plan), "{", "  size_t i;"]
    for tensor in states:
        lines += [f"  for (i = 0u; i < {tensor.elements}u; ++i) {{",
                  f"    {state_symbol(plan, tensor.name)}[i] = {plan.state_reset[tensor.name]};", "  }"]
    lines += ["}", ""]
    return lines
