"""Relax -> fused PrimFuncs: the Relax pass pipeline and the per-kernel schedules.

After `relax_pipeline()`, `main` is a dataflow block of `call_tir` calls to fused PrimFuncs (one per
kernel), `R.reshape` views, and constants; it carries the layer records of tvm_ext.layers (every pass
here keeps them).
"""

from __future__ import annotations

import tvm
from tvm import relax, tirx

from backends.schedules import kernel_schedules_of
from target.resolve import TargetSpec, resolve_profile
from tvm_ext.schedule.conv_tap_order import taps_row_first
from tvm_ext.layers import keeping_layers
from tvm_ext.plan.macs import with_mac_counts
from tvm_ext.schedule.kernel_schedule import inline_intermediates
from tvm_ext.transform import (
    DropEmptyConcatPieces,
    FuseOpsKeepingLayers,
    GuardIndexOperands,
    LowerQuantizedToInteger,
    RefuseDataDependentLoops,
    RefuseOversizedTensors,
    ResolveIndexGuards,
    SplitAsSlices,
)


def relax_pipeline(target: TargetSpec = "lowpower", model_name: str = "model") -> tvm.transform.Pass:
    """The ordered Relax passes from an imported model to fused PrimFuncs, for the device `target`.

    `target` is a lowpower `tvm.target.Target` (the compiler passes the one it resolved; the Profile is read
    from it), or anything else `target.resolve_profile` takes: a profile name or tag, a profile file, a
    `Profile`. An ordinary `tvm.transform.Sequential`: users can put it (or any pass of `tvm_ext.transform`)
    into their own pipelines. `model_name` only labels errors. TVM's passes are wrapped with
    `keeping_layers`, so main's layer records reach the kernel calls.
    """
    profile = resolve_profile(target)
    return tvm.transform.Sequential(
        [
            # Before any folding: FoldConstant would compute a tensor that fits no target on the host.
            RefuseOversizedTensors(model_name),
            # Quantized TFLite: QDQ patterns -> integer kernels (float models have none and pass unchanged).
            LowerQuantizedToInteger(rounding=profile.int8_rounding, model_name=model_name),
            # Before any folding: FoldConstant would run an index operator with bad constant indices on the
            # host; the guards keep every index operator from folding and their operands checkable.
            keeping_layers(GuardIndexOperands(model_name)),
            keeping_layers(relax.transform.FoldConstant()),
            keeping_layers(DropEmptyConcatPieces()),
            keeping_layers(SplitAsSlices()),  # one tensor per kernel: TVM's split kernel returns a tuple
            keeping_layers(relax.transform.LegalizeOps()),
            # Weight transposes and other constant-only kernels are computed here, not on the device.
            keeping_layers(relax.transform.FoldConstant()),
            keeping_layers(relax.transform.RewriteDataflowReshape()),
            keeping_layers(relax.transform.AnnotateTIROpPattern()),
            FuseOpsKeepingLayers(),
            keeping_layers(relax.transform.FuseTIR()),
            keeping_layers(relax.transform.DeadCodeElimination()),
            keeping_layers(ResolveIndexGuards(model_name)),
            RefuseDataDependentLoops(model_name),
        ],
        name="tvm_ext.relax_pipeline",
    )


def schedule_kernels(mod: tvm.IRModule, target: TargetSpec = "lowpower") -> tvm.IRModule:
    """Every PrimFunc of `mod` with its NCHW convolutions' taps in NHWC's order (tvm_ext.schedule.conv_tap_order),
    its intermediates inlined and its accumulators tiled for `target`'s core by its backend's schedules (see
    tvm_ext.schedule.kernel_schedule, backends.schedules)."""
    schedules = kernel_schedules_of(resolve_profile(target))
    scheduled = {}
    for gvar, func in mod.functions.items():
        if isinstance(func, tirx.PrimFunc):
            scheduled[gvar] = inline_intermediates(taps_row_first(func), schedules.output_channel_tile,
                                                   schedules.mac, schedules.float_channel_tiles)
        else:
            scheduled[gvar] = func
    return tvm.IRModule(scheduled, attrs=mod.attrs)


def lower_to_kernels(mod: tvm.IRModule, target: TargetSpec = "lowpower", model_name: str = "model") -> tvm.IRModule:
    """Run the Relax pipeline for `target` (as relax_pipeline takes it) and schedule each kernel; each kernel
    carries the MACs counted before its schedule (tvm_ext.plan.macs)."""
    return schedule_kernels(with_mac_counts(relax_pipeline(target, model_name)(mod)), target)
