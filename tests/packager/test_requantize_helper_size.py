"""The requantization helpers stay small on a DSP core: every int8 output element runs one, so an instruction
more in a helper is about 8,000 more per kws depthwise layer. Counted statically (instructions in the compiled
function, arm-none-eabi-gcc -O2 for Cortex-M4) from packager/fixed_point_c.py's C: the double-rounding helper
was 38 before its rewrite (the high multiply's magnitude and sign handling, the shift selection's branches),
and the right-shift-only variant (no left shift, no saturation) did not exist."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from packager.fixed_point_c import (HELPERS, RIGHT_SHIFT_ONLY, SATURATE_INT8, SATURATE_INT16, SMALL_RIGHT_SHIFT,
                                    requantize_helper_name,
                                    requantize_helpers_c)

# Instructions per helper, measured with arm-none-eabi-gcc 12.2 (the rewrite: 32 and 10; issue 16's small
# variant, SMMULR and the rounding shift: 7 with the return; the saturation, SSAT: 2).
MOST_INSTRUCTIONS = {"double": 32, RIGHT_SHIFT_ONLY: 10, SMALL_RIGHT_SHIFT: 7, SATURATE_INT8: 2, SATURATE_INT16: 2}


def _instruction_counts(tmp_path) -> dict[str, int]:
    """Function name -> instructions in its disassembly, for every helper compiled as an ordinary function."""
    source = tmp_path / "helpers.c"
    source.write_text("#include <stdint.h>\n" + requantize_helpers_c("m", HELPERS).replace("static inline ", ""))
    obj = tmp_path / "helpers.o"
    subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-O2", "-c", str(source), "-o", str(obj)],
                   check=True)
    listing = subprocess.run(["arm-none-eabi-objdump", "-d", str(obj)], capture_output=True, text=True,
                             check=True).stdout
    counts: dict[str, int] = {}
    function = None
    for line in listing.splitlines():
        header = re.match(r"^[0-9a-f]+ <(\w+)>:$", line)
        if header:
            function = header.group(1)
            counts[function] = 0
        elif function and re.match(r"^\s+[0-9a-f]+:\t[0-9a-f]{4}", line) and "nop" not in line:
            counts[function] += 1
    return counts


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="needs arm-none-eabi-gcc")
@pytest.mark.parametrize("helper", sorted(MOST_INSTRUCTIONS))
def test_requantize_helper_compiles_to_few_instructions_on_cortex_m4(tmp_path, helper):
    counts = _instruction_counts(tmp_path)
    assert counts[requantize_helper_name("m", helper)] <= MOST_INSTRUCTIONS[helper], counts
