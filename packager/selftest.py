"""`selftest.c`: runs the bundle on an embedded input and compares with the reference runtime's output.

Exit status 0 when every output agrees with the reference, 1 on a mismatch, 2 when the run call fails.
- Float outputs: every element must have the reference's non-finite class (NaN, +Inf, -Inf, or finite) in
  the same place, and finite elements must satisfy |ours - reference| <= RTOL * max|finite reference| (a
  tolerance relative to the output's scale).
- Integer outputs are compared as integers, exactly (no rounding through `double`): |ours - reference| <=
  ATOL_LSB steps. With ATOL_LSB 0 their bytes must also have the reference's checksum.
- Every output's checksum (FNV-1a, 32 bits, of its bytes in the target's byte order; every target we build
  for is little-endian) is printed beside the reference's, computed here in Python, so that builds on
  different machines can show they computed the same bits; a float output that is not bit-identical still
  passes within its tolerance.
On a mismatch the self-test prints the output, the first failing element, and both values; after every
output its verdict line, PASS_LINE or FAIL_LINE. `packager.selftest_verdict` reads back what it prints and
alone decides whether the bundle passed (the exit status alone does not). The comparison helpers are static C in
packager/templates/selftest_*.c (`.c.in`: per C type, `$t` the type and `$fmt` its printf format).
"""

from __future__ import annotations

from dataclasses import dataclass
from string import Template

import numpy as np

from memory_planner.plan import ExecutionPlan
from packager.c_text import array_body, c_string, comment, macro_prefix
from packager.io_names import IoTensor, io_in_arena
from packager.template_files import template_text


@dataclass(frozen=True)
class TestVectors:
    """One embedded test case: inputs and expected outputs, in the order of the model's inputs/outputs."""

    inputs: list[np.ndarray]
    expected: list[np.ndarray]
    reference: str  # the runtime that produced `expected`, with its version
    rtol: float = 1e-5  # float outputs
    atol_lsb: int = 0  # integer outputs


PASS_LINE = "selftest: PASS"
FAIL_LINE = "selftest: FAIL"
"""The self-test's last line of its own: its verdict, printed after every output's report."""

RUN_FAILED_STATUS = 2
"""selftest.c's exit status when the bundle's run call returned an error status (0: passed, 1: a mismatch)."""

FLOAT_PRINT_FORMAT = {"float": "%.9g", "double": "%.17g"}
"""printf formats that print each float C type's values exactly enough to read them back (round trip)."""


def fnv1a_32(data: bytes) -> int:
    """FNV-1a, 32 bits, of `data`: the checksum selftest.c computes of an output's bytes."""
    value = 2166136261
    for byte in data:
        value = ((value ^ byte) * 16777619) & 0xFFFFFFFF
    return value


def expected_checksum(values: np.ndarray, dtype: str) -> int:
    """The checksum of `values` as the output's C array holds them (little-endian bytes of `dtype`)."""
    return fnv1a_32(np.ascontiguousarray(values, dtype=np.dtype(dtype).newbyteorder("<")).tobytes())


def reference_checksums(plan: ExecutionPlan, vectors: TestVectors) -> tuple[int, ...]:
    """The checksum of each of the reference's outputs (`vectors.expected`, in the plan's output order) as the
    bundle's C arrays hold them: what selftest.c embeds and must print back."""
    return tuple(expected_checksum(values.astype(plan.tensors[name].dtype), plan.tensors[name].dtype)
                 for name, values in zip(plan.outputs, vectors.expected, strict=True))


def _is_float(io: IoTensor) -> bool:
    return io.tensor.dtype.startswith("float")


def _compare_functions(outputs: list[IoTensor]) -> list[str]:
    """The C helpers the outputs' comparisons call: one check_<type> per distinct C type, and only those
    (an unused static function is a warning)."""
    float_types = sorted({io.c_type for io in outputs if _is_float(io)})
    integer_types = sorted({io.c_type for io in outputs if not _is_float(io)})
    parts = [template_text("packager", "selftest_checksum.c")]
    if float_types:
        parts.append(template_text("packager", "selftest_value_class.c"))
        check_float = Template(template_text("packager", "selftest_check_float.c.in"))
        parts += [check_float.substitute(t=t, fmt=FLOAT_PRINT_FORMAT[t]) for t in float_types]
    if integer_types:
        parts.append(template_text("packager", "selftest_decimal.c"))
        check_integer = Template(template_text("packager", "selftest_check_integer.c.in"))
        parts += [check_integer.substitute(t=t) for t in integer_types]
    return parts


