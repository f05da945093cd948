"""The frontend's own converter tables, keyed by the model check's lists of the operators our import converts.

The model check decides which operators a model may use before TVM (and so this frontend) is loaded; it cannot
import the frontend (the frontend imports the check's parse and records: tests/test_import_cycles.py). Its lists
(`model_check.operator_support.ONNX_OWN_CONVERTERS`, `model_check.signal_ops.SIGNAL_OPERATORS`) are therefore
the one place the operators are named, and the frontend keys each converter table by them: a table that gives
a converter for an operator the check does not list, or none for one it lists, stops the frontend's import (a
bug of ours) instead of letting a model pass the check and fail the import.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TypeVar

Converter = TypeVar("Converter")


class ConverterTableError(RuntimeError):
    """A converter table of the frontend and the model check's list of its operators differ (our bug)."""


def keyed_by(operators: Collection[str], converters: Mapping[str, Converter], table: str) -> dict[str, Converter]:
    """The converter of each operator of `operators` (the check's list), in the list's order, from `converters`
    (operator name -> the frontend's converter); ConverterTableError naming the table `table` and the operators
    in one but not the other."""
    missing = [op for op in operators if op not in converters]
    unlisted = sorted(set(converters) - set(operators))
    if missing or unlisted:
        raise ConverterTableError(
            f"{table}: no converter for {missing} (the model check accepts them); converters for {unlisted}, "
            "which the model check does not list")
    return {op: converters[op] for op in operators}
