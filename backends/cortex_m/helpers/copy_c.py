"""The bundle's ascending copy helper: `<prefix>_copy_ascending`, `static inline` C in `<model>_internal.h`,
called where a kernel copies a run of elements in ascending order (`backends.cortex_m.schedules.extern_helpers`: the SVDF state
update moving its memory one step left, in place).

It copies ``count`` elements of ``element_bytes`` bytes from ``src`` to ``dst`` as the loop
``for (i = 0; i < count; ++i) dst[i] = src[i]`` does whenever ``dst <= src`` or the two runs do not overlap
(both cases of its callers; a ``dst`` inside ``src``'s run above ``src`` is not one). Where the compiler
defines `__ARM_FEATURE_UNALIGNED` (Armv7-M, Armv8-M Mainline) it moves 16 bytes per iteration as four
unaligned word loads, then four word stores: every byte is read before any lower byte of a later read is
written, so an overlapping ``dst`` below ``src`` sees the old values. The remaining bytes (all of them
elsewhere) one at a time.
"""

from __future__ import annotations


def copy_helper_name(prefix: str) -> str:
    """The C name of the helper in the bundle `prefix`."""
    return f"{prefix}_copy_ascending"


def copy_helper_c(prefix: str) -> str:
    """The C definition of the helper for the bundle `prefix` (it includes <string.h> for memcpy)."""
    return f"""#include <string.h> /* memcpy: one unaligned word load or store */

/* dst[i] = src[i] for i < count elements of element_bytes bytes, in ascending order (dst <= src, or runs
   that do not overlap). */
static inline int32_t {copy_helper_name(prefix)}(void *dst, const void *src, int32_t count, int32_t element_bytes)
{{
    uint8_t *to = (uint8_t *)dst;
    const uint8_t *from = (const uint8_t *)src;
    const int32_t bytes = count * element_bytes;
    int32_t i = 0;
#if defined(__ARM_FEATURE_UNALIGNED)
    for (; i + 16 <= bytes; i += 16) {{
        uint32_t w0, w1, w2, w3;
        memcpy(&w0, from + i, 4);
        memcpy(&w1, from + i + 4, 4);
        memcpy(&w2, from + i + 8, 4);
        memcpy(&w3, from + i + 12, 4);
        memcpy(to + i, &w0, 4);
        memcpy(to + i + 4, &w1, 4);
        memcpy(to + i + 8, &w2, 4);
        memcpy(to + i + 12, &w3, 4);
    }}
#endif
    for (; i < bytes; ++i) {{
        to[i] = from[i];
    }}
    return 0;
}}
"""
