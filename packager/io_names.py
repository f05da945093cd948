"""The model's inputs and outputs as the bundle's API names them."""

from __future__ import annotations

from dataclasses import dataclass

from memory_planner.plan import ExecutionPlan, Tensor
from packager.c_types import c_type_of


@dataclass(frozen=True)
class IoTensor:
    """One model input or output: the plan tensor, the model's own name for it (any text: escape it), and
    its C field name (ours)."""

    tensor: Tensor
    model_name: str
    field: str

    @property
    def c_type(self) -> str:
        return c_type_of(self.tensor.dtype)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.tensor.shape

    @property
    def elements(self) -> int:
        return self.tensor.elements

    @property
    def nbytes(self) -> int:
        return self.tensor.nbytes


def io_tensors(plan: ExecutionPlan, names: list[str], model_names: list[str], kind: str) -> list[IoTensor]:
    """IoTensors for plan tensors `names` (the model's `kind`s: "input" or "output"), in order.

    Their C fields are `<kind><index>` (`input0`, `output1`): the model's own names (`model_names`) go
    only into comments, escaped, so no model name is ever C code or collides with another.
    """
    return [IoTensor(plan.tensors[n], m, f"{kind}{index}") for index, (n, m) in enumerate(zip(names, model_names))]
