"""Our Relax passes, each an ordinary `tvm.transform` pass that users can put into their own pipelines."""

from tvm_ext.transform.contiguous_views import ContiguousCopiesAsViews
from tvm_ext.transform.dequantize_weights_in_kernels import DequantizeWeightsInKernels
from tvm_ext.transform.drop_empty_concat_pieces import DropEmptyConcatPieces
from tvm_ext.transform.fold_lookups import FoldLookupsIntoHelpers
from tvm_ext.transform.fuse_keeping_layers import FuseOpsKeepingLayers
from tvm_ext.transform.joins_in_place import JoinsInPlace
from tvm_ext.transform.index_guards import GuardIndexOperands, IndexOutOfRangeError, ResolveIndexGuards
from tvm_ext.transform.layout_per_subgraph import ConvertLayoutPerSubgraph
from tvm_ext.transform.lower_quantized_to_integer import LowerQuantizedToInteger, UnsupportedOperatorError
from tvm_ext.transform.partition_subgraphs import PartitionSubgraphs
from tvm_ext.transform.refuse_data_dependent_loops import DataDependentLoopError, RefuseDataDependentLoops
from tvm_ext.transform.refuse_oversized_tensors import OversizedTensorError, RefuseOversizedTensors
from tvm_ext.transform.split_as_slices import SplitAsSlices

__all__ = [
    "ContiguousCopiesAsViews",
    "ConvertLayoutPerSubgraph",
    "DataDependentLoopError",
    "DequantizeWeightsInKernels",
    "DropEmptyConcatPieces",
    "FoldLookupsIntoHelpers",
    "FuseOpsKeepingLayers",
    "GuardIndexOperands",
    "IndexOutOfRangeError",
    "JoinsInPlace",
    "LowerQuantizedToInteger",
    "OversizedTensorError",
    "PartitionSubgraphs",
    "RefuseDataDependentLoops",
    "RefuseOversizedTensors",
    "ResolveIndexGuards",
    "SplitAsSlices",
    "UnsupportedOperatorError",
]
