"""TVM math intrinsics that TVM 0.27 gives no C lowering, lowered to their C99 <math.h> function.

TVM 0.27 registers `default.FLowerIntrinsic` for `tirx.exp`, `tirx.sqrt`, ... but not for `tirx.fabs`, which
its own lowerings emit: `relax.abs` of a float, `isfinite`/`isinf` (ONNX Cast from float to an integer, IsInf),
Softsign, ReduceL1. Without a rule the call reaches TVM's C printer unresolved and the compile fails. Each
intrinsic of `C99_FUNCTIONS` becomes a call of the C99 function of its type (`fabsf` for float32, `fabs` for
float64): exact, as the reference runtimes compute it, and in libm, which every bundle links.

`register_libm_lowerings()` registers the rules on TVM's `c` target kind (the kind every profile's target has);
tvm_ext.codegen.codegen_c calls it once, when it is imported.
"""

from __future__ import annotations

from tvm import tirx

C99_FUNCTIONS = {"tirx.fabs": "fabs"}
"""TVM intrinsic -> the C99 function that computes it on a double; the float variant has the suffix `f`."""

_SUFFIX_OF_DTYPE = {"float32": "f", "float64": ""}


def _lowering(function: str):
    def to_c(call: tirx.Call) -> tirx.PrimExpr:
        dtype = str(call.ty.dtype)
        if dtype not in _SUFFIX_OF_DTYPE:
            raise TypeError(f"tvm_ext.codegen.libm_lowering: {call.op.name} of {dtype} has no C99 function")
        return tirx.call_pure_extern(dtype, function + _SUFFIX_OF_DTYPE[dtype], *call.args)

    return to_c


def register_libm_lowerings() -> None:
    """Register each rule of `C99_FUNCTIONS` for TVM's `c` target kind (again: replaces the earlier one)."""
    for intrinsic, function in C99_FUNCTIONS.items():
        tirx.register_intrin_lowering(intrinsic, "c", f=_lowering(function), level=99)
