"""The ordered pass list: an imported Relax module -> fused, scheduled PrimFuncs for one device profile.

`pipeline()` is the one list the CLI, `tvm_ext.compile` and `tvm_ext.pipeline` all run, in this order: main's
vars renamed to generated names unless our importer did it (nothing a user named reaches C), a data layout
per subgraph of a float model (tvm_ext.transform.layout_per_subgraph), the Relax passes (quantized
operators to integer kernels, legalize, fold, fuse keeping layers), the MACs of each kernel counted before
its schedule (tvm_ext.plan.macs), and each kernel scheduled for the profile's core by its backend's schedules
(tvm_ext.schedule, backends.schedules). After it, `main` is a dataflow block of `call_tir` calls to fused
PrimFuncs (one per kernel), `R.reshape` views, and constants; it carries the layer records of tvm_ext.layers
(every pass here keeps them), and the module records the profile it was lowered for and the layouts chosen
(`lowered_for`, `layout_choices`): `tvm_ext.compile` takes such a module as it is.
"""

from __future__ import annotations

from typing import Optional

import tvm
from tvm import relax, tirx

from backends.code_price import THUMB2_KERNEL_CODE, KernelCode
from backends.schedules import kernel_schedules_of
from target.profile import Profile
from target.resolve import TargetSpec, resolve_profile
from tvm_ext.codegen.fused_float_products import mlas_block_taps
from tvm_ext.frontend import with_generated_var_names
from tvm_ext.layers import (
    FUSED_FLOAT_PRODUCTS_ATTR,
    LAYOUT_CHOICES_ATTR,
    LOWERED_FOR_ATTR,
    ONNX_QUANTIZATION_ATTR,
    ORIGINAL_VAR_NAMES_ATTR,
    PLAIN_MAC_KERNELS_ATTR,
    keeping_layers,
)
from tvm_ext.plan.macs import mac_count_of, with_mac_counts
from tvm_ext.schedule.conv_tap_order import taps_row_first
from tvm_ext.schedule.kernel_schedule import inline_intermediates
from tvm_ext.transform import (
    ContiguousCopiesAsViews,
    ConvertLayoutPerSubgraph,
    DequantizeWeightsInKernels,
    DropEmptyConcatPieces,
    FoldLookupsIntoHelpers,
    FuseOpsKeepingLayers,
    GuardIndexOperands,
    JoinsInPlace,
    LowerQuantizedToInteger,
    RefuseDataDependentLoops,
    RefuseOversizedTensors,
    ResolveIndexGuards,
    SplitAsSlices,
)
from tvm_ext.transform.layout_per_subgraph import LayoutChoice, LayoutError, choose_layouts
from tvm_ext.patch_geometry import PatchCut
from tvm_ext.transform.patch_prefix import RunPrefixInPatches
from tvm_ext.transform.qlinear_channels_last import QLinearConvChannelsLast
from tvm_ext.transform.qlinear_depthwise_padded import QLinearDepthwisePadded
from tvm_ext.transform.transpose_conv_phases import TransposeConvPhases

_CALL_TIR = tvm.ir.Op.get("relax.call_tir")


