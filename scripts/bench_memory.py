"""Benchmark the memory planner on every shared model against TFLite Micro's arena (not a test).

    python scripts/bench_memory.py [--models ../shared/models] [--target lowpower]

For each .tflite model under `--models` (mlperf_tiny and tflm), in one run: compile it with `tvm_ext.compile`
(which orders the calls and plans the arena with `memory_planner`), without and with `--io-in-arena`, and
print, in bytes,

- the liveness bound of the call order (no arena can be smaller) and our arena, with the model's inputs and
  outputs in the caller's buffers (the default bundle);
- total RAM with the I/O outside: everything one inference holds on the device, as the fit check counts it
  (`target.RamUse`): our arena + the input and output bytes + the state + the run call's stack (measured on
  the emulated board for a Cortex-M target, else the profile's `stack_bound_bytes`);
- total RAM with `--io-in-arena` (the inputs and outputs among the arena's buffers: the arena, state and
  stack are all of it), and that plan's liveness bound;
- TFLite Micro's arena (`TFLM_ARENA_BYTES`), which holds the inputs and outputs too (not the stack), and
  whether our arena with `--io-in-arena` (which holds them too) is below it;
- both bundles' self-tests (bit-identical with the reference; on the emulated board for a Cortex-M target);
- whether the default bundle fits cortex-m0plus (32 KB SRAM, 256 KB flash), all of its RAM counted with the
  stack measured on the emulated board, and its flash with the code measured there (weights + code + data):
  "yes (total RAM)" or the refusal's excess; a third compile, for that
  profile (the column is left out with `--no-m0plus`).

A model that does not compile gets its one-line error instead of numbers.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# TFLite Micro's arena_used_bytes() (bytes, 32-bit pointers: planned tensors, inputs and outputs included,
# plus its persistent bookkeeping) measured on the emulated Cortex-M4 (mps2-an386, arm-none-eabi-gcc 12.2).
# Source: /work/shared/docs/cortex-m-under-qemu.md, "TFLite Micro measured on this emulated core", column
# "arena (B)". A model missing here has no published figure (kws_ref_model_float32: TFLM refuses hybrid
# models; keyword_scrambled, simple_add_model: not measured).
TFLM_ARENA_BYTES: dict[str, int] = {
    "hello_world_int8": 676,
    "ad01_int8": 2_260,
    "kws_ref_model": 22_772,
    "str_ww_ref_model": 15_252,
    "pretrainedResnet_quant": 54_340,
    "vww_96_int8": 100_660,
    "person_detect": 82_292,
    "micro_speech_quantized": 6_788,
    "keyword_scrambled_8bit": 8_052,
    "hello_world_float": 736,
    "ad01_fp32": 4_528,
    "pretrainedResnet": 201_760,
    "vww_96_float": 321_808,
}
COLUMNS = ("model", "liveness bound", "our arena", "total RAM, I/O outside", "liveness bound, I/O in arena",
           "total RAM, --io-in-arena", "TFLM arena", "--io-in-arena below TFLM", "self-tests (default, in arena)")
M0PLUS_COLUMN = "fits cortex-m0plus"


def fits_m0plus(model: Path, scratch: Path) -> str:
    """"yes (<total RAM> B)" when the model compiles and passes its self-test on cortex-m0plus, else "no: "
    and each excess the refusal names (SRAM, flash), or the error line."""
    from tvm_ext.compile import CompileError, DoesNotFitError, compile

    try:
        bundle = compile(model, "cortex-m0plus", scratch / f"{model.stem}_m0plus", force=True)
    except DoesNotFitError as err:
        return "no: " + ", ".join(f"{o.memory} {o.excess_bytes:,} B over" for o in err.overruns)
    except CompileError as err:
        return f"error: {err}"
    return f"yes ({bundle.total_ram_bytes:,} B)"


def bench(model: Path, target: str, scratch: Path, m0plus: bool) -> str:
    """One table row for `model`."""
    from tvm_ext.compile import CompileError, compile

    try:
        default = compile(model, target, scratch / model.stem, force=True)
        inside = compile(model, target, scratch / f"{model.stem}_io_in_arena", force=True, io_in_arena=True)
    except CompileError as err:
        return f"| {model.stem} | error: {err} |"
    tflm = TFLM_ARENA_BYTES.get(model.stem)
    verdict = "no TFLM figure" if tflm is None else ("yes" if inside.arena_bytes < tflm else "NO")
    selftests = ", ".join(f"{'PASS' if b.selftest.passed else 'FAIL'} ({b.selftest.where})" for b in (default, inside))
    cells = (model.stem, default.memory.lower_bound, default.memory.arena_bytes, default.total_ram_bytes,
             inside.memory.lower_bound, inside.total_ram_bytes, "-" if tflm is None else tflm, verdict, selftests)
    if m0plus:
        cells += (fits_m0plus(model, scratch),)
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_models = Path(os.environ.get("TVM_EXT_MODELS", ROOT.parent / "shared" / "models"))
    parser.add_argument("--models", type=Path, default=default_models)
    parser.add_argument("--target", default="lowpower")
    parser.add_argument("--no-m0plus", action="store_true", help=f"leave out the column {M0PLUS_COLUMN!r}")
    args = parser.parse_args()
    models = sorted(args.models.rglob("*.tflite"))
    columns = COLUMNS if args.no_m0plus else (*COLUMNS, M0PLUS_COLUMN)
    print(f"target {args.target}; bytes; TFLM arena: /work/shared/docs/cortex-m-under-qemu.md")
    print("| " + " | ".join(columns) + " |")
    print("|---" * len(columns) + "|")
    with tempfile.TemporaryDirectory() as scratch:
        for model in models:
            print(bench(model, args.target, Path(scratch), not args.no_m0plus), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
