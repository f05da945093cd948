"""Benchmark bundles on an emulated Cortex-M: flash, RAM and instructions per inference (not a test).

    python scripts/bench_mcu.py [--models ../shared/models] [--target cortex-m4f]

Compiles every shared model for the profile; a model that does not fit the profile's SRAM or flash gets its
one-line reason instead of numbers. Instructions are counted under QEMU -icount: instructions executed,
not cycles of a real core. Columns (bytes): flash = code + weights + initialised data of the whole
self-test ELF (newlib included), model code = the bundle's kernels and run function only, RAM = arena +
other static RAM (stack not included), stack = the run call's peak. TFLite Micro's figures for the same
board are not measured here (that needs TFLM built from source); the shared notes
(../shared/docs/cortex-m-under-qemu.md) list the peer's numbers measured the same way.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COLUMNS = ("model", "flash B", "model code B", "weights B", "arena B", "other static RAM B", "stack peak B",
           "instructions / inference")


def row(model: Path, target: str, scratch: Path) -> str:
    from tvm_ext.compile import CompileError, compile

    try:
        bundle = compile(model, target, scratch / model.stem, force=True)
    except CompileError as err:
        return f"| {model.stem} | {err} |"
    facts = _cortex_m_facts(bundle)
    values = (facts["flash_bytes"], facts["bundle_code_bytes"], facts["weights_bytes"], facts["arena_bytes"],
              facts["other_static_ram_bytes"], facts["stack_peak_bytes"], facts["instructions_per_inference"])
    return f"| {model.stem} | " + " | ".join(f"{v:,}" for v in values) + " |"


def _cortex_m_facts(bundle) -> dict:
    import json

    return json.loads((bundle.out_dir / "manifest.json").read_text())["cortex_m"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path,
                        default=Path(os.environ.get("TVM_EXT_MODELS", ROOT.parent / "shared" / "models")))
    parser.add_argument("--target", default="cortex-m4f")
    args = parser.parse_args()
    print(f"Target profile {args.target}; instructions under QEMU -icount (not cycles).")
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    with tempfile.TemporaryDirectory() as scratch:
        for model in sorted(args.models.rglob("*.tflite")):
            print(row(model, args.target, Path(scratch)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
