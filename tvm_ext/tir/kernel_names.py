"""What a kernel's C name says about it, read from data: its operator kind (TVM's operator vocabulary), its
sliding window (kernel size, stride, dilation, from the TIR's index expressions), and the role of each
constant operand (weights, bias: from which of the kernel's blocks reads it).

`unique_kernels` (tvm_ext.plan.extract_plan) makes the names; nothing here reads a model's text.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Optional, Sequence

from tvm import ir, s_tir, sym, tirx

from tvm_ext.tir.tir_walk import vars_read, walk

_FUSED_PREFIX = "fused"  # FuseOps' first word of a fused kernel's name: it says nothing about the kernel
KIND_MAX_CHARS = 40
MIN_WINDOW_DIMS = 2
# The window a kernel had before scheduling, recorded on it: a MAC helper's call (backends.cortex_m.schedules.depthwise_mac) hides
# the reads the window is read from.
WINDOW_ATTR = "tvm_ext.window"


@functools.lru_cache(maxsize=1)
def operator_words() -> frozenset[str]:
    """The words of the names of TVM's registered Relax operators (`relax.nn.max_pool2d` gives `max` and
    `pool2d`): the vocabulary of the kernel names LegalizeOps and FuseOps make."""
    return frozenset(word for name in ir.Op.list_op_names() if str(name).startswith("relax.")
                     for word in re.split(r"[._]", str(name)))


def _without_dedup_digits(word: str) -> str:
    """`word` without the digits TVM's name supply appended to make a kernel name unique (`conv2d1` ->
    `conv2d`, `atan21` -> `atan2`): a word of the operator vocabulary keeps its own digits (`atan2`)."""
    vocabulary = operator_words()
    digits = len(word) - len(word.rstrip("0123456789"))
    for cut in range(digits + 1):
        stem = word[:len(word) - cut]
        if stem in vocabulary:
            return stem
    stem = word.rstrip("0123456789")
    return stem if stem else word


def kernel_kind(name_hint: str) -> str:
    """A PrimFunc's name reduced to lowercase letters, digits and single underscores (at most
    KIND_MAX_CHARS), without FuseOps' `fused` and TVM's de-duplication digits (`fused_conv2d1_add1_relu1`
    -> `conv2d_add_relu`), `kernel` when nothing is left."""
    words = [w for w in re.sub(r"[^a-z0-9]+", "_", name_hint.lower()).strip("_").split("_") if w]
    if len(words) > 1 and words[0] == _FUSED_PREFIX:
        words = words[1:]
    kind = "_".join(_without_dedup_digits(word) for word in words)
    return kind[:KIND_MAX_CHARS].strip("_") or "kernel"


@dataclass(frozen=True)
class Window:
    """A sliding window of a kernel's reduction, per windowed dimension in index order: its size
    (elements), its stride and its dilation (elements of the input)."""

    size: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...]

    @property
    def label(self) -> str:
        """`3x3_s2` (3x3 window, stride 2 in both dimensions), `3x1_s2x1`, `3x3_s1_d2` (dilation only when
        not 1)."""
        def joined(values: tuple[int, ...]) -> str:
            return str(values[0]) if len(set(values)) == 1 else "x".join(str(v) for v in values)

        dilation = f"_d{joined(self.dilation)}" if any(d != 1 for d in self.dilation) else ""
        return f"{'x'.join(str(s) for s in self.size)}_s{joined(self.stride)}{dilation}"


def _reduction_blocks(func: tirx.PrimFunc) -> list:
    return [node for node in walk(func.body) if isinstance(node, s_tir.SBlock)
            and any(int(iv.iter_type) == tirx.IterVar.CommReduce for iv in node.iter_vars)]


def _windowed_index(index, spatial: dict, reduce: dict) -> Optional[tuple[tirx.Var, int, int, int]]:
    """(s, window size, stride, dilation) when `index` is `stride * s + dilation * r + c` for one spatial
    iteration variable s and one reduction variable r (whose extent is the window size), else None."""
    used = vars_read(index) if not isinstance(index, ir.Var) else {index}
    spatial_used = [v for v in spatial if v in used]
    reduce_used = [v for v in reduce if v in used]
    if len(spatial_used) != 1 or len(reduce_used) != 1:
        return None
    coefficients = sym.detect_linear_equation(index, [spatial_used[0], reduce_used[0]])
    if len(coefficients) != 3 or not all(isinstance(c, tirx.IntImm) for c in coefficients[:2]):
        return None
    stride, dilation = int(coefficients[0]), int(coefficients[1])
    extent = reduce[reduce_used[0]]
    if stride < 1 or dilation < 1 or not isinstance(extent, tirx.IntImm):
        return None
    return spatial_used[0], int(extent), stride, dilation


def kernel_window(func: tirx.PrimFunc) -> Optional[Window]:
    """The 2-D (or higher) sliding window of `func`'s first reduction whose input is read through one
    (convolution, depthwise convolution, pooling), else None (matmul, softmax, global pooling, elementwise).

    A windowed dimension is an index of the input that moves with one output position s and one reduction
    variable, where s is a position (no other operand the reduction reads, the weights, is indexed by s: a
    depthwise convolution's channel also moves with the output channel and a reduction of extent 1). One
    windowed dimension alone is not taken: it is as often a reduction over contiguous chunks (SVDF's
    feature stage) as a 1-D convolution. A window recorded by ``with_window_recorded`` is taken as it is.
    """
    recorded = (func.attrs or {}).get(WINDOW_ATTR)
    if recorded is not None:
        return Window(*(tuple(int(v) for v in column) for column in recorded))
    for block in _reduction_blocks(func):
        spatial = {iv.var: iv.dom.extent for iv in block.iter_vars if int(iv.iter_type) == tirx.IterVar.DataPar}
        reduce = {iv.var: iv.dom.extent for iv in block.iter_vars if int(iv.iter_type) == tirx.IterVar.CommReduce}
        loads = [(node, vars_read(node)) for node in walk(block.body) if isinstance(node, ir.TensorLoad)]
        for load, _ in loads:
            indexing_other_operands = {var for other, used in loads if not other.source.same_as(load.source)
                                       and any(r in used for r in reduce) for var in used}
            dims = [d for d in (_windowed_index(i, spatial, reduce) for i in load.indices)
                    if d is not None and d[0] not in indexing_other_operands]
            if len(dims) >= MIN_WINDOW_DIMS:
                return Window(*(tuple(column) for column in list(zip(*dims))[1:]))
    return None


REDUCTION_CALL_ATTR = "tvm_ext.reduction_call"
"""A block annotation: the block is a backend helper's call that computes a scheduled reduction (Helium's float
MAC, `backends.cortex_m.schedules.helium_float`), whose reads `constant_roles` counts as the reduction's: all of
them (the value 1), or those of the call's arguments at the indices the value lists (a call that also computes its
epilogue, `backends.cortex_m.schedules.float_tiles`: its input and weights, not its biases)."""


def _reduction_call_reads(block: s_tir.SBlock) -> set:
    """The variables a block annotated REDUCTION_CALL_ATTR reads as its reduction's (see there)."""
    value = block.annotations[REDUCTION_CALL_ATTR]
    if isinstance(value, (tirx.IntImm, int)):
        return vars_read(block.body)
    args = block.body.value.args
    return {var for index in value for var in vars_read(args[int(index)])}