def write_selftest(plan: ExecutionPlan, inputs: list[IoTensor], outputs: list[IoTensor], vectors: TestVectors) -> str:
    m, M = plan.model, macro_prefix(plan.model)
    lines = [
        f"/* selftest.c: runs {m} on an embedded input and compares with {comment(vectors.reference)}.",
        " * Exit status: 0 pass, 1 mismatch, 2 the run call failed. Generated by tvm_ext. */",
        "#include <math.h>",
        "#include <stdint.h>",
        "#include <stdio.h>",
        "#include <string.h>",
        "",
        f'#include "{m}.h"',
        "#ifdef LP_CORTEX_M",
        '#include "lp_icount.h" /* the emulated board counts the instructions of one inference */',
        "#endif",
        "",
    ]
    for index, (io, values) in enumerate(zip(inputs, vectors.inputs)):
        lines.append(f"static const {io.c_type} selftest_input{index}[{io.elements}] = "
                     + array_body(values.astype(io.tensor.dtype), io.tensor.dtype) + ";")
    for index, (io, values) in enumerate(zip(outputs, vectors.expected)):
        lines.append(f"static const {io.c_type} selftest_expected{index}[{io.elements}] = "
                     + array_body(values.astype(io.tensor.dtype), io.tensor.dtype) + ";")
        lines.append(f"static {io.c_type} selftest_output{index}[{io.elements}];")
    lines += ["", *_compare_functions(outputs)]
    lines += [
        "int main(void)",
        "{",
        "  int failed = 0;",
        "  int status;",
    ]
    single = len(inputs) == 1 and len(outputs) == 1
    in_arena = io_in_arena(inputs, outputs)
    if in_arena:  # the inputs are written to, and the outputs copied from, their places in the static arena
        lines += [f"  memcpy({m}_{io.field}(), selftest_input{k}, sizeof(selftest_input{k}));"
                  for k, io in enumerate(inputs)]
        run_call = f"{m}_run()"
    elif single:
        run_call = f"{m}_run(selftest_input0, selftest_output0)"
    else:
        lines.append(f"  {m}_inputs_t inputs;")
        lines.append(f"  {m}_outputs_t outputs;")
        lines += [f"  inputs.{io.field} = selftest_input{k};" for k, io in enumerate(inputs)]
        lines += [f"  outputs.{io.field} = selftest_output{k};" for k, io in enumerate(outputs)]
        run_call = f"{m}_run(&inputs, &outputs)"
    lines += [
        "#ifdef LP_CORTEX_M",
        "  uint32_t icount_start = lp_icount_start();",
        f"  status = {run_call};",
        "  lp_icount_report(lp_icount_elapsed(icount_start));",
        "#else",
        f"  status = {run_call};",
        "#endif",
    ]
    lines += [
        f'  printf("selftest: {m} compared with %s\\n", {c_string(vectors.reference)});',
        f"  if (status != {M}_OK) {{",
        '    printf("selftest: run failed with status %d\\n", status);',
        f"    return {RUN_FAILED_STATUS};",
        "  }",
    ]
    if in_arena:
        lines += [f"  memcpy(selftest_output{k}, {m}_{io.field}(), sizeof(selftest_output{k}));"
                  for k, io in enumerate(outputs)]
    for index, (io, reference_checksum) in enumerate(zip(outputs, reference_checksums(plan, vectors))):
        arrays = f"selftest_output{index}, selftest_expected{index}, {io.elements}u"
        if _is_float(io):
            lines.append(f"  failed |= check_{io.c_type}({index}u, {arrays}, {vectors.rtol!r});")
        else:
            lines.append(f"  failed |= check_{io.c_type}({index}u, {arrays}, UINT64_C({vectors.atol_lsb}));")
        bit_exact = int(not _is_float(io) and vectors.atol_lsb == 0)
        lines.append(f"  failed |= check_checksum({index}u, selftest_output{index}, sizeof(selftest_output{index}), "
                     f"0x{reference_checksum:08x}ul, {bit_exact});")
    lines += [
        f'  printf("%s\\n", failed ? {c_string(FAIL_LINE)} : {c_string(PASS_LINE)});',
        "  return failed;",
        "}",
        "",
    ]
    return "\n".join(lines)
