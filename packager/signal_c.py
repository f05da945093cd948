"""The bundle's signal-library helpers: TFLite Micro's signal operators as hand-written C99
(`packager/templates/lp_signal_*.h`, `static inline`, unit-tested by tests/c/test_signal_helpers.c), copied
into `<model>_internal.h` when a kernel calls one (`tvm_ext.kernels.signal` names the calls).

Their names start with `lp_`, which no bundle prefix may (`packager.bundle_prefix.c_identifier`), and they have
internal linkage: two bundles in one program never share a symbol through them.
"""

from __future__ import annotations

from collections.abc import Iterable

from packager.template_files import template_text

# Each helper file, in the order a header defines them (a file may call those before it).
BITS_FILE = "lp_signal_bits.h"
SPECTRUM_FILE = "lp_signal_spectrum.h"
FFT_FILE = "lp_signal_fft.h"
STREAM_FILE = "lp_signal_stream.h"
_FILE_ORDER = (BITS_FILE, SPECTRUM_FILE, FFT_FILE, STREAM_FILE)
_NEEDS = {SPECTRUM_FILE: (BITS_FILE,), FFT_FILE: (BITS_FILE,), STREAM_FILE: ()}

# The file defining each C helper a kernel may call.
HELPER_FILES: dict[str, str] = {
    **dict.fromkeys(("lp_signal_window_s16", "lp_signal_fft_auto_scale_s16", "lp_signal_energy_s16",
                     "lp_signal_filter_bank", "lp_signal_filter_bank_sqrt", "lp_signal_spectral_subtraction",
                     "lp_signal_pcan", "lp_signal_filter_bank_log"), SPECTRUM_FILE),
    **dict.fromkeys(("lp_signal_rfft_s16", "lp_signal_rfft_s32", "lp_signal_rfft_f32", "lp_signal_irfft_s16",
                     "lp_signal_irfft_s32", "lp_signal_irfft_f32"), FFT_FILE),
    **dict.fromkeys(("lp_signal_delay_s16", "lp_signal_overlap_add_s16", "lp_signal_overlap_add_f32",
                     "lp_signal_framer_s16", "lp_signal_stacker_s16"), STREAM_FILE),
}


def signal_helper_files(helpers: Iterable[str]) -> tuple[str, ...]:
    """The helper files that define `helpers` (C names of HELPER_FILES) and what they call, in order."""
    wanted = {HELPER_FILES[helper] for helper in helpers}
    wanted.update(*(_NEEDS[name] for name in tuple(wanted)))
    return tuple(name for name in _FILE_ORDER if name in wanted)


def signal_helpers_c(helpers: Iterable[str]) -> str:
    """The C text defining `helpers` (and what they call), for the internal header; "" for none."""
    return "\n".join(template_text("packager", name) for name in signal_helper_files(helpers))