def constant_roles(func: tirx.PrimFunc, num_inputs: int, constant: Sequence[bool]) -> Optional[list[str]]:
    """The role of each of `func`'s first `num_inputs` parameters (`constant[k]`: operand k is a constant),
    for a kernel whose reduction (its reduction blocks, and the helper calls annotated REDUCTION_CALL_ATTR that
    replaced them) reads exactly one constant: that one is `weight`, one constant read only outside the
    reduction is `bias`, every other operand `data`. None for any other kernel."""
    inputs = list(func.params[:num_inputs])
    calls = [node for node in walk(func.body)
             if isinstance(node, s_tir.SBlock) and REDUCTION_CALL_ATTR in node.annotations]
    in_reduction = {var for block in _reduction_blocks(func) for var in vars_read(block.body)}
    in_reduction |= {var for block in calls for var in _reduction_call_reads(block)}
    weights = [k for k, param in enumerate(inputs) if constant[k] and param in in_reduction]
    others = [k for k, param in enumerate(inputs) if constant[k] and param not in in_reduction]
    if len(weights) != 1 or len(others) > 1:
        return None
    roles = ["data"] * num_inputs
    roles[weights[0]] = "weight"
    for k in others:
        roles[k] = "bias"
    return roles


def with_window_recorded(inlined: tirx.PrimFunc, scheduled: tirx.PrimFunc) -> tirx.PrimFunc:
    """``scheduled`` with the window of ``inlined`` (the same kernel before its reductions were scheduled),
    if it has one, recorded for ``kernel_window``."""
    window = kernel_window(inlined)
    if window is None:
        return scheduled
    return scheduled.with_attr(WINDOW_ATTR, [list(window.size), list(window.stride), list(window.dilation)])
