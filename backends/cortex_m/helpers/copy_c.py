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

The C is hand-written: `templates/copy_ascending.h.in` (`${prefix}` the bundle's prefix), unit-tested on the
host with and without the word copies by `tests/c/test_copy_ascending.c` (`tests/test_copy_ascending_c.py`).
"""

from __future__ import annotations

from string import Template

from packager.template_files import template_text


def copy_helper_name(prefix: str) -> str:
    """The C name of the helper in the bundle `prefix`."""
    return f"{prefix}_copy_ascending"


def copy_helper_c(prefix: str) -> str:
    """The C definition of the helper for the bundle `prefix` (it includes <string.h> for memcpy)."""
    return Template(template_text("backends.cortex_m.helpers", "copy_ascending.h.in")).substitute(prefix=prefix)
