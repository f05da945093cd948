"""Sum an NCHW float convolution's taps in NHWC's order: (kernel row, kernel column, input channel).

Why: TOPI's NCHW convolution (grouped too) sums over (input channel, kernel row, kernel column), its NHWC
convolution over (kernel row, kernel column, input channel); a depthwise one over (row, column) in both. Float addition is not associative, so without this an ONNX
(NCHW) model whose subgraphs tvm_ext.transform.layout_per_subgraph puts into NHWC would give outputs a few
units in the last place away from the same model kept in NCHW; with it every layout choice computes the
same bits. It is also faster on cortex-m4f (a conv net of tests/tvm_ext/transform/test_layout_per_subgraph.py: 594,568 ->
481,757 instructions per inference): the channel loop, innermost, walks one input plane's stride with the
kernel position's offsets fixed. The output tiles of tvm_ext.schedule.float_schedule (the loops outside the
reduction) are unchanged. Not in a quantized ONNX model (tvm_ext.lower.ScheduleKernels): its layout is the
model's, and its float convolutions sum as onnxruntime's MLAS does, by channel first (fused_float_products).
"""

from __future__ import annotations

from tvm import s_tir, tirx

NCHW_CONV_BLOCKS = ("conv2d_nchw", "group_conv2d_nchw")
"""The names of TOPI's NCHW convolution blocks, whose last three loops are (channel, kernel row, column)."""


def taps_row_first(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """`func` with each NCHW convolution block's three reduction loops reordered to (row, column, channel);
    any other function unchanged. Contract: only the order of each output's additions changes."""
    sch = s_tir.Schedule(func)
    try:
        root = sch.get_sblock("root")
    except s_tir.ScheduleError:
        return func
    changed = False
    for block in sch.get_child_blocks(root):
        stmt = sch.get(block)
        reductions = [iv for iv in stmt.iter_vars if iv.iter_type == tirx.IterVar.CommReduce]
        if stmt.name_hint not in NCHW_CONV_BLOCKS or len(reductions) != 3:
            continue
        channel, row, column = sch.get_loops(block)[-3:]
        sch.reorder(row, column, channel)
        changed = True
    return sch.mod["main"] if changed else func
