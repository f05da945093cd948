"""The word ops of the int8 window sums on DSP cores without MVE (`tvm_ext.kernels.window_sums`: AVERAGE_POOL_2D,
MEAN and SUM of more than nine taps a window, four channels per word load): calls of the helpers of
`backends.cortex_m.helpers.pool_sums_c`, the word load and SXTAB16 into two 16-bit halves, given to the int8 lowering
as `backends.backend.KernelSchedules.int8_window_sums`.
"""

from __future__ import annotations

from backends.cortex_m.helpers.pool_sums_c import (POOL_SUMS_HELPERS, pool_pairs_name, pool_pairs_ror8_name,
                                                   pool_word_name)
from tvm_ext.tir.helper_access import Axis, HelperAccess, PointerAccess
from tvm_ext.tir.helper_calls import register_helper_call

POOL_WORD_OP = "tvm_ext.pool_word"
POOL_PAIRS_OP = "tvm_ext.pool_pairs"
POOL_PAIRS_ROR8_OP = "tvm_ext.pool_pairs_ror8"
# The word load (p): p[i] for i < 4, int8; the pairs take no pointer.
register_helper_call(POOL_WORD_OP, POOL_SUMS_HELPERS, pool_word_name, HelperAccess((PointerAccess(0, (Axis(4, 1),)),)))
register_helper_call(POOL_PAIRS_OP, POOL_SUMS_HELPERS, pool_pairs_name)
register_helper_call(POOL_PAIRS_ROR8_OP, POOL_SUMS_HELPERS, pool_pairs_ror8_name)

POOL_WORD_OPS = (POOL_WORD_OP, POOL_PAIRS_OP, POOL_PAIRS_ROR8_OP)
"""The ops, in the order `tvm_ext.kernels.window_sums.WordOps` takes them."""