def pipeline(target: TargetSpec = "lowpower", model_name: str = "model", layout: Optional[str] = None,
             patches: Optional[PatchCut] = None) -> tvm.transform.Sequential:
    """The ordered passes from an imported model to scheduled kernels, for the device `target`.

    `target` is a lowpower `tvm.target.Target` (the compiler passes the one it resolved; the Profile is read
    from it), or anything else `target.resolve_profile` takes: a profile name or tag, a profile file, a
    `Profile`. `layout` ("NCHW" or "NHWC") puts every subgraph of a float model into that data layout, None
    lets the estimate choose per subgraph. `patches` runs the first stages patch by patch
    (tvm_ext.transform.patch_prefix; None: layer by layer, the passes as without it). An ordinary `tvm.transform.Sequential`: users can put it (or any
    pass of `tvm_ext.transform`) into their own pipelines. `model_name` only labels errors. TVM's passes are
    wrapped with `keeping_layers`, so main's layer records reach the kernel calls.
    """
    profile = resolve_profile(target)
    schedules = kernel_schedules_of(profile)
    return tvm.transform.Sequential(
        [
            *_before_patches(profile, layout, model_name),
            # Before the int8 pass: each patch keeps its layers' QDQ patterns, so it gets the whole layer's kernel.
            *([] if patches is None else [RunPrefixInPatches(patches.cut, patches.grid, patches.driver,
                                                            profile.int8_rounding)]),
            # Before the int8 pass: each phase of a transpose convolution is a convolution the int8 pass lowers.
            TransposeConvPhases(),
            # Quantized TFLite: QDQ patterns -> integer kernels (float models have none and pass unchanged).
            LowerQuantizedToInteger(rounding=profile.int8_rounding, model_name=model_name, schedules=schedules,
                                    flash_bytes=profile.flash_bytes,
                                    integer_requantization=not profile.hardware_float),
            # Before any folding: a quantized ONNX model's float Convs and MatMuls keep their int8 weights.
            keeping_layers(DequantizeWeightsInKernels()),
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
            # A table lookup after a kernel one helper call computes: that helper's form storing the looked-up values.
            FoldLookupsIntoHelpers(),
            keeping_layers(relax.transform.AnnotateTIROpPattern()),
            FuseOpsKeepingLayers(),
            keeping_layers(relax.transform.FuseTIR()),
            keeping_layers(relax.transform.DeadCodeElimination()),
            keeping_layers(ResolveIndexGuards(model_name)),
            RefuseDataDependentLoops(model_name),
            # Kernels that copy a contiguous block of their input: views of its bytes (no call, no buffer). Not
            # under patches: a band's copy of its rows must stay a copy (row-wise input fetches the rows into it,
            # and a view would keep the whole input alive while the bands run).
            *([ContiguousCopiesAsViews(profile.alignment_bytes)] if patches is None else []),
            # Joins of contiguous pieces: each piece's kernel writes its slice of the join, no kernel copies it. Not
            # under patches, as the views above (the patch pass's own joins are not tried in place).
            *([JoinsInPlace(profile.alignment_bytes)] if patches is None else []),
            # The MACs of each kernel, counted before its schedule moves its loops.
            CountMacs(),
            ScheduleKernels(profile),
        ],
        name="tvm_ext.pipeline",
    )


def _before_patches(profile: Profile, layout: Optional[str], model_name: str) -> list[tvm.transform.Pass]:
    """The passes `pipeline` runs before RunPrefixInPatches (the function they give is the one a patch cut is of)."""
    return [
        # First: every later name (PrimFuncs' buffers are named after main's vars) is one of ours.
        GeneratedVarNames(),
        # Before the int8 pass and any folding: the layout of each float subgraph, converted at the source.
        LayoutPerSubgraph(profile, layout, model_name),
        # Before any folding: FoldConstant would compute a tensor that fits no target on the host.
        RefuseOversizedTensors(model_name),
        # A quantized ONNX model's QLinearConvs over NHWC copies of their inputs, where the copies pay.
        keeping_layers(QLinearConvChannelsLast(kernel_schedules_of(profile))),
        # ... and its padded depthwise QLinearConvs over padded copies.
        keeping_layers(QLinearDepthwisePadded(kernel_schedules_of(profile))),
    ]


def main_for_patches(mod: tvm.IRModule, target: TargetSpec = "lowpower", model_name: str = "model",
                     layout: Optional[str] = None) -> relax.Function:
    """`mod`'s main as `pipeline(target, model_name, layout, patches)` hands it to RunPrefixInPatches: in the data
    layout chosen per subgraph for the profile (a float subgraph in NCHW is no part of a window chain of NHWC
    stages), so the patch plans (tvm_ext.compile.patches) are of the chain the patch pass finds; `mod`'s own main
    when it went through `pipeline` already (`lowered_for`: no pass runs on it). LayoutError as `pipeline`'s."""
    if lowered_for(mod) is not None:
        return mod["main"]
    return tvm.transform.Sequential(_before_patches(resolve_profile(target), layout, model_name))(mod)["main"]


