"""The word ops of the int8 window sums on cores with the DSP extension, Helium's too (`tvm_ext.kernels.window_sums`: AVERAGE_POOL_2D,
MEAN and SUM of more than nine taps a window, four channels per word load): calls of the helpers of
`backends.cortex_m.helpers.pool_sums_c`, the word load and SXTAB16 into two 16-bit halves, the column sums' store
of those halves in channel order, the store of a block's four averages where a window has 2^shift taps, and the
rescaling of a half where it lies (SMLAWB, SMLAWT: a MEAN over few taps), given to
the int8 lowering as `backends.backend.KernelSchedules.int8_window_sums`.
"""

from __future__ import annotations

import functools

from backends.cortex_m.helpers.pool_sums_c import (POOL_AVERAGE_HELPERS, POOL_COLUMNS_HELPERS, POOL_SCALE_HELPERS,
                                                   POOL_SUMS_HELPERS, POOL_SUMS_OPS, SCALE_HIGH, SCALE_LOW,
                                                   STORE_AVERAGE, STORE_HALVES, pool_sums_helper_name)
from tvm_ext.tir.helper_access import Axis, HelperAccess, PointerAccess
from tvm_ext.tir.helper_calls import register_helper_call

# The word load (p): p[i] for i < 4, int8; the pairs take no pointer.
WORD_ACCESS = HelperAccess((PointerAccess(0, (Axis(4, 1),)),))
for _operation in POOL_SUMS_OPS:
    register_helper_call(f"tvm_ext.pool_{_operation}", POOL_SUMS_HELPERS,
                         functools.partial(pool_sums_helper_name, operation=_operation),
                         WORD_ACCESS if _operation == "word" else None)

# The halves' store (p, even, odd): p[i] for i < 4, int16; its own library.
register_helper_call(f"tvm_ext.pool_{STORE_HALVES}", POOL_COLUMNS_HELPERS,
                     functools.partial(pool_sums_helper_name, operation=STORE_HALVES), WORD_ACCESS)

# The packed averages' store (p, even, odd, shift): p[i] for i < 4, int8; its own library.
register_helper_call(f"tvm_ext.pool_{STORE_AVERAGE}", POOL_AVERAGE_HELPERS,
                     functools.partial(pool_sums_helper_name, operation=STORE_AVERAGE), WORD_ACCESS)

# The halves' rescaling (pairs, multiplier, addend): no pointer; its own library.
for _operation in (SCALE_LOW, SCALE_HIGH):
    register_helper_call(f"tvm_ext.pool_{_operation}", POOL_SCALE_HELPERS,
                         functools.partial(pool_sums_helper_name, operation=_operation))

POOL_WORD_OPS = tuple(f"tvm_ext.pool_{operation}" for operation in (*POOL_SUMS_OPS, STORE_HALVES, STORE_AVERAGE,
                                                                    SCALE_LOW, SCALE_HIGH))
"""The ops, in the order `tvm_ext.kernels.window_sums.WordOps` takes them."""
