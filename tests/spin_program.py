"""The instruction counter's probe program, one C main for every board (Cortex-M and RISC-V): it measures an
empty interval, then `spin(n)` for each trip count, and prints "trips N instructions M" for each. `spin` is each
test's own assembly, exactly 2 instructions per iteration, so the counts of two trip counts differ by exactly
2 x their difference."""

from __future__ import annotations

import re

# Three trip counts keep main's loop a loop (two could be unrolled into call sites of different overheads).
_SPIN_MAIN = """\
#include <stdio.h>
#include <stdint.h>
#include "lp_icount.h"
void spin(uint32_t n);
int main(void)
{
    static const uint32_t trips[] = {SPIN_TRIPS};
    uint32_t start = lp_icount_start();
    printf("empty %lu\\n", (unsigned long)lp_icount_elapsed(start));
    for (unsigned i = 0; i < sizeof trips / sizeof trips[0]; ++i) {
        start = lp_icount_start();
        spin(trips[i]);
        const uint64_t instructions = lp_icount_elapsed(start);
        printf("trips %lu instructions %lu\\n", (unsigned long)trips[i], (unsigned long)instructions);
    }
    PROBE
    return STATUS;
}
"""

_COUNT_LINE = re.compile(r"trips (\d+) instructions (\d+)")


def spin_main(trips: tuple[int, ...], probe: str = "", status: int = 0) -> str:
    """main.c: spin(n) measured for each of `trips`, then the C statements `probe` (which may read the array
    `trips`), then `return status;`."""
    return (_SPIN_MAIN.replace("SPIN_TRIPS", ",".join(map(str, trips))).replace("PROBE", probe)
            .replace("STATUS", str(status)))


def spin_counts(printed: str) -> dict[int, int]:
    """The instructions measured around spin(n), by trip count n, from the program's output."""
    return {int(trips): int(instructions) for trips, instructions in _COUNT_LINE.findall(printed)}
