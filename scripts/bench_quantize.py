"""Float vs quantized bundles of the shared float models, and the accuracy quantization costs (not a test).

    pip install -e '.[bench]'   # scikit-image: its photographs for the image classifiers
    python scripts/bench_quantize.py [--models ../shared/models] [--target cortex-m4f] [MODEL ...]

For each model: compile the float model, then the same model with `quantize="int8", activations="auto"` (int8
weights; int8 activations, or int16 where int8 misses the accuracy budget: tvm_ext.quantize.activation_type), and
print the quantized model's activation type, arena and flash (weight) bytes of both, instructions per inference of both
(the self-test's run under QEMU -icount on emulated profiles such as cortex-m4f; "-" on a profile without an
emulator), and the accuracy cost the quantized bundle's manifest records: on the calibration samples and on
200 held-back samples of the same distribution (top-1 agreement with the float model for the classifiers, with
the float model's class histogram on those samples: one class makes the agreement uninformative; relative L2
error for the others). The image classifiers (pretrainedResnet, vww_96_float) are calibrated on 200 crops of
natural photographs and judged on 200 other crops (scripts/natural_images.py); the other models on
`calibration="random"` (uniform in [-1, 1), held back: another seed). A bundle that does not compile (e.g. does
not fit the profile) gets its one-line error instead of numbers; stderr also gets each quantized bundle's
activation type and mixed-precision decisions.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("tflm/hello_world_float.tflite", "mlperf_tiny/ad01_fp32.tflite", "mlperf_tiny/pretrainedResnet.tflite",
          "mlperf_tiny/vww_96_float.tflite")


IMAGE_SAMPLES = 200  # calibration crops, and as many held back

# The peer's own quantization of a float model, where the shared models hold it: TFLite's int8 twin, judged
# like ours (top-1 agreement with the float model on the same held-back crops), the bar a PTQ is measured by.
INT8_TWINS = {"pretrainedResnet": "mlperf_tiny/pretrainedResnet_quant.tflite",
              "vww_96_float": "mlperf_tiny/vww_96_int8.tflite"}


def _image_calibration(model: Path, folder: Path) -> dict:
    """compile()'s calibration and held_back for an image classifier: .npz files of natural-image crops in
    `folder` (natural_images.py), or random calibration for any other model."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import natural_images

    pixels = natural_images.PIXEL_RANGES.get(model.stem)
    if pixels is None:
        return {"calibration": "random"}
    import tflite

    graph = tflite.Model.GetRootAs(model.read_bytes()).Subgraphs(0)
    shape = tuple(int(d) for d in graph.Tensors(graph.Inputs(0)).ShapeAsNumpy())
    photos = natural_images.photographs()
    files = {}
    for kind, seed in (("calibration", natural_images.CALIBRATION_SEED), ("held_back", natural_images.HELD_BACK_SEED)):
        files[kind] = folder / f"{model.stem}_{kind}.npz"
        np.savez(files[kind], natural_images.draw(photos, IMAGE_SAMPLES, shape[1:3], pixels, seed))
    return files


