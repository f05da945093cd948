"""The bundle's rounding of small floats (packager/templates/round_half_even_small.h.in: onnxruntime's requantizations
round with it, no floorf) equals C99's nearbyintf, ties to even, on tests/c/test_round_half_even_small.c's cases (every
quarter in -70000..70000, each tie's neighbours, the edges near 2^22, drawn values): on the host, with strict warnings
and sanitizers."""

from __future__ import annotations

from pathlib import Path

import pytest

from c_checks import run_c_unit_tests
from packager.fixed_point_c import ROUND_HALF_EVEN_SMALL, requantize_helpers_c

UNIT_TEST = Path(__file__).resolve().parents[1] / "c" / "test_round_half_even_small.c"


@pytest.mark.parametrize("defines", [(), ("-D__ARM_FEATURE_DIRECTED_ROUNDING=1",)], ids=["addition", "floor"])
def test_the_small_rounding_equals_nearbyintf_on_the_host(tmp_path, defines):
    """Both forms: the magic addition's (cortex-m4f, rv32imc) and, as a core with directed rounding compiles it, the
    floor's (cortex-m55)."""
    (tmp_path / "round_half_even_small.h").write_text("#include <stdint.h>\n"
                                                      + requantize_helpers_c("lp", [ROUND_HALF_EVEN_SMALL]))
    run = run_c_unit_tests(UNIT_TEST, tmp_path, tmp_path, defines)
    assert run.returncode == 0 and run.stdout.startswith("ok "), run.stdout + run.stderr
