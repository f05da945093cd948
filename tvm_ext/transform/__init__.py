"""Relax passes of tvm_ext (ordinary ``tvm.transform`` passes, usable in users' pipelines)."""

from .lower_quantized_to_integer import LowerQuantizedToInteger, UnsupportedOperatorError

__all__ = ["LowerQuantizedToInteger", "UnsupportedOperatorError"]
