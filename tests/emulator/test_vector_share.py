"""emulator/vector_share.py and scripts/vector_share.py: the Helium share of a cortex-m55 bundle's instructions."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from emulator.tools import missing_tools
from emulator.vector_share import is_vector

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("text", "vector"), [
    ("vmlava.s8 r0, q1, q2", True),
    ("vldrb.s16 q0, [r1, #8]", True),
    ("vmov.32 q0[1], r1", True),
    ("vpst", True),
    ("vctp.8 r2", True),
    ("vqrdmulh.s32 q3, q3, r4", True),
    ("vadd.f32 s0, s1, s2", False),
    ("vmov r0, s0", False),
    ("vpush {d8-d9}", False),
    ("vldr d7, [r3]", False),
    ("dlstp.8 lr, r2", False),
    ("letp lr, 0x1f40", False),
    ("ldr r0, [r1, #4]", False),
])
def test_an_instruction_is_vector_when_it_is_an_mve_one(text, vector):
    mnemonic, _, operands = text.partition(" ")
    assert is_vector(mnemonic, operands) is vector


@pytest.mark.slow
@pytest.mark.skipif(bool(missing_tools()), reason="needs the Arm toolchain and QEMU")
def test_the_traced_instructions_of_a_helium_bundle_add_up_to_its_instruction_count(compiled):
    """The script's per-inference total over the bundle's functions is the self-test's -icount count within 1%
    (that count is the first case's, with the call into the run function; the trace's is the mean of every case,
    whose data-dependent paths differ: kws_ref_model's mean is 3,970 instructions under its first case's), its fully
    connected kernels' shared row helper (backends/cortex_m/schedules/fc_rows.py: each kernel one call of it) runs
    vector instructions (a scalar fallback would not) and holds most of the inference's, and the bundle's folder is
    left as it was."""
    bundle = compiled("mlperf_tiny/ad01_int8.tflite", "cortex-m55")
    before = sorted(path.name for path in bundle.out_dir.iterdir())
    printed = subprocess.run([sys.executable, str(ROOT / "scripts" / "vector_share.py"), str(bundle.out_dir)],
                             capture_output=True, text=True, check=True).stdout
    rows = {fields[2].strip(): [int(value.replace(",", "")) for value in (fields[3], fields[4])]
            for fields in (line.split("|") for line in printed.splitlines() if line.startswith("| ad01_int8 |"))}
    total, total_vector = rows.pop("all of the bundle's functions")
    assert 0.99 * bundle.selftest.instructions <= total <= bundle.selftest.instructions
    assert any(re.search(r"_fully_connected_", name) for name in rows)
    row_helper = [counts for name, counts in rows.items() if re.search(r"_fc_rows_", name)]
    assert len(row_helper) == 1 and row_helper[0][1] > 0 and row_helper[0][0] > total / 2, rows
    assert 0 < total_vector < total
    assert sorted(path.name for path in bundle.out_dir.iterdir()) == before
