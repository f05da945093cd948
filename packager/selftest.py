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
On a mismatch the self-test prints the output, the first failing element, and both values.
`packager.build._result` reads back what it prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from string import Template

import numpy as np

from memory_planner.plan import ExecutionPlan
from packager.c_text import array_body, c_string, comment, macro_prefix
from packager.io_names import IoTensor


@dataclass(frozen=True)
class TestVectors:
    """One embedded test case: inputs and expected outputs, in the order of the model's inputs/outputs."""

    inputs: list[np.ndarray]
    expected: list[np.ndarray]
    reference: str  # the runtime that produced `expected`, with its version
    rtol: float = 1e-5  # float outputs
    atol_lsb: int = 0  # integer outputs


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


_CHECKSUM_C = """\
/* FNV-1a hash of `bytes` bytes: lets builds for different machines show they computed the same bits. */
static unsigned long checksum(const void* data, size_t bytes)
{
  const unsigned char* p = (const unsigned char*)data;
  unsigned long hash = 2166136261ul;
  size_t i;
  for (i = 0; i < bytes; ++i) {
    hash = ((hash ^ p[i]) * 16777619ul) & 0xfffffffful;
  }
  return hash;
}

/* Prints output `index`'s checksum beside the reference's. Returns 1 when they differ and the output must
   be bit-identical (`exact`), else 0. */
static int check_checksum(unsigned index, const void* data, size_t bytes, unsigned long reference, int exact)
{
  unsigned long ours = checksum(data, bytes);
  printf("selftest: output %u checksum %08lx, reference %08lx (%s)\\n", index, ours, reference,
         ours == reference ? "bit-identical" : "not bit-identical");
  if (exact && ours != reference) {
    printf("selftest: output %u mismatch in the checksum: got %08lx, expected %08lx (must be bit-identical)\\n",
           index, ours, reference);
    return 1;
  }
  return 0;
}
"""

_VALUE_CLASS_C = """\
/* The class of `x`: 0 finite, 1 NaN, 2 +Inf, 3 -Inf. Read from its bits, so that no compiler flag that
   assumes finite math can change the answer. */
static int value_class(double x)
{
  uint64_t bits;
  memcpy(&bits, &x, sizeof bits);
  if ((bits & UINT64_C(0x7ff0000000000000)) != UINT64_C(0x7ff0000000000000)) {
    return 0;
  }
  if ((bits & UINT64_C(0x000fffffffffffff)) != 0u) {
    return 1;
  }
  return (bits >> 63) != 0u ? 3 : 2;
}
"""

_CHECK_FLOAT_C = Template("""\
/* Compares output `index` ($t) with the reference: the same class (finite, NaN, +Inf, -Inf) in every
   place, and |got - want| <= rtol * max|finite want| for finite elements. Prints the largest error, the
   reference's non-finite counts and the first failing element; returns 1 on a mismatch, else 0. */
static int check_$t(unsigned index, const $t* got, const $t* want, size_t count, double rtol)
{
  unsigned long classes[4] = {0ul, 0ul, 0ul, 0ul};
  unsigned long failing = 0ul;
  double scale = 0.0;
  double worst = 0.0;
  double allowed;
  size_t first = 0u;
  size_t i;
  for (i = 0; i < count; ++i) {
    int want_class = value_class((double)want[i]);
    ++classes[want_class];
    if (want_class == 0 && fabs((double)want[i]) > scale) {
      scale = fabs((double)want[i]);
    }
  }
  allowed = rtol * scale;
  for (i = 0; i < count; ++i) {
    int same_class = value_class((double)got[i]) == value_class((double)want[i]);
    double error = 0.0;
    if (same_class && value_class((double)want[i]) == 0) {
      error = fabs((double)got[i] - (double)want[i]);
      if (error > worst) {
        worst = error;
      }
    }
    if (!same_class || error > allowed) {
      if (failing == 0ul) {
        first = i;
      }
      ++failing;
    }
  }
  printf("selftest: output %u max abs error %.9g (allowed %.9g, scale %.9g)\\n", index, worst, allowed, scale);
  printf("selftest: output %u reference has %lu NaN, %lu +Inf, %lu -Inf\\n", index, classes[1], classes[2],
         classes[3]);
  if (failing == 0ul) {
    return 0;
  }
  printf("selftest: output %u mismatch at element %lu (%lu of %lu differ): got $fmt, expected $fmt ",
         index, (unsigned long)first, failing, (unsigned long)count, (double)got[first], (double)want[first]);
  if (value_class((double)got[first]) != value_class((double)want[first])) {
    printf("(not the same non-finite class)\\n");
  } else {
    printf("(abs error %.9g, allowed %.9g)\\n", fabs((double)got[first] - (double)want[first]), allowed);
  }
  return 1;
}
""")

