"""TFLite's form of a dilated convolution its converter did not fold: SPACE_TO_BATCH_ND -> CONV_2D or
DEPTHWISE_CONV_2D -> BATCH_TO_SPACE_ND, with size-1 reshapes (EXPAND_DIMS, RESHAPE, SQUEEZE) between.

TensorFlow computes a convolution with dilation d as a stride-1 VALID convolution of the d**2 (or d, for
Conv1D) interleaved sub-images SPACE_TO_BATCH_ND cuts the padded input into, which BATCH_TO_SPACE_ND
interleaves again and crops; TF 2.21's TFLite converter keeps that form for every Keras Conv1D with
dilation_rate > 1 (padding "same" or "causal") and for Conv2D and DepthwiseConv2D where its own folding does not
match. This module finds the chains in the graph's structure alone (`tflite_reader` records: which operator
feeds which); the import (`tvm_ext/frontend/tflite_ops/dilated_convolution.py`) checks their constants and options
and converts each chain to one dilated convolution.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .tflite_reader import TfliteSubgraph

CONVOLUTIONS = frozenset({"CONV_2D", "DEPTHWISE_CONV_2D"})
SIZE_ONE_RESHAPES = frozenset({"EXPAND_DIMS", "RESHAPE", "SQUEEZE"})


@dataclass(frozen=True)
class DilatedConvolutionChain:
    """Operator indices of one chain, in graph order: `space_to_batch`, `before` (reshapes between it and the
    convolution), `convolution`, `after` (reshapes between the convolution and `batch_to_space`),
    `batch_to_space`."""

    space_to_batch: int
    before: tuple[int, ...]
    convolution: int
    after: tuple[int, ...]
    batch_to_space: int

    @property
    def operators(self) -> tuple[int, ...]:
        return (self.space_to_batch, *self.before, self.convolution, *self.after, self.batch_to_space)


def dilated_convolution_chains(graph: TfliteSubgraph, op_names: list[str]) -> tuple[DilatedConvolutionChain, ...]:
    """The chains in `graph` (`op_names[i]` is operator i's builtin name): from each SPACE_TO_BATCH_ND, the
    single reader of each output through size-one reshapes to one convolution, then through reshapes to a
    BATCH_TO_SPACE_ND. Every tensor inside a chain has that one reader and is not a model output (the chain's
    batched tensors exist in no other form after conversion)."""
    readers: dict[int, list[int]] = {}
    for op in graph.operators:
        for index in op.inputs:
            if index >= 0:
                readers.setdefault(index, []).append(op.index)
    outputs = set(graph.outputs)

    def single_reader(op_index: int) -> int | None:
        produced = graph.operators[op_index].outputs
        if len(produced) != 1 or produced[0] in outputs:
            return None
        ops = readers.get(produced[0], [])
        if len(ops) != 1 or graph.operators[ops[0]].inputs[:1] != produced:
            return None
        return ops[0]

    def walk(start: int, reshapes: frozenset[str], end: frozenset[str]) -> tuple[tuple[int, ...], int] | None:
        between: list[int] = []
        current = single_reader(start)
        while current is not None and op_names[current] in reshapes:
            between.append(current)
            current = single_reader(current)
        if current is None or op_names[current] not in end:
            return None
        return tuple(between), current

    chains = []
    for op in graph.operators:
        if op_names[op.index] != "SPACE_TO_BATCH_ND":
            continue
        to_convolution = walk(op.index, SIZE_ONE_RESHAPES, CONVOLUTIONS)
        if to_convolution is None:
            continue
        before, convolution = to_convolution
        to_batch_to_space = walk(convolution, SIZE_ONE_RESHAPES, frozenset({"BATCH_TO_SPACE_ND"}))
        if to_batch_to_space is None:
            continue
        after, batch_to_space = to_batch_to_space
        chains.append(DilatedConvolutionChain(op.index, before, convolution, after, batch_to_space))
    return tuple(chains)


def with_run_time_batches(data: bytes, root) -> bytes | None:
    """A copy of the TFLite file `data` (parsed: its `tflite.Model` table `root`) in which the tensors inside each
    chain have the batch they hold at run time (the product of the SPACE_TO_BATCH_ND's block sizes), or None when
    no tensor needs it.

    TF 2.21's converter writes their batch as 1 (dynamic in the shape signature). LiteRT resizes them when it
    runs; TFLite Micro sizes every tensor from the file alone, so on the file as written its convolution computes
    one of the sub-images and its BATCH_TO_SPACE_ND interleaves the others from memory nothing wrote. Given the
    run-time batches it computes the chain as TensorFlow does. A shape is an int32 vector in the flatbuffer:
    edited in place, nothing else in the file moves.
    """
    import tflite

    from .tflite_check import builtin_names
    from .tflite_reader import read_tflite

    names = builtin_names()
    flat = read_tflite("model", root, len(data))
    graph = flat.subgraphs[0]
    op_names = [names.get(flat.opcodes[op.opcode_index].builtin_code, "") for op in graph.operators]
    batches: dict[int, int] = {}  # tensor index -> its run-time batch
    for chain in dilated_convolution_chains(graph, op_names):
        block = graph.tensors[graph.operators[chain.space_to_batch].inputs[1]]
        batch = int(np.prod(np.frombuffer(flat.buffers[block.buffer].data, dtype="<i4")))
        for index in (chain.space_to_batch, *chain.before, chain.convolution, *chain.after):
            tensor = graph.operators[index].outputs[0]
            if graph.tensors[tensor].shape[:1] == (1,) and batch > 1:
                batches[tensor] = batch
    if not batches:
        return None
    edited = bytearray(data)
    tensors = tflite.Model.GetRootAsModel(edited, 0).Subgraphs(0)
    for tensor, batch in batches.items():
        tensors.Tensors(tensor).ShapeAsNumpy()[0] = batch
    return bytes(edited)
