"""Float vs int8 bundles of the shared float models, and the accuracy int8 costs (not a test).

    python scripts/bench_quantize.py [--models ../shared/models] [--target lowpower] [MODEL ...]

For each model: compile the float model, then the same model with `quantize="int8"` calibrated on
`calibration="random"` (100 samples uniform in [-1, 1), the distribution the self-test draws from), and
print arena and flash (weight) bytes of both, and the accuracy cost the quantized bundle's manifest
records: on the calibration samples and on 100 held-back samples of the same distribution (top-1
agreement with the float model for the classifiers, relative L2 error for the others). A bundle that
does not compile (e.g. does not fit the profile) gets its one-line error instead of numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("tflm/hello_world_float.tflite", "mlperf_tiny/ad01_fp32.tflite", "mlperf_tiny/pretrainedResnet.tflite",
          "mlperf_tiny/vww_96_float.tflite")


def _compile(model: Path, target: str, out: Path, **quantize):
    """The bundle, or the one-line error (str)."""
    import tvm_ext
    from tvm_ext.compile import CompileError

    try:
        return tvm_ext.compile(model, target=target, out=out, jobs=1, **quantize)
    except CompileError as err:
        return str(err)


def _cost(cost: dict | None) -> str:
    if cost is None:
        return "-"
    if cost["metric"] == "top1_agreement":
        return f"top-1 {100 * cost['value']:.1f}%"
    return f"rel.err {100 * cost['value']:.2f}%"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=list(MODELS), help="models under --models")
    parser.add_argument("--models", dest="folder", type=Path,
                        default=Path(os.environ.get("TVM_EXT_MODELS", ROOT.parent / "shared" / "models")))
    parser.add_argument("--target", default="lowpower")
    args = parser.parse_args()
    print(f"| model | float arena B | int8 arena B | float flash B | int8 flash B | calibration | held-back |")
    print("|---|---:|---:|---:|---:|---|---|")
    with tempfile.TemporaryDirectory(prefix="bench_quantize.") as tmp:
        for relative in args.models:
            model = args.folder / relative
            float_bundle = _compile(model, args.target, Path(tmp) / f"{model.stem}_float")
            int8_bundle = _compile(model, args.target, Path(tmp) / f"{model.stem}_int8", quantize="int8",
                                   calibration="random")
            if isinstance(int8_bundle, str):
                accuracy = {}
            else:
                accuracy = json.loads((int8_bundle.out_dir / "manifest.json").read_text())["quantization"]["accuracy"]
            cells = []
            for bundle in (float_bundle, int8_bundle):
                cells.append(("-", "-") if isinstance(bundle, str) else
                             (f"{bundle.arena_bytes:,}", f"{bundle.weight_bytes:,}"))
            print(f"| {model.stem} | {cells[0][0]} | {cells[1][0]} | {cells[0][1]} | {cells[1][1]} | "
                  f"{_cost(accuracy.get('calibration'))} | {_cost(accuracy.get('held_back'))} |", flush=True)
            for kind, bundle in (("float", float_bundle), ("int8", int8_bundle)):
                if isinstance(bundle, str):
                    print(f"  {model.stem} {kind}: {bundle}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
