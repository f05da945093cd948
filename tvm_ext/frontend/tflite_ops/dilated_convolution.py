"""TFLite's form of a dilated convolution -> one Relax convolution with dilation.

TensorFlow runs a convolution of dilation d as SPACE_TO_BATCH_ND (pad the input, cut it into the d x d
interleaved sub-images, one per batch), a stride-1 VALID convolution of each sub-image, and BATCH_TO_SPACE_ND
(interleave the results again, crop). Output pixel n of the interleaved result is
sum_t W[t] * padded[n + d * t]: the VALID convolution of the padded input with dilation d. So each chain
(`tvm_ext.model_check.dilated_convolutions`) imports as pad -> conv2d(dilation d) -> crop, computed as TensorFlow
computes the three operators (the convolution's arithmetic is unchanged). TFLite Micro gets two things wrong: it
runs the chain with the file's batch of 1 (the self-test's reference runs it on the file with the run-time batches
written in: `tvm_ext.model_check.dilated_convolutions.with_run_time_batches`), and its SPACE_TO_BATCH_ND pads int8
with an offset it never sets, not the zero point: a quantized chain that pads where the zero point is not 0 is
refused, since nothing could check it.

Inside a chain our tensors are not the flatbuffer's: where TFLite holds d batches of n pixels along a blocked
axis, ours holds one image of n * d pixels. `_Interleaved` records, per tensor, the factor of each axis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from tvm import relax

from tvm_ext.model_check.dilated_convolutions import DilatedConvolutionChain

from .call_tree import with_call_replaced
from .refusal import OperatorRefused

_CONV2D = "relax.nn.conv2d"


class DilatedConvolutionRefused(OperatorRefused):
    """A chain whose constants or options are not a dilated convolution's (the message says which)."""


@dataclass(frozen=True)
class _Interleaved:
    """A tensor inside a chain: ours has the flatbuffer's shape with each axis times `factors` (the block size
    along a blocked spatial axis, 1 elsewhere), less the `trimmed` (before, after) elements of each axis, and a
    batch of 1 (the flatbuffer's batch is 1 or the blocks')."""

    factors: tuple[int, ...]
    trimmed: tuple[tuple[int, int], ...]

    def shape(self, flatbuffer_shape: tuple[int, ...]) -> tuple[int, ...]:
        """Our shape of a tensor whose flatbuffer shape is `flatbuffer_shape`."""
        return (1, *(size * factor - before - after for size, factor, (before, after)
                     in zip(flatbuffer_shape[1:], self.factors[1:], self.trimmed[1:], strict=True)))


