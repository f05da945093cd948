"""TVM math intrinsics lowered to C: to the C99 <math.h> function TVM 0.27 gives none for, and, in a bundle's C,
the float transcendentals to the bundle's own portable helpers instead of the C library's.

TVM 0.27 registers `default.FLowerIntrinsic` for `tirx.exp`, `tirx.sqrt`, ... but not for `tirx.fabs`, which
its own lowerings emit: `relax.abs` of a float, `isfinite`/`isinf` (ONNX Cast from float to an integer, IsInf),
Softsign, ReduceL1. Without a rule the call reaches TVM's C printer unresolved and the compile fails. Each
intrinsic of `C99_FUNCTIONS` becomes a call of the C99 function of its type (`fabsf` for float32, `fabs` for
float64): exact, as the reference runtimes compute it, and in libm, which every bundle links.

TVM's own rules make `tirx.exp` of a float32 `expf` (also inside its sigmoid, `1 / (1 + exp(-x))`), `tirx.log`
`logf`, `tirx.tanh` `tanhf` and `tirx.erf` `erff`: the C library's, whose last bit differs between libraries
(glibc on the host, newlib or picolibc on the boards), so the same float bundle gave different bytes on
different targets (SOFTMAX, LOGISTIC, ELU, LOG, LOG_SOFTMAX, TANH, GELU and a float LSTM's or GRU's cell
activations). In C generated for a bundle
(inside `tvm_ext.kernels.fixed_point.calls_to_c_helpers`) each intrinsic of `PORTABLE_FUNCTIONS` of a float32 is
a call of the bundle's helper instead (`packager.fixed_point_c.FLOAT_MATH_HELPERS`: within 1 ULP, tanhf 1.5, the
same bits on every core); of a float64, and in a user's C build of our kernels (no helper defined there), TVM's
rule: the C library's function.

`tirx.pow` with a constant exponent of 0, 1, 2 or -1 (ONNX Pow(x, 2) of a layer normalization's variance, TFLite
POW by a constant) is the one operation whose IEEE result is pow's correctly rounded one (`EXACT_POWERS`: 1, x,
x * x, 1 / x): the same bits on every core and at every optimization level. GCC folds powf(x, 2.0f) into x * x
when it optimizes, but a -O0 (debug) build calls the C library's, and glibc's powf(x, 2) is not x * x, the
correctly rounded square, for 763,686 of the 1,056,964,609 floats from 2^-63 to 2^63 (newlib's and picolibc's are, on
every 4099th); any other exponent is the C library's powf (or pow).

`register_libm_lowerings()` registers the rules on TVM's `c` target kind (the kind every profile's target has);
tvm_ext.codegen.codegen_c calls it once, when it is imported.
"""

from __future__ import annotations

from collections.abc import Callable

from tvm import tirx

from packager.fixed_point_c import ERFF, EXPF, LOGF, TANHF
from tvm_ext.kernels.fixed_point import bundle_helper_call

C99_FUNCTIONS = {"tirx.fabs": "fabs"}
"""TVM intrinsic -> the C99 function that computes it on a double; the float variant has the suffix `f`."""

PORTABLE_FUNCTIONS = {"tirx.exp": EXPF, "tirx.log": LOGF, "tirx.tanh": TANHF, "tirx.erf": ERFF}
"""TVM intrinsic -> the bundle's float32 helper that computes it (named as the C99 function it replaces)."""

_SUFFIX_OF_DTYPE = {"float32": "f", "float64": ""}

EXACT_POWERS: dict[float, Callable[[tirx.PrimExpr], tirx.PrimExpr]] = {
    0.0: lambda x: tirx.const(1.0, x.ty.dtype), 1.0: lambda x: x, 2.0: lambda x: x * x,
    -1.0: lambda x: tirx.const(1.0, x.ty.dtype) / x}
"""A constant exponent -> pow(x, exponent) as one IEEE operation (or none), which rounds correctly as pow's
result must (C99 Annex F too: pow(x, 0) is 1 even for a NaN x, pow(+-0, -1) is +-inf, pow(-0, 2) is +0)."""


def _lowering(function: str):
    def to_c(call: tirx.Call) -> tirx.PrimExpr:
        dtype = str(call.ty.dtype)
        if dtype not in _SUFFIX_OF_DTYPE:
            raise TypeError(f"tvm_ext.codegen.libm_lowering: {call.op.name} of {dtype} has no C99 function")
        return tirx.call_pure_extern(dtype, function + _SUFFIX_OF_DTYPE[dtype], *call.args)

    return to_c


def _portable_lowering(helper: str, library_function: str):
    """`tirx.<library_function>` of a float32 as the bundle's `helper` in a bundle's C, else the C library's."""
    library = _lowering(library_function)

    def to_c(call: tirx.Call) -> tirx.PrimExpr:
        helper_call = bundle_helper_call(helper, call) if str(call.ty.dtype) == "float32" else None
        return library(call) if helper_call is None else helper_call

    return to_c


def _power_lowering(call: tirx.Call) -> tirx.PrimExpr:
    """`tirx.pow(x, exponent)`: `EXACT_POWERS`' operation for a constant exponent it lists, else the C library's."""
    exponent = call.args[1]
    if isinstance(exponent, tirx.FloatImm) and float(exponent.value) in EXACT_POWERS:
        return EXACT_POWERS[float(exponent.value)](call.args[0])
    return _lowering("pow")(call)


def register_libm_lowerings() -> None:
    """Register each rule of `C99_FUNCTIONS` and `PORTABLE_FUNCTIONS`, and pow's, for TVM's `c` target kind (again:
    replaces the earlier one)."""
    tirx.register_intrin_lowering("tirx.pow", "c", f=_power_lowering, level=99)
    for intrinsic, function in C99_FUNCTIONS.items():
        tirx.register_intrin_lowering(intrinsic, "c", f=_lowering(function), level=99)
    for intrinsic, helper in PORTABLE_FUNCTIONS.items():
        tirx.register_intrin_lowering(intrinsic, "c", f=_portable_lowering(helper, intrinsic.split(".")[1]),
                                      level=99)
