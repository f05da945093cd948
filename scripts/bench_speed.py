"""Benchmark speed on an emulated core: our instructions per inference beside TFLite Micro's (not a test).

    python scripts/bench_speed.py [--models ../shared/models] [--target cortex-m4f] [--only kws_ref_model ...]
                                  [--sweep none|small|full] [--patches off|auto|NxM|stream|streamN]

Compiles every shared model for the profile (a model that does not fit gets its one-line reason) and prints,
per model: our instructions per inference (QEMU -icount: instructions executed, not cycles of a real core; a
from the compile's self-test on the profile's board: a Cortex-M profile's MPS2/MPS3 board, a RISC-V profile's
QEMU virt), TFLite Micro's with its reference kernels and with CMSIS-NN on the same emulated core (PEERS
below, cited, not measured here), our ratios to each, the model's multiply-accumulates (the bundle's report:
convolutions, depthwise convolutions, fully connected layers, matrix multiplies), our instructions per MAC, the
bundle's code bytes (kernels and run function, no weights, no libc) and, where the peer's is known (PEERS),
its ratio to TFLite Micro + CMSIS-NN's code. Then, per model, its three most expensive kernel
calls (from the bundle's per-call report, counted by its profiling build): instructions,
share of the whole inference, instructions per MAC, so a reader sees which kernel holds a model back. Last,
per kernel kind (packager/kernel_kinds.py), the worst layer over those models and over a generated sweep of layer shapes
(scripts/layer_sweep.py; `--sweep full` for every combination, `none` for none): its instructions per unit
(MAC, or byte for kinds without MACs) against the kind's target, how many layers are more than 1.5x above it, and the
instructions the kind's layers spend above its target in all (what reaching it would save: where to start).
The zoo models' (../shared/models/zoo) TFLM + CMSIS-NN figures are read from ../shared/docs/zoo-under-qemu.json.
`--only NAME [NAME ...]` selects models by file stem (names apart or joined by commas, as in bench_memory.py:
scripts/model_selection.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import dataclass
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

# TFLite Micro on QEMU mps3-an547 (Cortex-M55), same method: (reference kernels, CMSIS-NN with its Helium
# paths). Source: ../shared/docs/cortex-m55-riscv-under-qemu.md, columns "M55 reference" and "M55 CMSIS-NN Helium".
TFLM_M55_INSTRUCTIONS: dict[str, tuple[int, Optional[int]]] = {
    "kws_ref_model": (42_134_998, 1_815_214),
    "vww_96_int8": (96_371_539, 6_558_260),
    "pretrainedResnet_quant": (97_684_846, 4_912_672),
    "str_ww_ref_model": (7_625_202, 407_874),
    "ad01_int8": (1_697_873, 149_971),
    "person_detect": (92_167_192, 6_508_011),
}

# TFLite Micro + CMSIS-NN's code for one model (runtime, the model's kernels and CMSIS-NN; int8-only -O2 build for
# the same core), bytes. Source: the issue "Faster than TFLite Micro with CMSIS-NN on the same core" that set
# the target of at most half of it; no other model's figure was published.
TFLM_CODE_BYTES: dict[str, int] = {"kws_ref_model": 48_973, "vww_96_int8": 51_289}

ZOO_FIGURES = ROOT.parent / "shared" / "docs" / "zoo-under-qemu.json"
"""TFLite Micro + CMSIS-NN's instructions for the zoo's models, measured the same way (that note's data)."""

# TFLite Micro's reference kernels on QEMU virt (RV32), same method, by model: (on rv32imac, on rv32imafc); TFLM
# ships no optimized RISC-V kernels. Source: ../shared/docs/cortex-m55-riscv-under-qemu.md, columns "RV32IMAC
# reference" (the peers measured rv32imac: rv32imc without atomics, which an int8 inference does not use) and
# "RV32IMAFC reference".
TFLM_RV32_REFERENCE_INSTRUCTIONS: dict[str, tuple[int, int]] = {
    "kws_ref_model": (44_383_308, 44_383_314),
    "vww_96_int8": (110_171_750, 110_171_756),
    "pretrainedResnet_quant": (125_607_460, 125_607_466),
    "str_ww_ref_model": (9_572_715, 9_572_721),
    "ad01_int8": (2_482_440, 2_482_440),
    "person_detect": (105_418_671, 105_418_677),
}


def reference_only(column: int) -> dict[str, tuple[int, Optional[int]]]:
    """Column `column` of TFLM_RV32_REFERENCE_INSTRUCTIONS as peer figures: (reference kernels, no CMSIS-NN)."""
    return {model: (figures[column], None) for model, figures in TFLM_RV32_REFERENCE_INSTRUCTIONS.items()}


PEERS: dict[str, tuple[str, dict[str, tuple[int, Optional[int]]], dict[str, int]]] = {
    "cortex-m4f": ("../shared/docs/cortex-m-under-qemu.md (mps2-an386)", TFLM_INSTRUCTIONS, TFLM_CODE_BYTES),
    "cortex-m55": ("../shared/docs/cortex-m55-riscv-under-qemu.md (mps3-an547; the CMSIS-NN column is its Helium "
                   "build)", TFLM_M55_INSTRUCTIONS, {}),
    "rv32imc": ("../shared/docs/cortex-m55-riscv-under-qemu.md (virt; TFLM reference on rv32imac)",
                reference_only(0), {}),
    "rv32imafc": ("../shared/docs/cortex-m55-riscv-under-qemu.md (virt; TFLM reference on rv32imafc)",
                  reference_only(1), {}),
}
"""Per profile: where the peers' figures are cited from, their instructions per inference on its emulated core
and their code bytes where known; a profile not here gets no peer columns."""

COLUMNS = ("model", "ours", "TFLM ref", "ours / ref", "TFLM CMSIS-NN", "ours / CMSIS-NN", "MACs", "ours / MAC",
           "code B", "TFLM+CMSIS-NN code B", "code ratio")


HOT_CALLS = 3
"""How many of each model's most expensive kernel calls the second table lists."""

HOT_COLUMNS = ("model", "step", "layer(s)", "operator", "kernel", "instructions", "share", "instr. / MAC")


KIND_COLUMNS = ("kind", "unit", "target", "worst instr. / unit", "x target", "worst layer", "layers over 1.5x",
                "instr. over target", "MACs not counted")


@dataclass(frozen=True)
class Layer:
    """One kernel call of a measured bundle, as the per-kind table needs it."""

    model: str
    call: dict  # the manifest's layer_report call (its "kind" entry measured)


def measurements_key(target: str) -> str:
    """The manifest key under which a compile for `target` records its self-test's measurements on the profile's
    emulated board (its runner's: "cortex_m" or "riscv"). SystemExit for a profile no emulated board runs."""
    import target as profiles
    from backends import backend_of

    profile = profiles.resolve_profile(target)
    runner = backend_of(profile).emulated_runner(profile)
    if runner is None:
        raise SystemExit(f"{target}: no emulated board counts this profile's instructions (a Cortex-M or RISC-V "
                         "profile has one)")
    return runner.manifest_key


def compiled(model: Path, target: str, scratch: Path, measured: str, patches: str = "off") -> dict | str:
    """The manifest of `model` compiled for `target` (with `--patches patches`), or the one-line reason it was
    refused. Its entry `measured` is the compile's measurements of the self-test on the profile's emulated board
    (the manifest's entry under the key `measured`, `measurements_key`)."""
    from tvm_ext.compile import CompileError, compile

    try:
        bundle = compile(model, target, scratch / model.stem, force=True, patches=patches)
    except CompileError as err:
        return str(err)
    manifest = json.loads((bundle.out_dir / "manifest.json").read_text())
    return {**manifest, "measured": manifest[measured]}


def layers_of(model: str, manifest: dict) -> list[Layer]:
    """The kernel calls of the bundle's layer report that its profiling build measured (their "kind" entries
    then hold the instructions per unit); none where no build counted them."""
    return [Layer(model, call) for call in manifest["layer_report"]["calls"] if "instructions" in call]


def row(model: Path, manifest: dict | str, peers: dict[str, tuple[Optional[int], Optional[int]]],
        peer_code_bytes: dict[str, int]) -> tuple[str, list[str]]:
    """The model's row of the main table, and its HOT_CALLS most expensive calls' rows, from the bundle's
    manifest (its board's measurements, `measured`, and its `layer_report`, the facts of report.md), or its
    refusal."""
    if isinstance(manifest, str):
        return f"| {model.stem} | {manifest} |", []
    facts, report = manifest["measured"], manifest["layer_report"]
    ours = int(facts["instructions_per_inference"])
    reference, cmsis = peers.get(model.stem, (None, None))
    macs = int(report["totals"]["macs"])
    code, peer_code = int(facts["bundle_code_bytes"]), peer_code_bytes.get(model.stem)
    cells = (f"{ours:,}", _count(reference), f"{ours / reference:.2f}" if reference else "-", _count(cmsis),
             f"{ours / cmsis:.2f}" if cmsis else "-", f"{macs:,}", f"{ours / macs:.1f}" if macs else "-",
             f"{code:,}", _count(peer_code), f"{code / peer_code:.2f}" if peer_code else "-")
    calls = [call for call in report["calls"] if call.get("instructions") is not None]
    return f"| {model.stem} | " + " | ".join(cells) + " |", hot_calls(model.stem, calls, ours)


def hot_calls(model: str, calls: list[dict], inference_instructions: int) -> list[str]:
    """Rows of the HOT_CALLS calls with the most instructions: which kernel holds the model back."""
    rows = []
    for call in sorted(calls, key=lambda call: -call["instructions"])[:HOT_CALLS]:
        layers = "; ".join(f"{layer['name']} #{layer['index']}".strip() for layer in call["layers"]) or "-"
        operators = " + ".join(layer["operator"] for layer in call["layers"]) or "-"
        per_mac = call["instructions_per_mac"]
        cells = (model, str(call["step"]), layers, operators, call["kernel"], f"{call['instructions']:,}",
                 f"{100 * call['instructions'] / inference_instructions:.1f}%",
                 f"{per_mac:.1f}" if per_mac is not None else "-")
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def kind_rows(layers: list[Layer]) -> list[str]:
    """Per kernel kind present: the layer furthest above the kind's target (or of most instructions per unit
    without a target), how many are more than 1.5x above it, how many of a MAC kind counted no MACs."""
    by_kind: dict[str, list[Layer]] = {}
    for layer in layers:
        by_kind.setdefault(layer.call["kind"]["name"], []).append(layer)
    rows = []
    for name, members in sorted(by_kind.items()):
        kind = members[0].call["kind"]
        rated = [m for m in members if m.call["kind"]["instructions_per_unit"] is not None]
        worst = max(rated, key=_badness, default=None)
        target = next((m.call["kind"]["target_instructions_per_unit"] for m in members
                       if m.call["kind"]["target_instructions_per_unit"]), None)
        cells = [name, kind["unit"], f"{target:g}" if target else "-"]
        if worst is None:
            cells += ["-", "-", "-"]
        else:
            facts, call = worst.call["kind"], worst.call
            shapes = ", ".join("x".join(map(str, s)) for s in call["input_shapes"]) + " -> " + \
                ", ".join("x".join(map(str, s)) for s in call["output_shapes"])
            cells += [f"{facts['instructions_per_unit']:.1f}",
                      f"{facts['times_target']:.1f}" if facts["times_target"] is not None else "-",
                      f"{worst.model} step {call['step']} `{call['kernel']}` ({shapes})"]
        cells += [f"{sum(m.call['kind']['over_target'] for m in members)} of {len(members)}",
                  f"{sum(_over_target(m) for m in rated):,}",
                  str(sum(not m.call["kind"]["macs_counted"] for m in members))]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def _over_target(layer: Layer) -> int:
    """The instructions a layer spends above its kind's target (its instructions less the target times its units
    of work; 0 at or under the target, or without one): summed over a kind, where its work over target sits, to
    rank the kinds by what reaching their targets would save (a worst ratio may be a layer of a few hundred)."""
    facts = layer.call["kind"]
    target = facts.get("target_instructions_per_unit")
    if not target:
        return 0
    return max(0, round(layer.call["instructions"] - target * facts["work"]))


def _badness(layer: Layer) -> tuple[bool, float]:
    """How far a layer is above its kind's target; a layer without a target (a float kernel) ranks below every
    layer with one, by its instructions per unit."""
    facts = layer.call["kind"]
    times = facts["times_target"]
    return times is not None, times if times is not None else facts["instructions_per_unit"]


def zoo_peers(figures: Path) -> dict[str, tuple[Optional[int], Optional[int]]]:
    """Model stem -> (TFLM reference: not measured, TFLM + CMSIS-NN) instructions from the zoo note's data ({}
    without it)."""
    if not figures.is_file():
        return {}
    return {Path(entry["file"]).stem: (None, int(entry["instructions"]))
            for entry in json.loads(figures.read_text())["models"].values() if entry.get("instructions")}


def _count(value: Optional[int]) -> str:
    return f"{value:,}" if value is not None else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path,
                        default=Path(os.environ.get("TVM_EXT_MODELS", ROOT.parent / "shared" / "models")))
    parser.add_argument("--target", default="cortex-m4f")
    from model_selection import add_only_option, selected_models

    add_only_option(parser)
    parser.add_argument("--sweep", choices=("none", "small", "full"), default="small",
                        help="the generated layer shapes to measure too (scripts/layer_sweep.py)")
    parser.add_argument("--zoo-figures", type=Path, default=ZOO_FIGURES)
    parser.add_argument("--patches", default="off",
                        help="the models' --patches (default off; the sweep's layers always layer by layer)")
    args = parser.parse_args()
    try:
        models = selected_models(args.models, args.only)
    except ValueError as err:
        print(err)
        return 2
    measured = measurements_key(args.target)
    source, peers, peer_code_bytes = PEERS.get(args.target, ("nowhere: no peer measured on this profile", {}, {}))
    if args.target == "cortex-m4f":  # the zoo note measured the peers on the Cortex-M4F board
        peers, source = {**peers, **zoo_peers(args.zoo_figures)}, f"{source} and {args.zoo_figures.name}"
    print(f"Target profile {args.target}; instructions under QEMU -icount (not cycles); TFLM columns cited from "
          f"{source}." + ("" if args.patches == "off" else f" Models compiled with --patches {args.patches}."))
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    hot, layers = [], []
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        for model in models:
            manifest = compiled(model, args.target, scratch, measured, args.patches)
            model_row, model_hot = row(model, manifest, peers, peer_code_bytes)
            print(model_row, flush=True)
            hot += model_hot
            layers += layers_of(model.stem, manifest) if isinstance(manifest, dict) else []
        if args.sweep != "none":
            from layer_sweep import sweep_models

            for name, data in sweep_models(full=args.sweep == "full"):
                (scratch / f"{name}.tflite").write_bytes(data)
                manifest = compiled(scratch / f"{name}.tflite", args.target, scratch, measured)
                if isinstance(manifest, str):
                    print(f"sweep model {name}: {manifest}", flush=True)
                else:
                    layers += layers_of(name, manifest)
    print(f"\nThe {HOT_CALLS} most expensive kernel calls of each model (from its report.md's facts; share of the "
          "whole inference):")
    print("| " + " | ".join(HOT_COLUMNS) + " |")
    print("|" + "---|" * len(HOT_COLUMNS))
    print("\n".join(hot))
    swept = "" if args.sweep == "none" else f" and the {args.sweep} sweep of generated layers"
    print(f"\nPer kernel kind, the worst layer over these models{swept} (instructions per unit against the kind's "
          "target, packager/kernel_kinds.py):")
    print("| " + " | ".join(KIND_COLUMNS) + " |")
    print("|" + "---|" * len(KIND_COLUMNS))
    print("\n".join(kind_rows(layers)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
