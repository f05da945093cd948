"""Estimate patch-based execution (MCUNetV2) of the shared CNNs: the best cut and grid per model (not a test).

    python scripts/bench_patches.py [MODEL.tflite ...] [--max-extra 0.15]

Issue 31: the compiler runs a plan with `--patches` (tvm_ext.transform.patch_prefix). For each model (default: the int8
CNNs of ../shared/models), the chain of windowed NHWC stages from the model input (CONV_2D,
DEPTHWISE_CONV_2D, MAX_POOL_2D, AVERAGE_POOL_2D, read from the TFLite file's options) is searched by
`tvm_ext.patch_geometry` for the cut and grid of smallest arena whose extra MACs stay within
`--max-extra` of the model's, and printed with the same cost model's layer-by-layer peak (each stage's
whole input and output, the output streamed over the input row by row, the model input outside the arena: the
liveness lower bound the planner sees, which its arena exceeds by its placement's gaps; the compile's figure is
the planned arena). Bytes; MACs of convolutions and fully connected layers.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tvm_ext.patch_geometry import WindowStage, best_within, layer_by_layer_peak, search  # noqa: E402

DEFAULT_MODELS = ("mlperf_tiny/vww_96_int8", "tflm/person_detect")


def read_chain(path: Path) -> tuple[list[WindowStage], int]:
    """The windowed stages from the model input on, and the model's MACs (convolutions, fully connected)."""
    import tflite
    from tflite.BuiltinOperator import BuiltinOperator as Op
    from tflite.Padding import Padding

    model = tflite.Model.GetRootAsModel(path.read_bytes(), 0)
    graph = model.Subgraphs(0)
    consumers: dict[int, int] = {}
    for i in range(graph.OperatorsLength()):
        for j in range(graph.Operators(i).InputsLength()):
            consumers[graph.Operators(i).Inputs(j)] = consumers.get(graph.Operators(i).Inputs(j), 0) + 1
    stages: list[WindowStage] = []
    total_macs = 0
    chained = graph.Inputs(0)
    for i in range(graph.OperatorsLength()):
        op = graph.Operators(i)
        code = model.OperatorCodes(op.OpcodeIndex())
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        shape = lambda t: [int(d) for d in graph.Tensors(t).ShapeAsNumpy()]  # noqa: E731
        out = shape(op.Outputs(0))
        if builtin == Op.FULLY_CONNECTED:
            total_macs += int(shape(op.Inputs(1))[0] * shape(op.Inputs(1))[1])
        if builtin not in (Op.CONV_2D, Op.DEPTHWISE_CONV_2D, Op.MAX_POOL_2D, Op.AVERAGE_POOL_2D):
            chained = None
            continue
        inp = shape(op.Inputs(0))
        table = op.BuiltinOptions()
        if builtin == Op.CONV_2D:
            options = tflite.Conv2DOptions()
        elif builtin == Op.DEPTHWISE_CONV_2D:
            options = tflite.DepthwiseConv2DOptions()
        else:
            options = tflite.Pool2DOptions()
        options.Init(table.Bytes, table.Pos)
        if builtin in (Op.CONV_2D, Op.DEPTHWISE_CONV_2D):
            kernel = tuple(shape(op.Inputs(1))[1:3])
        else:
            kernel = (options.FilterHeight(), options.FilterWidth())
        stride = (options.StrideH(), options.StrideW())
        same = options.Padding() == Padding.SAME
        pad = tuple(max((o - 1) * s + k - n, 0) // 2 if same else 0
                    for o, s, k, n in zip(out[1:3], stride, kernel, inp[1:3]))
        per_pixel = {Op.CONV_2D: kernel[0] * kernel[1] * inp[3] * out[3],
                     Op.DEPTHWISE_CONV_2D: kernel[0] * kernel[1] * out[3]}.get(builtin, 0)
        macs = out[1] * out[2] * per_pixel
        total_macs += macs
        if chained is not None and op.Inputs(0) == chained:
            stages.append(WindowStage(f"{i}", (inp[1], inp[2]), (out[1], out[2]), inp[3], out[3], kernel, stride,
                                      pad, macs))
            chained = op.Outputs(0) if consumers.get(op.Outputs(0), 0) == 1 else None
        else:
            chained = None
    return stages, total_macs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", type=Path)
    parser.add_argument("--max-extra", type=float, default=0.15)
    args = parser.parse_args()
    shared = Path(os.environ.get("TVM_EXT_MODELS", ROOT.parent / "shared" / "models"))
    models = args.models or [shared / f"{name}.tflite" for name in DEFAULT_MODELS]
    print(f"extra MACs at most {args.max_extra:.0%}; bytes (cost model of tvm_ext/patch_geometry.py)")
    print("| model | stages in chain | layer-by-layer peak | patch-based arena | cut after stage | grid | extra MACs |")
    print("|---|---|---|---|---|---|---|")
    for path in models:
        stages, total_macs = read_chain(path)
        plans = search(stages, lambda cut: layer_by_layer_peak(stages, cut), total_macs)
        best = best_within(plans, args.max_extra)
        cells = [path.stem, len(stages), f"{layer_by_layer_peak(stages, 0):,}"]
        if best is None:
            cells += ["-", "-", "-", "-"]
        else:
            cells += [f"{best.arena_bytes:,}", stages[best.cut - 1].name, f"{best.grid[0]}x{best.grid[1]}",
                      f"{best.extra_macs:,} ({best.extra_macs_fraction:.1%})"]
        print("| " + " | ".join(str(c) for c in cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