def twin_agreement(float_model: Path, twin: Path, samples: np.ndarray) -> str:
    """Top-1 agreement of TFLite's int8 `twin` with `float_model` on `samples` (N, *input shape), both run by
    LiteRT's reference kernels; the twin's input quantized by its own scale and zero point."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    def top1(path: Path, quantized: bool) -> np.ndarray:
        interpreter = Interpreter(model_path=str(path), experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        interpreter.allocate_tensors()
        given, result = interpreter.get_input_details()[0], interpreter.get_output_details()[0]
        classes = []
        for sample in samples:
            value = sample[None]
            if quantized:
                scale, zero_point = given["quantization"]
                value = np.clip(np.round(value / scale) + zero_point, -128, 127)
            interpreter.set_tensor(given["index"], value.astype(given["dtype"]))
            interpreter.invoke()
            classes.append(int(np.argmax(interpreter.get_tensor(result["index"]))))
        return np.array(classes)

    agreement = float(np.mean(top1(float_model, False) == top1(twin, True)))
    return f"top-1 {100 * agreement:.1f}% of {len(samples)}"


def _compile(model: Path, target: str, out: Path, **quantize):
    """The bundle, or the one-line error (str)."""
    import tvm_ext
    from tvm_ext.compile import CompileError

    try:
        return tvm_ext.compile(model, target=target, out=out, jobs=1, **quantize)
    except CompileError as err:
        return str(err)


def _sizes(bundle) -> tuple[str, str, str]:
    """Arena bytes, flash (weight) bytes and instructions per inference of `bundle`, or "-" each for an
    error line (and instructions "-" when the self-test did not run under an emulator)."""
    if isinstance(bundle, str):
        return "-", "-", "-"
    instructions = bundle.selftest.instructions
    return f"{bundle.arena_bytes:,}", f"{bundle.weight_bytes:,}", f"{instructions:,}" if instructions else "-"


def _cost(cost: dict | None) -> str:
    if cost is None:
        return "-"
    if cost["metric"] == "top1_agreement":
        return (f"top-1 {100 * cost['value']:.1f}% of {cost['samples']} (float classes "
                f"{'/'.join(map(str, cost['float_class_counts']))})")
    return f"rel.err {100 * cost['value']:.2f}% on {cost['samples']}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=list(MODELS), help="models under --models")
    parser.add_argument("--models", dest="folder", type=Path,
                        default=Path(os.environ.get("TVM_EXT_MODELS", ROOT.parent / "shared" / "models")))
    parser.add_argument("--target", default="cortex-m4f")
    args = parser.parse_args()
    from tvm_ext.quantize.calibration import RANDOM_SAMPLES, RANDOM_SEED
    from tvm_ext.quantize.prepare import held_back_description

    print(f"target {args.target}; image classifiers: {IMAGE_SAMPLES} natural-image crops to calibrate, "
          f"{IMAGE_SAMPLES} others held back; other models: calibration random: uniform [-1, 1), "
          f"{RANDOM_SAMPLES} samples, seed {RANDOM_SEED}; held-back {held_back_description()}")
    print("| model | activations | float arena B | quantized arena B | float flash B | quantized flash B "
          "| float instr. | quantized instr. | calibration | held-back | TFLite's int8 twin, held-back |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="bench_quantize.") as tmp:
        for relative in args.models:
            model = args.folder / relative
            float_bundle = _compile(model, args.target, Path(tmp) / f"{model.stem}_float")
            samples = _image_calibration(model, Path(tmp))
            int8_bundle = _compile(model, args.target, Path(tmp) / f"{model.stem}_int8", quantize="int8",
                                   activations="auto", **samples)
            twin = INT8_TWINS.get(model.stem)
            twin_cell = "-"
            if twin:
                held_back = np.load(samples["held_back"])["arr_0"]
                twin_cell = twin_agreement(model, args.folder / twin, held_back)
            quantization = {} if isinstance(int8_bundle, str) else json.loads(
                (int8_bundle.out_dir / "manifest.json").read_text())["quantization"]
            accuracy = quantization.get("accuracy", {})
            cells = [_sizes(float_bundle), _sizes(int8_bundle)]
            print(f"| {model.stem} | {quantization.get('dtype', '-')} | {cells[0][0]} | {cells[1][0]} | "
                  f"{cells[0][1]} | {cells[1][1]} | "
                  f"{cells[0][2]} | {cells[1][2]} | "
                  f"{_cost(accuracy.get('calibration'))} | {_cost(accuracy.get('held_back'))} | {twin_cell} |",
                  flush=True)
            if quantization:
                print(f"  {model.stem}: {quantization['activation_type']}; {quantization['precision']}",
                      file=sys.stderr, flush=True)
            for kind, bundle in (("float", float_bundle), ("int8", int8_bundle)):
                if isinstance(bundle, str):
                    print(f"  {model.stem} {kind}: {bundle}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