_DECIMAL_C = """\
/* `magnitude` (negated when `negative`) in decimal, written into the end of `text`; returns its start.
   newlib-nano's printf has no %lld, so 64-bit integers are printed as text. */
static const char* decimal_text(uint64_t magnitude, int negative, char text[24])
{
  char* p = text + 23;
  *p = '\\0';
  do {
    --p;
    *p = (char)('0' + (int)(magnitude % 10u));
    magnitude /= 10u;
  } while (magnitude != 0u);
  if (negative) {
    --p;
    *p = '-';
  }
  return p;
}

/* |a - b|, exact for any two int64_t values (computed modulo 2^64, where it fits). */
static uint64_t distance(int64_t a, int64_t b)
{
  return a > b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
}

/* `value` in decimal, written into `text`. */
static const char* signed_text(int64_t value, char text[24])
{
  return decimal_text(distance(value, 0), value < 0, text);
}
"""

_CHECK_INTEGER_C = Template("""\
/* Compares output `index` ($t) with the reference as integers: |got - want| <= atol for every element,
   exactly. Prints the largest difference and the first failing element; returns 1 on a mismatch, else 0. */
static int check_$t(unsigned index, const $t* got, const $t* want, size_t count, uint64_t atol)
{
  char texts[4][24];
  unsigned long failing = 0ul;
  uint64_t worst = 0u;
  size_t first = 0u;
  size_t i;
  for (i = 0; i < count; ++i) {
    uint64_t error = distance((int64_t)got[i], (int64_t)want[i]);
    if (error > worst) {
      worst = error;
    }
    if (error > atol) {
      if (failing == 0ul) {
        first = i;
      }
      ++failing;
    }
  }
  printf("selftest: output %u max abs error %s (allowed %s)\\n", index, decimal_text(worst, 0, texts[0]),
         decimal_text(atol, 0, texts[1]));
  if (failing == 0ul) {
    return 0;
  }
  printf("selftest: output %u mismatch at element %lu (%lu of %lu differ): got %s, expected %s "
         "(abs error %s, allowed %s)\\n", index, (unsigned long)first, failing, (unsigned long)count,
         signed_text((int64_t)got[first], texts[0]), signed_text((int64_t)want[first], texts[1]),
         decimal_text(distance((int64_t)got[first], (int64_t)want[first]), 0, texts[2]),
         decimal_text(atol, 0, texts[3]));
  return 1;
}
""")


def _is_float(io: IoTensor) -> bool:
    return io.tensor.dtype.startswith("float")


def _compare_functions(outputs: list[IoTensor]) -> list[str]:
    """The C helpers the outputs' comparisons call: one check_<type> per distinct C type, and only those
    (an unused static function is a warning)."""
    float_types = sorted({io.c_type for io in outputs if _is_float(io)})
    integer_types = sorted({io.c_type for io in outputs if not _is_float(io)})
    parts = [_CHECKSUM_C]
    if float_types:
        parts.append(_VALUE_CLASS_C)
        parts += [_CHECK_FLOAT_C.substitute(t=t, fmt=FLOAT_PRINT_FORMAT[t]) for t in float_types]
    if integer_types:
        parts.append(_DECIMAL_C)
        parts += [_CHECK_INTEGER_C.substitute(t=t) for t in integer_types]
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
    if single:
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
        "    return 2;",
        "  }",
    ]
    for index, (io, values) in enumerate(zip(outputs, vectors.expected)):
        arrays = f"selftest_output{index}, selftest_expected{index}, {io.elements}u"
        if _is_float(io):
            lines.append(f"  failed |= check_{io.c_type}({index}u, {arrays}, {vectors.rtol!r});")
        else:
            lines.append(f"  failed |= check_{io.c_type}({index}u, {arrays}, UINT64_C({vectors.atol_lsb}));")
        bit_exact = int(not _is_float(io) and vectors.atol_lsb == 0)
        reference_checksum = expected_checksum(values.astype(io.tensor.dtype), io.tensor.dtype)
        lines.append(f"  failed |= check_checksum({index}u, selftest_output{index}, sizeof(selftest_output{index}), "
                     f"0x{reference_checksum:08x}ul, {bit_exact});")
    lines += [
        '  printf("selftest: %s\\n", failed ? "FAIL" : "PASS");',
        "  return failed;",
        "}",
        "",
    ]
    return "\n".join(lines)
