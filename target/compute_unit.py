"""A compute unit of a device: one processor (or one code path of it) that can run some of a model's subgraphs.

A profile may list several (`units` in its file: an Arm core with and without its DSP path, a DSP beside its
host core); a profile that lists none has one unit, its own core (`Profile.compute_units`). Each unit states
which operator kinds it runs, the C compiler and flags of its kernel library, and a cost model: instructions
per multiply-accumulate for each operator kind, calibrated where the unit can be emulated from the
per-call instruction counts of our QEMU runs (`instructions_per_mac_by_kind` on a bundle's layer report).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from target import field_grammar as grammar
from target.field_grammar import BadValue, shown


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


MAX_UNITS = 16
"""A profile lists at most this many compute units."""

MAX_OPERATORS = 1024
"""A unit lists at most this many operator kinds (and costs)."""

_UNIT_FIELDS = ("name", "operators", "c_compiler", "cflags", "instructions_per_mac", "default_instructions_per_mac")


def units_from_tables(tables: Any) -> tuple[ComputeUnit, ...]:
    """The `units` field of a profile file (a list of at most MAX_UNITS tables with _UNIT_FIELDS; `name`,
    `c_compiler` and `cflags` required) as ComputeUnits; ValueError with one line naming the unit and field at
    fault."""
    if (not isinstance(tables, list) or not 0 < len(tables) <= MAX_UNITS
            or not all(isinstance(table, dict) for table in tables)):
        raise ValueError(f"must be a list of 1 to {MAX_UNITS} tables (got {shown(tables)})")
    units = tuple(_unit(index, table) for index, table in enumerate(tables))
    names = [unit.name for unit in units]
    if len(set(names)) != len(names):
        raise ValueError(f"names the same unit twice ({', '.join(names)})")
    return units


def _unit(index: int, table: dict[str, Any]) -> ComputeUnit:
    """One unit's table, each field held to its grammar (target.field_grammar)."""
    where = f"unit {shown(table.get('name', index))}"
    unknown = sorted(set(table) - set(_UNIT_FIELDS))
    if unknown:
        raise ValueError(f"{where}: unknown field {shown(unknown[0])} (a unit has {', '.join(_UNIT_FIELDS)})")
    for required in ("name", "c_compiler", "cflags"):
        if required not in table:
            raise ValueError(f"{where}: missing field {required!r}")
    checks: dict[str, Callable[[Any], Any]] = {
        "name": grammar.unit_name,
        "c_compiler": grammar.compiler,
        "cflags": grammar.flags,
        "operators": _operators,
        "instructions_per_mac": _costs,
        "default_instructions_per_mac": grammar.instructions_per_mac,
    }
    values = {}
    for key, value in table.items():
        try:
            values[key] = checks[key](value)
        except BadValue as bad:
            raise ValueError(f"{where}: field {key!r} has a bad value {shown(value)}: it {bad}") from None
    return ComputeUnit(values["name"], values["c_compiler"], values["cflags"], values.get("operators"),
                       values.get("instructions_per_mac", {}), values.get("default_instructions_per_mac", 1.0))


def _operators(value: Any) -> frozenset[str] | None:
    """A unit's operator kinds: a non-empty list of at most MAX_OPERATORS kinds, or None (every kind)."""
    if value is None:
        return None
    if not isinstance(value, list) or not 0 < len(value) <= MAX_OPERATORS:
        raise BadValue(f"must be a list of 1 to {MAX_OPERATORS} operator kinds")
    return frozenset(grammar.operator_kind(kind) for kind in value)


def _costs(value: Any) -> dict[str, float]:
    """Instructions per MAC by operator kind: a table of at most MAX_OPERATORS kinds."""
    if not isinstance(value, dict) or len(value) > MAX_OPERATORS:
        raise BadValue(f"must be a table of at most {MAX_OPERATORS} operator kinds and their costs")
    return {grammar.operator_kind(kind): grammar.instructions_per_mac(cost) for kind, cost in value.items()}
