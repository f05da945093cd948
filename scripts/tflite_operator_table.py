"""Print README's TFLite operator table: one row per builtin TFLite Micro registers (and per other builtin our
int8 pipeline lowers), whether our compiler takes it with int8 activations, with int16 activations (16x8) and in
float, and why not, from the tables of tvm_ext/model_check/operator_support.py (tests/tvm_ext/model_check/test_operator_table.py
checks README against this output).

    python scripts/tflite_operator_table.py
"""

from __future__ import annotations

from tvm_ext.model_check import operator_support as support

HEADER = ("| operator | int8 | int16 (16x8) | float |", "|---|---|---|---|")


def _cell(refusal: str | None) -> str:
    if refusal == support.DILATION_ONLY:
        return f"yes, {refusal}"
    return "yes" if refusal is None else f"no: {refusal}"


def table_lines() -> list[str]:
    """The table's Markdown lines, header first, operators in alphabetical order."""
    rows = []
    for op in sorted(support.TFLM_BUILTINS | support.TFLITE_INT8_OPS):
        cells = (support.tflite_refusal(op, quantized=True), support.tflite_refusal(op, True, int16_activations=True),
                 support.tflite_refusal(op, quantized=False))
        rows.append(f"| {op} | " + " | ".join(_cell(cell) for cell in cells) + " |")
    return [*HEADER, *rows]


if __name__ == "__main__":
    print("\n".join(table_lines()))
