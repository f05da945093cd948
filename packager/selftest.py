"""`selftest.c`: runs the bundle on embedded inputs and compares with the reference runtime's outputs.

It runs several cases (TestCase: one input per model input and the reference's outputs for it), in order,
each from the model's reset state: a model with state (`<model>_reset()`, packager.state) is reset before
every case after the first, as the reference ran each case from a fresh interpreter. How many cases a bundle
embeds is `case_count`'s rule (a budget of embedded bytes and of multiply-accumulates). Only the first case's
run is counted on the emulated board (instructions of one inference).
Exit status 0 when every output of every case agrees with the reference, 1 on a mismatch, 2 when a run call
fails (the cases after it are not run).
- Float outputs: every element must have the reference's non-finite class (NaN, +Inf, -Inf, or finite) in
  the same place, and finite elements must satisfy |ours - reference| <= RTOL * max|finite reference| (a
  tolerance relative to the output's scale).
- Integer outputs are compared as integers, exactly (no rounding through `double`): |ours - reference| <=
  ATOL_LSB steps. With ATOL_LSB 0 their bytes must also have the reference's checksum.
- Every output's checksum (FNV-1a, 32 bits, of its bytes in the target's byte order; every target we build
  for is little-endian) is printed beside the reference's, computed here in Python, so that builds on
  different machines can show they computed the same bits; a float output that is not bit-identical still
  passes within its tolerance.
Every report line names its case and output (`selftest: case C output K ...`). On a mismatch the self-test
prints the case, the output, the first failing element, and both values; after every case's outputs its
verdict line, PASS_LINE or FAIL_LINE. `packager.selftest_verdict` reads back what it prints and
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
from packager.template_files import helper_template_c, template_text


@dataclass(frozen=True)
class TestCase:
    """One embedded test case: inputs and the reference's outputs, in the order of the model's inputs/outputs."""

    inputs: list[np.ndarray]
    expected: list[np.ndarray]


@dataclass(frozen=True)
class TestVectors:
    """The embedded test cases (at least one; case 0 is the one whose run the emulated board counts), and how
    their outputs are compared."""

    cases: tuple[TestCase, ...]
    reference: str  # the runtime that produced every case's `expected`, with its version
    rtol: float = 1e-5  # float outputs
    atol_lsb: int = 0  # integer outputs


MAX_CASES = 4
"""The most test cases a self-test runs (tvm_ext.reference.outputs.test_cases: random inputs and one at the integer
types' extremes)."""

CASES_BUDGET_BYTES = 1 << 20
"""The most bytes of inputs and expected outputs the self-test embeds over all its cases (at least one case,
whose I/O the model check limits to MAX_IO_BYTES): selftest.c's size, and the emulated board's read-only memory
beside the profile's (the cases sit in the weights' region, `.cases` of the Cortex-M link.ld: the boards' 4 MiB of
flash, mps3-an547's 8 MiB beside its 512 KiB boot memory)."""

CASES_BUDGET_MACS = 100_000_000
"""The most multiply-accumulates of all cases' runs together on a device or an emulated board (at least one
case): the self-test's time (a cortex-m4f runs some 3 to 10 instructions per int8 MAC, QEMU some 10^8
instructions a second)."""

HOST_CASES_BUDGET_MACS = 1_000_000_000
"""The same where the self-test runs on the host, whose core runs the portable C some 10^8 to 10^9 MACs a
second: a model of 150 million MACs (ResNet-18 at 64x64) gets all MAX_CASES cases, not one."""


SOFT_FLOAT_MAC_WEIGHT = 16
"""How many budgeted MACs (CASES_BUDGET_MACS: some 3 to 10 instructions each) one float multiply-accumulate
counts for where the self-test runs on a core without an FPU, float arithmetic in a software library: some 150
to 160 instructions under QEMU (pretrainedResnet on rv32imc: 1.90 G instructions per inference for 12.5 M MACs,
ad01_fp32 42.6 M for 264 K)."""


def budgeted_macs(plan: ExecutionPlan, soft_float: bool) -> int:
    """The multiply-accumulates of one run of `plan` as case_count's budget counts them: every call's
    (`KernelCall.macs`), those of a call with a float output SOFT_FLOAT_MAC_WEIGHT times each when `soft_float`
    (the self-test runs on a core without an FPU)."""
    def weight(call) -> int:
        floats = soft_float and any(plan.tensors[name].dtype.startswith("float") for name in call.outputs)
        return SOFT_FLOAT_MAC_WEIGHT if floats else 1

    return sum(call.macs * weight(call) for call in plan.calls)


def case_count(io_bytes: int, macs: int = 0, macs_budget: int = CASES_BUDGET_MACS) -> int:
    """How many cases the self-test runs for a model whose inputs and outputs hold `io_bytes` bytes and whose
    run computes `macs` multiply-accumulates (0: not known yet): MAX_CASES, fewer when their bytes or MACs
    together would exceed CASES_BUDGET_BYTES or `macs_budget` (CASES_BUDGET_MACS, or HOST_CASES_BUDGET_MACS
    where the self-test runs on the host), and at least 1."""
    fitting = min(CASES_BUDGET_BYTES // max(io_bytes, 1), macs_budget // max(macs, 1))
    return max(1, min(MAX_CASES, fitting))


ICOUNT_MACRO = "LP_ICOUNT"
"""The macro an emulated board's build of selftest.c defines (every runner's, Arm and RISC-V alike): the
self-test then counts one inference with the board's lp_icount.h. The host's build leaves it undefined."""

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


def reference_checksums(plan: ExecutionPlan, vectors: TestVectors) -> tuple[tuple[int, ...], ...]:
    """Per case, the checksum of each of the reference's outputs (`expected`, in the plan's output order) as the
    bundle's C arrays hold them: what selftest.c embeds and must print back."""
    return tuple(tuple(expected_checksum(values.astype(plan.tensors[name].dtype), plan.tensors[name].dtype)
                       for name, values in zip(plan.outputs, case.expected, strict=True))
                 for case in vectors.cases)


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


def _case_arrays(c_type: str, name: str, cases: str, elements: int, dtype: str, values: list[np.ndarray]) -> str:
    """`static const <c_type> <name>[<cases>][elements]`, one row per case's `values`."""
    rows = ",\n".join(array_body(v.astype(dtype), dtype, indent="    ") for v in values)
    return f"static const {c_type} {name}[{cases}][{elements}] = {{\n{rows}\n}};"


@dataclass(frozen=True)
class _Names:
    """The C names of one model's part of selftest.c: its arrays start with `arrays`, its case count is the
    macro `cases`, its cases run by the function `run_case`. A bundle of one model uses the plain names, one of
    several adds each model's prefix (`names_for`)."""

    arrays: str = "selftest_"
    cases: str = "SELFTEST_CASES"
    run_case: str = "run_case"


def names_for(model: str) -> _Names:
    """The names of `model`'s part of the self-test of a bundle of several models."""
    return _Names(f"selftest_{model}_", f"SELFTEST_{macro_prefix(model)}_CASES", f"run_case_{model}")


def _run_case_lines(plan: ExecutionPlan, inputs: list[IoTensor], outputs: list[IoTensor],
                    vectors: TestVectors, names: _Names) -> list[str]:
    """`run_case(c)`: case c from the model's reset state (reset before every case but the first when the
    model has state), run (counted on the emulated board for case 0 only) and compared output by output."""
    m, M = plan.model, macro_prefix(plan.model)
    a = names.arrays
    single = len(inputs) == 1 and len(outputs) == 1
    in_arena = io_in_arena(inputs, outputs)
    lines = [
        "/* Runs case `c` from the model's reset state and compares its outputs with the reference's: 0 when they",
        f" * agree, 1 on a mismatch, {RUN_FAILED_STATUS} when the run call fails. */",
        f"static int {names.run_case}(unsigned c)",
        "{",
        "  int failed = 0;",
        "  int status;",
    ]
    if plan.row_input is not None:  # the case's rows through selftest_read_row (selftest_rows.c.in)
        lines += ["  selftest_rows_t rows;", f"  rows.image = (const uint8_t*){a}input0[c];", "  rows.next = 0u;"]
    elif not in_arena and not single:
        lines += [f"  {m}_inputs_t inputs;", f"  {m}_outputs_t outputs;"]
    if in_arena:  # the inputs are written to, and the outputs copied from, their places in the static arena
        lines += [f"  memcpy({m}_{io.field}(), {a}input{k}[c], sizeof({a}input{k}[c]));"
                  for k, io in enumerate(inputs)]
    elif not single:
        lines += [f"  inputs.{io.field} = {a}input{k}[c];" for k, io in enumerate(inputs)]
        lines += [f"  outputs.{io.field} = {a}output{k};" for k, io in enumerate(outputs)]
    if plan.states():  # each case from the state the reference's fresh interpreter starts at
        lines += ["  if (c > 0u) {", f"    {m}_reset();", "  }"]

    def run_call(case: str) -> str:
        """The run call on case `case` (a C expression)."""
        if plan.row_input is not None:
            return f"{m}_run(selftest_read_row, &rows, {a}output0)"
        if in_arena:
            return f"{m}_run()"
        return f"{m}_run({a}input0[{case}], {a}output0)" if single else f"{m}_run(&inputs, &outputs)"

    lines += [
        f"#ifdef {ICOUNT_MACRO}",
        "  if (c == 0u) { /* one inference counted, the first case's: its input at a constant address */",
        "    uint32_t icount_start = lp_icount_start();",
        f"    status = {run_call('0')};",
        "    lp_icount_report(lp_icount_elapsed(icount_start));",
        "  } else {",
        f"    status = {run_call('c')};",
        "  }",
        "#else",
        f"  status = {run_call('c')};",
        "#endif",
        f"  if (status != {M}_OK) {{",
        '    printf("selftest: case %u run failed with status %d\\n", c, status);',
        f"    return {RUN_FAILED_STATUS};",
        "  }",
    ]
    if in_arena:
        lines += [f"  memcpy({a}output{k}, {m}_{io.field}(), sizeof({a}output{k}));"
                  for k, io in enumerate(outputs)]
    for index, io in enumerate(outputs):
        arrays = f"{a}output{index}, {a}expected{index}[c], {io.elements}u"
        if _is_float(io):
            lines.append(f"  failed |= check_{io.c_type}(c, {index}u, {arrays}, {vectors.rtol!r});")
        else:
            lines.append(f"  failed |= check_{io.c_type}(c, {index}u, {arrays}, UINT64_C({vectors.atol_lsb}));")
        bit_exact = int(not _is_float(io) and vectors.atol_lsb == 0)
        lines.append(f"  failed |= check_checksum(c, {index}u, {a}output{index}, sizeof({a}output{index}), "
                     f"{a}reference_checksum{index}[c], {bit_exact});")
    return lines + ["  return failed;", "}", ""]


@dataclass(frozen=True)
class SelftestPart:
    """One model's part of a self-test: its plan, inputs and outputs as the header names them, and its cases."""

    plan: ExecutionPlan
    inputs: list[IoTensor]
    outputs: list[IoTensor]
    vectors: TestVectors


def _includes(headers: list[str]) -> list[str]:
    return [
        "#include <math.h>",
        "#include <stdint.h>",
        "#include <stdio.h>",
        "#include <string.h>",
        "",
        *(f'#include "{header}"' for header in headers),
        f"#ifdef {ICOUNT_MACRO}",
        '#include "lp_icount.h" /* the emulated board counts the instructions of one inference */',
        "#endif",
        "",
    ]


def _part_data(part: SelftestPart, names: _Names) -> list[str]:
    """`part`'s case count, its embedded inputs, expected outputs and their checksums, and its output buffers."""
    plan, cases, a = part.plan, part.vectors.cases, names.arrays
    lines = [f"#define {names.cases} {len(cases)}u", ""]
    for index, io in enumerate(part.inputs):
        lines.append(_case_arrays(io.c_type, f"{a}input{index}", names.cases, io.elements, io.tensor.dtype,
                                  [case.inputs[index] for case in cases]))
    checksums = reference_checksums(plan, part.vectors)
    for index, io in enumerate(part.outputs):
        lines.append(_case_arrays(io.c_type, f"{a}expected{index}", names.cases, io.elements, io.tensor.dtype,
                                  [case.expected[index] for case in cases]))
        lines.append(f"static const unsigned long {a}reference_checksum{index}[{names.cases}] = {{"
                     + ", ".join(f"0x{per_case[index]:08x}ul" for per_case in checksums) + "};")
        lines.append(f"static {io.c_type} {a}output{index}[{io.elements}];")
    if plan.row_input is not None:  # the case's rows through selftest_read_row (selftest_rows.c.in)
        lines += ["", helper_template_c("packager", "selftest_rows.c.in", plan.model)]
    return lines


def _cases_function(signature: str, part: SelftestPart, names: _Names) -> list[str]:
    """The function `signature` that announces `part`'s model, runs each of its cases, prints its verdict line and
    returns 0 (pass), 1 (a mismatch) or RUN_FAILED_STATUS (a run call failed: the cases after it not run)."""
    return [
        signature,
        "{",
        "  int failed = 0;",
        "  unsigned c;",
        f'  printf("selftest: {part.plan.model} compared with %s on %u cases\\n", {c_string(part.vectors.reference)}, '
        f"{names.cases});",
        f"  for (c = 0u; c < {names.cases}; ++c) {{",
        f"    int status = {names.run_case}(c);",
        f"    if (status == {RUN_FAILED_STATUS}) {{",
        "      return status;",
        "    }",
        "    failed |= status;",
        "  }",
        *_verdict_lines(),
    ]


def _verdict_lines() -> list[str]:
    return [
        f'  printf("%s\\n", failed ? {c_string(FAIL_LINE)} : {c_string(PASS_LINE)});',
        "  return failed;",
        "}",
        "",
    ]


def write_selftest(plan: ExecutionPlan, inputs: list[IoTensor], outputs: list[IoTensor], vectors: TestVectors) -> str:
    m = plan.model
    part, names = SelftestPart(plan, inputs, outputs, vectors), _Names()
    lines = [
        f"/* selftest.c: runs {m} on {len(vectors.cases)} embedded input cases and compares with "
        f"{comment(vectors.reference)}.",
        f" * Exit status: 0 pass, 1 mismatch, {RUN_FAILED_STATUS} a run call failed. Generated by tvm_ext. */",
        *_includes([f"{m}.h"]),
        *_part_data(part, names),
        "", *_compare_functions(outputs), *_run_case_lines(plan, inputs, outputs, vectors, names),
        *_cases_function("int main(void)", part, names),
    ]
    return "\n".join(lines)


def write_several_selftest(header: str, parts: list[SelftestPart]) -> str:
    """The self-test of a bundle of several models (packager.several) that includes `header`: each model's cases
    in turn, as `write_selftest` runs them (each model's report lines after its own `selftest: <model> compared
    with` line, then its verdict line), then the verdict line of them all."""
    lines = [
        f"/* selftest.c: runs {', '.join(part.plan.model for part in parts)} one after the other on the bundle's one",
        " * arena, each on its embedded input cases, and compares with the reference runtime's outputs.",
        f" * Exit status: 0 pass, 1 mismatch, {RUN_FAILED_STATUS} a run call failed. Generated by tvm_ext. */",
        *_includes([header]),
    ]
    for part in parts:
        lines += [*_part_data(part, names_for(part.plan.model)), ""]
    lines += _compare_functions([io for part in parts for io in part.outputs])
    for part in parts:
        names = names_for(part.plan.model)
        lines += _run_case_lines(part.plan, part.inputs, part.outputs, part.vectors, names)
        lines += _cases_function(f"static int selftest_{part.plan.model}(void)", part, names)
    lines += ["int main(void)", "{", "  int failed = 0;", "  int status;"]
    for part in parts:
        lines += [f"  status = selftest_{part.plan.model}();", f"  if (status == {RUN_FAILED_STATUS}) {{",
                  "    return status;", "  }", "  failed |= status;"]
    return "\n".join(lines + _verdict_lines())
