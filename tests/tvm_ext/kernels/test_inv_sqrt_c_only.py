"""L2_NORMALIZATION's inverse-sqrt multiplier operator (tvm_ext.inv_sqrt_multiplier) is implemented only by the
bundle's C helper: lowering it for llvm, or in C outside a bundle, is refused at once with one message naming
the operator (its former TIR arithmetic did not finish an llvm build in 12 minutes, nor a C build in 8). Bundles
are unchanged: test_l2_softmax_helpers.py checks the kernel's helper call and test_int8_misc_ops.py its
bit-exactness."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tvm_ext.kernels.l2_normalization import INV_SQRT_MULTIPLIER_OP

REFUSAL = f"operator {INV_SQRT_MULTIPLIER_OP} is implemented only by the C code generation of a bundle"

# A build of one call, in its own process, so that a lowering that never ends fails this test (timeout)
# rather than hangs the suite.
_BUILD = """
import sys
import tvm
from tvm import te, tirx
from tvm_ext.kernels.l2_normalization import INV_SQRT_MULTIPLIER_OP
data = te.placeholder((4,), "int32", name="data")
result = te.compute(data.shape, lambda i: tirx.call_intrin("int32", INV_SQRT_MULTIPLIER_OP, data[i]))
tvm.tirx.build(te.create_prim_func([data, result]), target=sys.argv[1])
"""
SECONDS_TO_REFUSE = 120  # mostly importing TVM on a busy machine; the refusal itself takes < 1 s


@pytest.mark.parametrize("target", ["llvm", "c"])
def test_a_build_outside_a_bundle_is_refused_at_once_naming_the_operator(target: str):
    try:
        run = subprocess.run([sys.executable, "-c", _BUILD, target], capture_output=True, text=True,
                             timeout=SECONDS_TO_REFUSE)
    except subprocess.TimeoutExpired:
        pytest.fail(f"a {target} build of {INV_SQRT_MULTIPLIER_OP} ran over {SECONDS_TO_REFUSE} s instead of refusing")
    assert run.returncode != 0 and REFUSAL in run.stderr, run.stderr[-2000:]
