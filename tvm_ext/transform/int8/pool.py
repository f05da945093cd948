"""AVERAGE_POOL_2D and MAX_POOL_2D on int8 (or int16: 16x8) NHWC tensors -> TFLite's integer pooling kernels.

The frontend writes AVERAGE_POOL_2D as ``astype_i8(avg_pool2d(astype_i32(x)))`` (``astype_i16`` of an int16
x) and MAX_POOL_2D as ``max_pool2d(x)`` on the integer tensor; either may be followed by the clip of a fused
activation. An ONNX model's MaxPool of quantized data (``qdq_fusion`` drops its QuantizeLinear pair, as onnxruntime
does) is ``max_pool2d(x)`` too, NCHW and maybe in ceil mode: the same maximum over NCHW planes.
"""

from __future__ import annotations

from typing import Callable, Optional, Union

from tvm import relax, te
from tvm.relax.dpl import is_op, wildcard

from ...kernels import average_pool2d_integer, max_pool2d_integer
from ...kernels.copy_runs import max_pool2d_runs
from ...kernels.window_sums import window_sums_kernels
from ...kernels.quant_params import ActivationRange
from ...layers import UNFUSED_ATTR
from .binary import first_fitting
from .graph import describe
from .lowering import ClampedCall, KernelCall, Lowering, LoweringContext, Mismatch
from .patterns import extract

_NARROWED_AVERAGE = is_op("relax.astype")(is_op("relax.nn.avg_pool2d")(wildcard()))
_WIDENED = is_op("relax.astype")(wildcard())
_AVERAGE_POOL_OF_WIDENED = is_op("relax.astype")(is_op("relax.nn.avg_pool2d")(_WIDENED))
_MAX_POOL = is_op("relax.nn.max_pool2d")(wildcard())


def _pool(kind: str, kernel: Callable[..., te.Tensor], pool: relax.Call, source: relax.Expr,
          ctx: LoweringContext, channels_first: bool = False, func_attrs: Optional[dict] = None
          ) -> Union[ClampedCall, Mismatch]:
    """The pooling kernel over the lowered integer ``source``: NHWC, floor mode, no dilation; with ``channels_first``
    (the kernel's argument of that name) NCHW, the caller's check, in either mode; ``func_attrs`` set on the
    kernel's PrimFunc."""
    attrs = pool.attrs
    if (attrs.layout != "NHWC" or bool(attrs.ceil_mode)) and not channels_first \
            or any(int(d) != 1 for d in attrs.dilation):
        return Mismatch(f"{pool.op.name} (layout, ceil_mode or dilation)")
    if source not in ctx.lowered:
        return Mismatch(describe(ctx.graph.value_of(source)))
    geometry = {name: [int(v) for v in values]
                for name, values in (("pool", attrs.pool_size), ("strides", attrs.strides), ("padding", attrs.padding))}
    if channels_first:
        geometry["padding"] = _floor_mode_padding(geometry, [int(d) for d in source.ty.shape.values[2:]],
                                                  [int(d) for d in pool.ty.shape.values[2:]])
        geometry["channels_first"] = True
    lowered = ctx.lowered[source]
    return ClampedCall(KernelCall(kind, pool, kernel, (lowered,), geometry, dict(func_attrs or {})),
                       ActivationRange.of_dtype(str(lowered.ty.dtype)))


def _floor_mode_padding(geometry: dict, in_hw: list[int], out_hw: list[int]) -> list[int]:
    """The (top, left, bottom, right) padding with which floor mode's output is ``out_hw``: ceil mode's last window
    of each axis, which runs past the padded input, as that many more rows or columns of padding at the bottom or
    right (a max pool skips padded taps, as onnxruntime's clipped windows do)."""
    top, left, bottom, right = geometry["padding"]
    extra = [max(0, (out - 1) * stride + size - (length + before + after))
             for out, stride, size, length, before, after in zip(out_hw, geometry["strides"], geometry["pool"], in_hw,
                                                                 (top, left), (bottom, right))]
    return [top, left, bottom + extra[0], right + extra[1]]


def _ends_average_pool(value: relax.Expr, ctx: LoweringContext) -> bool:
    """The int8 (int16) narrowing of an avg_pool2d result."""
    return bool(_NARROWED_AVERAGE.match(value, ctx.graph.var2val)) and str(value.attrs.dtype) in ("int8", "int16")


def _match_average_pool(narrow: relax.Call, ctx: LoweringContext) -> Union[ClampedCall, Mismatch]:
    pool = ctx.graph.value_of(narrow.args[0])
    matched = extract(_AVERAGE_POOL_OF_WIDENED, narrow, ctx)
    if matched is None or str(matched[_WIDENED].args[0].ty.dtype) != str(narrow.attrs.dtype):
        return Mismatch(describe(ctx.graph.value_of(pool.args[0])))
    # int8 window sums where the backend gives their ops (DSP cores) and they fit: column sums shared by overlapping
    # windows, else sums a word at a time; else the generic kernel
    if ctx.int8_window_sums is None:
        kernel = average_pool2d_integer
    else:
        columns, words, _ = window_sums_kernels(ctx.int8_window_sums)
        kernel = first_fitting(columns, first_fitting(words, average_pool2d_integer))
    return _pool("AVERAGE_POOL_2D", kernel, pool, matched[_WIDENED].args[0], ctx,
                 func_attrs={UNFUSED_ATTR: True} if _windows_overlap(pool) else None)


def _windows_overlap(pool: relax.Call) -> bool:
    """Whether some input element lies in more than one of ``pool``'s windows (a stride shorter than the window
    along an axis). Such a pool's kernel stays unfused (UNFUSED_ATTR; the window sums' extern stages are anyway):
    FuseOps would fuse an elementwise producer into the generic kernel, which then computes each element once per
    window reading it, under the window's padding tests (pool_prelu_33x27's PRELU into its 3x3 stride-2 SAME
    AVERAGE_POOL_2D on cortex-m55: 757,892 instructions; apart, 101,666 and 39,877)."""
    return any(int(stride) < int(size) for stride, size in zip(pool.attrs.strides, pool.attrs.pool_size))


def _ends_max_pool(value: relax.Expr, ctx: LoweringContext) -> bool:
    """A max_pool2d of an integer tensor already lowered."""
    return bool(_MAX_POOL.match(value)) and value.args[0] in ctx.lowered


def _match_max_pool(pool: relax.Call, ctx: LoweringContext) -> Union[ClampedCall, Mismatch]:
    """The int8 kernel as runs over a pixel's channels where the backend asks for it (``ctx.max_pool_runs``),
    else the element-wise kernel (int16 always; an NCHW pool, ceil mode too: ONNX's MaxPool of quantized data)."""
    source = ctx.lowered.get(pool.args[0])
    if pool.attrs.layout == "NCHW" and pool.attrs.out_layout == "NCHW":  # an ONNX model's MaxPool: no channel runs
        return _pool("MAX_POOL_2D", max_pool2d_integer, pool, pool.args[0], ctx, channels_first=True)
    runs = ctx.max_pool_runs and source is not None and str(source.ty.dtype) == "int8"
    return _pool("MAX_POOL_2D", max_pool2d_runs if runs else max_pool2d_integer, pool, pool.args[0], ctx)


AVERAGE_POOL = Lowering(frozenset({"AVERAGE_POOL_2D"}), _ends_average_pool, _match_average_pool)
MAX_POOL = Lowering(frozenset({"MAX_POOL_2D"}), _ends_max_pool, _match_max_pool)
