"""Benchmark speed on an emulated Cortex-M: our instructions per inference beside TFLite Micro's (not a test).

    python scripts/bench_speed.py [--models ../shared/models] [--target cortex-m4f] [--only kws_ref_model ...]

Compiles every shared model for the profile (a model that does not fit gets its one-line reason) and prints,
per model: our instructions per inference (QEMU -icount: instructions executed, not cycles of a real core),
TFLite Micro's with its reference kernels and with CMSIS-NN (TFLM_INSTRUCTIONS below, cited, not measured
here), our ratio to TFLM + CMSIS-NN, the model's multiply-accumulates (CONV_2D, DEPTHWISE_CONV_2D,
FULLY_CONNECTED, counted from the TFLite file), our instructions per MAC, and the bundle's code bytes (kernels
and run function, no weights, no libc).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent

# TFLite Micro on QEMU mps2-an386 (Cortex-M4F), -icount shift=7, arm-none-eabi-gcc 12.2 -O2, one Invoke()
# after a warm-up, instructions: (reference kernels, CMSIS-NN kernels or None). Source: the shared note
# ../shared/docs/cortex-m-under-qemu.md, table "TFLite Micro measured on this emulated core".
TFLM_INSTRUCTIONS: dict[str, tuple[int, Optional[int]]] = {
    "hello_world_int8": (5_264, 3_517),
    "ad01_int8": (1_953_811, 582_920),
    "kws_ref_model": (43_115_023, 7_699_792),
    "str_ww_ref_model": (8_301_023, 2_227_552),
    "pretrainedResnet_quant": (107_491_555, 29_863_858),
    "vww_96_int8": (100_484_268, 24_101_870),
    "person_detect": (95_891_502, 22_928_405),
    "micro_speech_quantized": (9_314_292, 1_495_378),
    "keyword_scrambled_8bit": (258_705, 120_303),
    "hello_world_float": (3_417, None),
    "ad01_fp32": (1_360_191, None),
    "pretrainedResnet": (99_931_125, None),
    "vww_96_float": (86_299_596, None),
}

COLUMNS = ("model", "ours", "TFLM ref", "TFLM CMSIS-NN", "ours / CMSIS-NN", "MACs", "ours / MAC", "code B")


def count_macs(model: Path) -> int:
    """Multiply-accumulates of one inference: output elements x taps of every CONV_2D, DEPTHWISE_CONV_2D and
    FULLY_CONNECTED in the file's first subgraph."""
    import tflite

    root = tflite.Model.GetRootAsModel(model.read_bytes(), 0)
    names = {v: k for k, v in tflite.BuiltinOperator.__dict__.items() if not k.startswith("_")}
    graph = root.Subgraphs(0)
    macs = 0
    for i in range(graph.OperatorsLength()):
        op = graph.Operators(i)
        code = root.OperatorCodes(op.OpcodeIndex())
        name = names.get(max(code.BuiltinCode(), code.DeprecatedBuiltinCode()))
        if name not in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
            continue
        out_elements = math.prod(graph.Tensors(op.Outputs(0)).ShapeAsNumpy())
        weight_shape = graph.Tensors(op.Inputs(1)).ShapeAsNumpy()
        # CONV_2D OHWI: taps KH*KW*I; DEPTHWISE (1, KH, KW, O): KH*KW; FULLY_CONNECTED (O, K): K.
        taps = {"CONV_2D": math.prod(weight_shape[1:]), "DEPTHWISE_CONV_2D": math.prod(weight_shape[1:3]),
                "FULLY_CONNECTED": int(weight_shape[-1])}[name]
        macs += int(out_elements) * int(taps)
    return macs


def row(model: Path, target: str, scratch: Path) -> str:
    from tvm_ext.compile import CompileError, compile

    try:
        bundle = compile(model, target, scratch / model.stem, force=True)
    except CompileError as err:
        return f"| {model.stem} | {err} |"
    facts = json.loads((bundle.out_dir / "manifest.json").read_text())["cortex_m"]
    ours = int(facts["instructions_per_inference"])
    reference, cmsis = TFLM_INSTRUCTIONS.get(model.stem, (None, None))
    macs = count_macs(model)
    cells = (f"{ours:,}", _count(reference), _count(cmsis), f"{ours / cmsis:.2f}" if cmsis else "-",
             f"{macs:,}", f"{ours / macs:.1f}" if macs else "-", f"{int(facts['bundle_code_bytes']):,}")
    return f"| {model.stem} | " + " | ".join(cells) + " |"


def _count(value: Optional[int]) -> str:
    return f"{value:,}" if value is not None else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path,
                        default=Path(os.environ.get("TVM_EXT_MODELS", ROOT.parent / "shared" / "models")))
    parser.add_argument("--target", default="cortex-m4f")
    parser.add_argument("--only", nargs="*", help="model file stems to run (default: every .tflite)")
    args = parser.parse_args()
    models = [m for m in sorted(args.models.rglob("*.tflite")) if not args.only or m.stem in args.only]
    print(f"Target profile {args.target}; instructions under QEMU -icount (not cycles); TFLM columns cited from "
          "../shared/docs/cortex-m-under-qemu.md.")
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    with tempfile.TemporaryDirectory() as scratch:
        for model in models:
            print(row(model, args.target, Path(scratch)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
