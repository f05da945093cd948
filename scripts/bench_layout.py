"""Instructions per inference of float ONNX conv nets in each data layout choice (not a test).

    python scripts/bench_layout.py [--target cortex-m4f] [NET ...]

For each net of tests/onnx_conv_nets.py (BENCH_NETS; an NCHW ONNX model written with onnx.helper), compile
it with `layout` "nchw", "nhwc" and "auto" (tvm_ext.transform.layout_per_subgraph) and print the
instructions per inference (the self-test's run under QEMU -icount on the emulated profile; instructions,
not cycles), the layout "auto" chose for each subgraph with its estimates, and whether the three bundles'
outputs are the same bits (the self-test's output checksums). TFLite models arrive NHWC and stay so (the
pass only rewrites subgraphs whose layout changes; their int8 kernels are channels-last): none is measured.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

LAYOUT_CHOICES = ("nchw", "nhwc", "auto")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="cortex-m4f")
    parser.add_argument("nets", nargs="*")
    args = parser.parse_args()
    import onnx
    from onnx_conv_nets import BENCH_NETS, residual_conv_net

    import tvm_ext

    names = args.nets or list(BENCH_NETS)
    print(f"{'net':26} {'nchw':>12} {'nhwc':>12} {'auto':>12}  same bits  auto's choice (estimates NCHW/NHWC)")
    for name in names:
        with tempfile.TemporaryDirectory() as tmp:
            model = Path(tmp) / f"{name}.onnx"
            onnx.save(residual_conv_net(**BENCH_NETS[name]), model)
            counts, checksums, choice = {}, set(), ""
            for layout in LAYOUT_CHOICES:
                bundle = tvm_ext.compile(model, target=args.target, out=Path(tmp) / layout, jobs=1, layout=layout)
                counts[layout] = bundle.selftest.instructions
                checksums.add(tuple(output.checksum for output in bundle.selftest.outputs))
                if layout == "auto":
                    choice = _choices(Path(tmp) / layout / "manifest.json")
        cells = " ".join(f"{counts[layout] or 0:>12,}" for layout in LAYOUT_CHOICES)
        print(f"{name:26} {cells}  {'yes' if len(checksums) == 1 else 'NO':9}  {choice}", flush=True)
    return 0


def _choices(manifest: Path) -> str:
    entries = json.loads(manifest.read_text())["subgraph_layouts"]
    return "; ".join(
        f"{entry['subgraph']}: {entry['layout']}"
        + (" ({NCHW:,}/{NHWC:,})".format(**entry["estimated_instructions"]) if entry["estimated_instructions"] else "")
        for entry in entries)


if __name__ == "__main__":
    sys.exit(main())
