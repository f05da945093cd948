"""The model's inputs and outputs as the bundle's API names them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory_planner.plan import ExecutionPlan, Tensor


@dataclass(frozen=True)
class IoTensor:
    """One model input or output: the plan tensor, the model's own name for it, and its C field name."""

    tensor: Tensor
    model_name: str
    field: str

    @property
    def c_type(self) -> str:
        return self.tensor.c_type

    @property
    def shape(self) -> tuple[int, ...]:
        return self.tensor.shape

    @property
    def elements(self) -> int:
        return self.tensor.elements

    @property
    def nbytes(self) -> int:
        return self.tensor.nbytes


def _field_name(text: str, taken: set[str]) -> str:
    base = re.sub(r"[^0-9A-Za-z_]", "_", text).strip("_").lower() or "tensor"
    if base[0].isdigit():
        base = f"t_{base}"
    name, k = base, 1
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    return name


def io_tensors(plan: ExecutionPlan, names: list[str], model_names: list[str]) -> list[IoTensor]:
    """IoTensors for plan tensors `names`, named in the API after `model_names` (the model's own names)."""
    taken: set[str] = set()
    return [IoTensor(plan.tensors[n], m, _field_name(m, taken)) for n, m in zip(names, model_names)]