@tvm.transform.module_pass(opt_level=0, name="GeneratedVarNames")
class GeneratedVarNames:
    """`main`'s vars renamed by tvm_ext.frontend.with_generated_var_names, unless they are already (our
    importers rename every model's and record the model's own names, for messages, on `main`)."""

    def transform_module(self, mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        attrs = mod["main"].attrs
        if attrs is not None and ORIGINAL_VAR_NAMES_ATTR in attrs:
            return mod
        return with_generated_var_names(mod)


@tvm.transform.module_pass(opt_level=0, name="LayoutPerSubgraph")
class LayoutPerSubgraph:
    """`main` with each subgraph in the data layout `choose_layouts` gives it for `profile` (`force`: one
    layout for all), the choices recorded on the module (`layout_choices`); LayoutError names `model_name`."""

    def __init__(self, profile: Profile, force: Optional[str], model_name: str) -> None:
        self.profile = profile
        self.force = force
        self.model_name = model_name

    def transform_module(self, mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        try:
            plan = choose_layouts(mod["main"], self.profile, self.force)
        except LayoutError as err:
            raise LayoutError(f"{self.model_name}: {err}") from err
        converted = ConvertLayoutPerSubgraph(plan)(mod)
        return converted.with_attr(LAYOUT_CHOICES_ATTR, [_choice_attr(choice) for choice in plan.choices])


@tvm.transform.module_pass(opt_level=0, name="CountMacs")
class CountMacs:
    """Each PrimFunc with its multiply-accumulates recorded (tvm_ext.plan.macs), before any schedule."""

    def transform_module(self, mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        return with_mac_counts(mod)


@tvm.transform.module_pass(opt_level=0, name="ScheduleKernels")
class ScheduleKernels:
    """Every PrimFunc with its NCHW convolutions' taps in NHWC's order (tvm_ext.schedule.conv_tap_order), its
    intermediates inlined and its accumulators tiled for `profile`'s core by its backend's schedules (see
    tvm_ext.schedule.kernel_schedule, backends.schedules), those whose schedule the backend's choices for the
    whole bundle change (`KernelSchedules.bundle_choice`, made from every kernel scheduled first and their calls)
    scheduled again with them, and, in a quantized ONNX model, marked to round its float multiply-accumulates
    once, in MLAS's blocks of taps (FUSED_FLOAT_PRODUCTS_ATTR: the taps per block, 0 for one); the module marked
    as lowered for `profile`."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile

    def transform_module(self, mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        schedules = kernel_schedules_of(self.profile)
        onnxruntime_products = ONNX_QUANTIZATION_ATTR in (mod["main"].attrs or {})
        plain = PLAIN_MAC_KERNELS_ATTR in (mod["main"].attrs or {})

        def float_tiles(func: tirx.PrimFunc) -> tuple[int, ...]:
            """The float tiles ``func`` tries: one accumulator (a tile of 1) for a MAC kernel below the backend's
            `KernelSchedules.float_tile_min_macs` (its MACs of one call, CountMacs), else the backend's (a kernel
            without MACs too: a pool's or a mean's sums keep their tile)."""
            macs = mac_count_of(func)
            return (1,) if 0 < macs < schedules.float_tile_min_macs else schedules.float_channel_tiles

        def schedule(func: tirx.PrimFunc, mac) -> tirx.PrimFunc:
            """``func`` scheduled with the MAC schedules ``mac`` (a MAC kernel of a model marked
            PLAIN_MAC_KERNELS_ATTR: with one accumulator and no helper)."""
            # A quantized ONNX model's float convolutions sum as MLAS's im2col: (channel, row, column).
            ordered = func if onnxruntime_products else taps_row_first(func)
            if plain and mac_count_of(func) > 0:
                func = inline_intermediates(ordered, 1, None, (1,))
            else:
                func = inline_intermediates(ordered, schedules.output_channel_tile, mac, float_tiles(func))
            return (func.with_attr(FUSED_FLOAT_PRODUCTS_ATTR, mlas_block_taps(ordered))
                    if onnxruntime_products else func)

        scheduled = {gvar: schedule(func, schedules.mac) if isinstance(func, tirx.PrimFunc) else func
                     for gvar, func in mod.functions.items()}
        # choices the backend makes from every kernel of the bundle: those its choice changes scheduled again
        choice = bundle_choice(schedules.bundle_choice, tvm.IRModule(scheduled), schedules.kernel_code) \
            if schedules.bundle_choice is not None else None
        if choice is not None:
            scheduled = {gvar: schedule(mod[gvar], choice[gvar.name_hint])
                         if gvar.name_hint in choice else func for gvar, func in scheduled.items()}
        return tvm.IRModule(scheduled, attrs=mod.attrs).with_attr(LOWERED_FOR_ATTR, self.profile.name)


def bundle_choice(choose, mod: tvm.IRModule, code: KernelCode = THUMB2_KERNEL_CODE) -> Optional[dict[str, object]]:
    """The MAC schedules per kernel (PrimFunc name) whose schedule the backend's choice for the whole bundle
    changes (``choose``: its `KernelSchedules.bundle_choice`), from `mod`'s kernels scheduled first and their calls,
    each group of kernels tvm_ext.transform.share_constant_variants will share for `code`'s core (`shared_groups`)
    seen as its first kernel called by all their calls, as the one kernel it becomes, and its choice given to every
    member (so that they stay one kernel but for their constants); None where it changes none."""
    from tvm_ext.transform.share_constant_variants import shared_groups

    first_of = {name: group[0] for group in shared_groups(mod, code) for name in group}

    def first(name: str) -> str:
        return first_of.get(name, name)

    calls: dict[str, int] = {}
    for name, count in kernel_calls(mod["main"]).items():
        calls[first(name)] = calls.get(first(name), 0) + count
    choice = choose({gvar.name_hint: func for gvar, func in mod.functions.items()
                     if isinstance(func, tirx.PrimFunc) and first(gvar.name_hint) == gvar.name_hint}, calls)
    if choice is None:
        return None
    return {gvar.name_hint: choice.kernels[first(gvar.name_hint)] for gvar in mod.functions
            if first(gvar.name_hint) in choice.kernels}


def kernel_calls(main: relax.Function) -> dict[str, int]:
    """The calls of each kernel (PrimFunc name) in ``main``'s bindings (``call_tir``), per inference."""
    calls: dict[str, int] = {}
    for block in main.body.blocks:
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, relax.Call) and value.op.same_as(_CALL_TIR) \
                    and isinstance(value.args[0], tvm.ir.GlobalVar):
                calls[value.args[0].name_hint] = calls.get(value.args[0].name_hint, 0) + 1
    return calls


def lowered_for(mod: tvm.IRModule) -> Optional[str]:
    """The name of the profile `pipeline()` lowered `mod` for, or None when it did not run on `mod`."""
    value = mod.attrs.get(LOWERED_FOR_ATTR) if mod.attrs is not None else None
    return None if value is None else str(value)


def layout_choices(mod: tvm.IRModule) -> tuple[LayoutChoice, ...]:
    """The layout choices `pipeline()` recorded on `mod` (each estimate in whole instructions)."""
    recorded = mod.attrs.get(LAYOUT_CHOICES_ATTR) if mod.attrs is not None else None
    return tuple(LayoutChoice(int(entry["subgraph"]), str(entry["layout"]),
                              {str(layout): int(cost) for layout, cost in entry["estimate"].items()},
                              tuple(str(layer) for layer in entry["layers"]))
                 for entry in (recorded or ()))


def _choice_attr(choice: LayoutChoice) -> dict:
    """`choice` as a module attribute value (its estimates rounded, as its manifest facts give them)."""
    return {"subgraph": choice.subgraph, "layout": choice.layout, "layers": list(choice.layers),
            "estimate": {layout: round(cost) for layout, cost in choice.estimate.items()}}