class DilatedConvolutions:
    """Converts the operators of a model's dilated-convolution `chains`; every other operator goes to the
    converter it would have gone to (`wrap`)."""

    def __init__(self, chains: tuple[DilatedConvolutionChain, ...]) -> None:
        self._convert: dict[int, Callable] = {}  # operator index -> our conversion of it
        self._chains = {chain.space_to_batch: chain for chain in chains}
        for chain in chains:
            self._convert[chain.space_to_batch] = self._space_to_batch
            self._convert.update(dict.fromkeys((*chain.before, *chain.after), self._reshape))
            self._convert[chain.convolution] = self._convolution
            self._convert[chain.batch_to_space] = self._batch_to_space
        self._interleaved: dict[int, _Interleaved] = {}  # tensor index -> its layout inside a chain

    def wrap(self, converter, convert: Callable) -> Callable:
        """`convert` (op -> Relax expression), but ours for an operator of a chain."""

        def convert_or_chain(op):
            ours = self._convert.get(converter.operator_index[op._tab.Pos])
            return convert(op=op) if ours is None else ours(converter, op, convert)

        return convert_or_chain

    def _space_to_batch(self, converter, op, convert: Callable) -> relax.Expr:
        """SPACE_TO_BATCH_ND: its padding alone (the cutting into sub-images is the convolution's dilation).

        Padding that only outputs BATCH_TO_SPACE_ND crops read is left out with those outputs (output pixel n
        reads padded pixels n .. n + dilation * (kernel - 1): the first `crop` outputs read only what the first
        `crop` pads shift, and alike at the end), so TF's padding to a multiple of the block costs nothing."""
        data, block, paddings = converter.get_input_tensors(op)
        (output,) = converter.get_output_tensors(op)
        shape, out_shape = _shape(converter, data), _shape(converter, output)
        spatial = len(shape) - 2
        blocks = _ints(converter, block)
        pads = _ints(converter, paddings)
        if len(shape) not in (3, 4) or len(blocks) != spatial or len(pads) != 2 * spatial or shape[0] != 1:
            raise DilatedConvolutionRefused(
                f"SPACE_TO_BATCH_ND of a {list(shape)} input with block shape {blocks} and paddings {pads}: a "
                "dilated convolution's has a batch of 1, one block size and two paddings per spatial axis")
        padded = [size + pads[2 * axis] + pads[2 * axis + 1] for axis, size in enumerate(shape[1:-1])]
        if (min(blocks) < 1 or min(pads) < 0 or any(rows % b for rows, b in zip(padded, blocks))
                or [rows // b for rows, b in zip(padded, blocks)] != list(out_shape[1:-1])
                or out_shape[0] not in (1, math.prod(blocks)) or out_shape[-1] != shape[-1]):
            raise DilatedConvolutionRefused(
                f"SPACE_TO_BATCH_ND of {list(shape)} with block shape {blocks} and paddings {pads} does not "
                f"give its output's {list(out_shape)}")
        _same_quantization(converter, data, output, "SPACE_TO_BATCH_ND")
        crops = self._crops(converter, self._chains[converter.operator_index[op._tab.Pos]], spatial)
        trimmed = [min(pad, max(crop, 0)) for pad, crop in zip(pads, crops)]
        self._interleaved[output.tensor_idx] = _Interleaved(
            (1, *blocks, 1), ((0, 0), *zip(trimmed[0::2], trimmed[1::2]), (0, 0)))
        kept = [pad - trim for pad, trim in zip(pads, trimmed)]  # the padding kept outputs read
        expr = converter.get_tensor_expr(data)
        if not any(kept):
            return expr
        zero_point = int(output.qnn_params["zero_point"].value.numpy()) if output.qnn_params else 0
        if zero_point:
            raise DilatedConvolutionRefused(
                f"quantized SPACE_TO_BATCH_ND pads {pads} with its zero point {zero_point} in TensorFlow, but "
                "TFLite Micro's kernel pads with an offset it never sets (0 in its Python interpreter), so no "
                "reference computes the model as TensorFlow means it and our result could not be checked; "
                "Conv1D(padding='causal') avoids it")
        return relax.op.nn.pad(expr, pad_width=[0, 0, *kept, 0, 0], pad_value=0.0)

    @staticmethod
    def _crops(converter, chain: DilatedConvolutionChain, spatial: int) -> list[int]:
        """The chain's BATCH_TO_SPACE_ND crops (before, after per spatial axis), or zeros where they are not
        `spatial` pairs (its own conversion refuses those)."""
        crops = _ints(converter, converter.get_input_tensors(converter.subgraph.Operators(chain.batch_to_space))[2])
        return crops if len(crops) == 2 * spatial else [0] * (2 * spatial)

    def _reshape(self, converter, op, convert: Callable) -> relax.Expr:
        """EXPAND_DIMS, RESHAPE or SQUEEZE inside a chain: size-1 axes added or removed, ours alike."""
        data = converter.get_input_tensors(op)[0]
        (output,) = converter.get_output_tensors(op)
        shape, out_shape = _shape(converter, data), _shape(converter, output)
        layout = self._interleaved[data.tensor_idx]
        sized = [(size, factor, trim) for size, factor, trim in zip(shape[1:], layout.factors[1:], layout.trimmed[1:])
                 if size != 1 or factor != 1]
        out_sized = [axis for axis, size in enumerate(out_shape) if axis > 0 and size != 1]
        if [size for size, _, _ in sized] != [out_shape[axis] for axis in out_sized]:
            raise DilatedConvolutionRefused(
                f"{converter.get_op_code_str(op)} from {list(shape)} to {list(out_shape)} inside a dilated "
                "convolution: only size-1 axes may come or go between its SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND")
        factors, trimmed = [1] * len(out_shape), [(0, 0)] * len(out_shape)
        for axis, (_, factor, trim) in zip(out_sized, sized):
            factors[axis], trimmed[axis] = factor, trim
        out_layout = _Interleaved(tuple(factors), tuple(trimmed))
        self._interleaved[output.tensor_idx] = out_layout
        return relax.op.reshape(converter.get_tensor_expr(data), out_layout.shape(out_shape))

    def _convolution(self, converter, op, convert: Callable) -> relax.Expr:
        """The convolution of every sub-image: ours with the block sizes as its dilation."""
        from tflite.Conv2DOptions import Conv2DOptions
        from tflite.DepthwiseConv2DOptions import DepthwiseConv2DOptions
        from tflite.Padding import Padding

        data = converter.get_input_tensors(op)[0]
        (output,) = converter.get_output_tensors(op)
        name = converter.get_op_code_str(op)
        layout = self._interleaved[data.tensor_idx]
        options = Conv2DOptions() if name == "CONV_2D" else DepthwiseConv2DOptions()
        table = op.BuiltinOptions()
        options.Init(table.Bytes, table.Pos)
        geometry = (options.StrideH(), options.StrideW(), options.DilationHFactor(), options.DilationWFactor())
        if len(layout.factors) != 4 or layout.factors[3] != 1 or geometry != (1, 1, 1, 1) \
                or options.Padding() != Padding.VALID:
            raise DilatedConvolutionRefused(
                f"{name} between SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND must be a VALID convolution of stride "
                "and dilation 1 over blocked height and width (TensorFlow's form of a dilated convolution)")
        self._interleaved[output.tensor_idx] = layout
        dilation = [layout.factors[1], layout.factors[2]]

        def dilated(call: relax.Call) -> relax.Expr:
            a = call.attrs
            return relax.op.nn.conv2d(call.args[0], call.args[1], strides=a.strides, padding=a.padding,
                                      dilation=dilation, groups=a.groups, data_layout=a.data_layout,
                                      kernel_layout=a.kernel_layout, out_layout=a.out_layout, out_dtype=a.out_dtype)

        return with_call_replaced(convert(op=op), _CONV2D, dilated)

    def _batch_to_space(self, converter, op, convert: Callable) -> relax.Expr:
        """BATCH_TO_SPACE_ND: its crop alone (ours is interleaved already)."""
        data, block, crops = converter.get_input_tensors(op)
        (output,) = converter.get_output_tensors(op)
        shape, out_shape = _shape(converter, data), _shape(converter, output)
        layout = self._interleaved[data.tensor_idx]
        ours = layout.shape(shape)
        spatial = len(shape) - 2
        blocks = _ints(converter, block)
        cuts = _ints(converter, crops)
        if len(cuts) == 2 * spatial:  # less what its SPACE_TO_BATCH_ND left out already
            cuts = [cut - trim for cut, trim in zip(cuts, (t for pair in layout.trimmed[1:-1] for t in pair))]
        cropped = [size - cuts[2 * axis] - cuts[2 * axis + 1] for axis, size in enumerate(ours[1:-1])]
        if (blocks != list(layout.factors[1:-1]) or len(cuts) != 2 * spatial or min(cuts, default=0) < 0
                or (1, *cropped, ours[-1]) != tuple(out_shape)):
            raise DilatedConvolutionRefused(
                f"BATCH_TO_SPACE_ND with block shape {blocks} and crops {cuts} does not undo its "
                f"SPACE_TO_BATCH_ND's blocks {list(layout.factors[1:-1])} into its output's {list(out_shape)}")
        _same_quantization(converter, data, output, "BATCH_TO_SPACE_ND")
        expr = converter.get_tensor_expr(data)
        if not any(cuts):
            return expr
        return relax.op.strided_slice(expr, axes=list(range(1, spatial + 1)), begin=cuts[0::2],
                                      end=[size - cut for size, cut in zip(ours[1:-1], cuts[1::2])])


def _shape(converter, tensor) -> tuple[int, ...]:
    return tuple(int(d) for d in converter.get_tensor_shape(tensor))


def _ints(converter, tensor) -> list[int]:
    """A constant operand's values, flattened (block shapes, paddings and crops are int32 constants)."""
    return [int(v) for v in np.asarray(converter.get_tensor_value(tensor)).reshape(-1)]


def _same_quantization(converter, data, output, name: str) -> None:
    """TFLite Micro's SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND copy stored values: in and out alike."""
    if bool(data.qnn_params) != bool(output.qnn_params) or (
            data.qnn_params and not converter.has_same_qnn_params(data, output)):
        raise DilatedConvolutionRefused(f"{name} whose input and output are quantized differently")
