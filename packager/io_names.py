"""The model's inputs and outputs as the bundle's API names them."""

from __future__ import annotations

from dataclasses import dataclass

from memory_planner.plan import ExecutionPlan, Tensor
from packager.c_types import c_type_of


@dataclass(frozen=True)
class IoTensor:
    """One model input or output: the plan tensor, the model's own name for it (any text: escape it), its C
    field name (ours), and its place in the arena in bytes from the arena's start (None: the caller's own
    buffer, outside the arena)."""

    tensor: Tensor
    model_name: str
    field: str
    arena_offset: int | None = None

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


def io_tensors(plan: ExecutionPlan, names: list[str], model_names: list[str], kind: str,
               offsets: dict[str, int] | None = None) -> list[IoTensor]:
    """IoTensors for plan tensors `names` (the model's `kind`s: "input" or "output"), in order; `offsets`
    (the memory plan's, by storage) gives the arena offset of those planned into the arena.

    Their C fields are `<kind><index>` (`input0`, `output1`): the model's own names (`model_names`) go
    only into comments, escaped, so no model name is ever C code or collides with another.
    """
    offsets = offsets or {}
    return [IoTensor(plan.tensors[n], m, f"{kind}{index}", offsets.get(plan.storage_of(n)))
            for index, (n, m) in enumerate(zip(names, model_names))]


def io_in_arena(inputs: list[IoTensor], outputs: list[IoTensor]) -> bool:
    """Whether the model's inputs and outputs are all in the arena (the run functions then take none);
    ValueError when only some are (the planner places all or none)."""
    placed = {io.arena_offset is not None for io in (*inputs, *outputs)}
    if len(placed) > 1:
        raise ValueError("some of the model's inputs and outputs are in the arena and some are not")
    return placed == {True}
