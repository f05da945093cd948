"""A compute unit of a device: one processor (or one code path of it) that can run some of a model's subgraphs.

A profile may list several (`units` in its file: an Arm core with and without its DSP path, a DSP beside its
host core); a profile that lists none has one unit, its own core (`Profile.compute_units`). Each unit states
which operator kinds it runs, the C compiler and flags of its kernel library, and a cost model: instructions
per multiply-accumulate for each operator kind, calibrated where the unit can be emulated from the
per-call instruction counts of our QEMU runs (`instructions_per_mac_by_kind` on a bundle's layer report).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ComputeUnit:
    """One compute unit.

    name: a lowercase identifier, unique in its profile (it names the unit's kernel library).
    operators: the operator kinds it runs (TFLite builtin codes such as "CONV_2D", ONNX op types such as
        "Conv"); None when it runs every kind.
    c_compiler, cflags: the compiler command and flags of its kernel library.
    instructions_per_mac: the cost model, instructions per multiply-accumulate by operator kind.
    default_instructions_per_mac: the cost of a kind the model does not list.
    """

    name: str
    c_compiler: str
    cflags: tuple[str, ...]
    operators: frozenset[str] | None = None
    instructions_per_mac: Mapping[str, float] = field(default_factory=dict, hash=False)
    default_instructions_per_mac: float = 1.0

    def runs(self, kind: str) -> bool:
        """Whether this unit supports operator kind `kind`."""
        return self.operators is None or kind in self.operators

    def cost(self, kind: str) -> float:
        """Instructions per MAC of operator kind `kind` on this unit."""
        return self.instructions_per_mac.get(kind, self.default_instructions_per_mac)


def instructions_per_mac_by_kind(layer_report: Mapping[str, Any]) -> dict[str, float]:
    """The measured instructions per MAC of each operator kind in a bundle's layer report (the manifest's
    `layer_report`, with instructions from an emulated self-test): for each kind, the instructions of the
    calls it leads (the first operator of a fused call) over their MACs. Calls without MACs or without a
    measurement are left out; a report without measurements gives {}."""
    instructions: dict[str, int] = {}
    macs: dict[str, int] = {}
    for call in layer_report["calls"]:
        if not call.get("macs") or call.get("instructions") is None or not call["layers"]:
            continue
        kind = call["layers"][0]["operator"]
        instructions[kind] = instructions.get(kind, 0) + call["instructions"]
        macs[kind] = macs.get(kind, 0) + call["macs"]
    return {kind: instructions[kind] / macs[kind] for kind in sorted(instructions)}


_UNIT_FIELDS = ("name", "operators", "c_compiler", "cflags", "instructions_per_mac", "default_instructions_per_mac")


def units_from_tables(tables: Any) -> tuple[ComputeUnit, ...]:
    """The `units` field of a profile file (a list of tables with _UNIT_FIELDS; `name`, `c_compiler` and
    `cflags` required) as ComputeUnits; ValueError with one line naming the unit and field at fault."""
    if not isinstance(tables, list) or not tables or not all(isinstance(table, dict) for table in tables):
        raise ValueError(f"must be a non-empty list of tables (got {tables!r})")
    units = tuple(_unit(index, table) for index, table in enumerate(tables))
    names = [unit.name for unit in units]
    if len(set(names)) != len(names):
        raise ValueError(f"names the same unit twice ({', '.join(names)})")
    return units


def _unit(index: int, table: dict[str, Any]) -> ComputeUnit:
    where = f"unit {table.get('name', index)!r}"
    unknown = sorted(set(table) - set(_UNIT_FIELDS))
    if unknown:
        raise ValueError(f"{where}: unknown field {unknown[0]!r} (a unit has {', '.join(_UNIT_FIELDS)})")
    for required in ("name", "c_compiler", "cflags"):
        if required not in table:
            raise ValueError(f"{where}: missing field {required!r}")
    if not isinstance(table["name"], str) or not table["name"].isidentifier() or not table["name"].islower():
        raise ValueError(f"{where}: field 'name' must be a lowercase C identifier")
    if not isinstance(table["c_compiler"], str) or not table["c_compiler"].strip():
        raise ValueError(f"{where}: field 'c_compiler' must be a non-empty string")
    operators = table.get("operators")
    for key, value, ok in (
        ("cflags", table["cflags"], isinstance(table["cflags"], list)
         and all(isinstance(flag, str) and flag.strip() for flag in table["cflags"])),
        ("operators", operators, operators is None or (isinstance(operators, list) and operators
                                                       and all(isinstance(kind, str) for kind in operators))),
        ("instructions_per_mac", table.get("instructions_per_mac", {}),
         isinstance(table.get("instructions_per_mac", {}), dict)
         and all(_positive_number(cost) for cost in table.get("instructions_per_mac", {}).values())),
        ("default_instructions_per_mac", table.get("default_instructions_per_mac", 1.0),
         _positive_number(table.get("default_instructions_per_mac", 1.0))),
    ):
        if not ok:
            raise ValueError(f"{where}: field {key!r} has a bad value {value!r}")
    return ComputeUnit(table["name"], table["c_compiler"], tuple(table["cflags"]),
                       None if operators is None else frozenset(operators),
                       dict(table.get("instructions_per_mac", {})),
                       float(table.get("default_instructions_per_mac", 1.0)))


def _positive_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
