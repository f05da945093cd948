"""The bundle's C prefix, from the model file's stem: `<prefix>_run`, `<PREFIX>_ARENA_BYTES`, `<prefix>.h`.

The prefix names C identifiers and the bundle's files and build targets, so it must be neither a C or C++
keyword nor a reserved or bundle-internal identifier, `<prefix>.h` must not be a header that a build putting
the bundle's folder on the include path (`-I.`, the bundle's own Cortex-M build, or a user's `-I OUT`) finds
instead of the system's (nor `lib<prefix>.a` a library on a `-L OUT` link), the CMake target `<prefix>` must
not be one CMake reserves, and the longest file name it gives must stay within a file system's 255 bytes.
A stem that is fine stays as it is (its bundle unchanged); one that is not gets `model_` in front, as a C
keyword does, and a stem too long is cut.
"""

from __future__ import annotations

import re

from packager.c_lexical import INCLUDED_SYSTEM_HEADERS

# C99/C11/C23 keywords, and C++'s (the header is `extern "C"` for C++ callers).
_KEYWORDS = frozenset("""
    auto break case char const continue default do double else enum extern float for goto if inline int long
    register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while
    alignas alignof bool constexpr false nullptr static_assert thread_local true typeof typeof_unqual
    asm catch class const_cast delete dynamic_cast explicit export friend mutable namespace new noexcept operator
    private protected public reinterpret_cast template this throw try typeid typename using virtual
    main
""".split())
# Prefixes the bundle's names `<prefix>_...` and `<PREFIX>_...` must not start with: our own self-test and
# Cortex-M support names, and the names C reserves or keeps for its library (C23 7.33: int*_t, is*, to*,
# str*, mem*, wcs*, SIG*, LC_*, PRI*, SCN*, FE_*, FP_*, INT*/UINT* macros, threads and atomics).
# (E<upper> macros, kept for <errno.h>, are not listed: the bundle never includes <errno.h>.)
_RESERVED_PREFIX = re.compile(
    r"^(selftest|lp_|u?int|is[a-z]|to[a-z]|str[a-z]|mem[a-z]|wcs[a-z]|atomic_|cnd_|mtx_|thrd_|tss_"
    r"|sig|lc_|pri|scn|fe_|fp_|e[0-9])",
    re.IGNORECASE,
)
# Header names `<prefix>.h` must not take (compared without case: macOS and Windows file systems ignore it):
# every standard C header, C89 to C23; the system headers the bundle includes (arm_acle.h too, on DSP
# profiles, and arm_mve.h on Helium ones); and those that these pull in by a plain name on the C libraries it
# builds with (glibc's features.h, newlib's newlib.h, gcc's arm_mve_types.h;
# tests/tvm_ext/compile/test_hostile_names.py asks the installed compilers). The bundle's other header is
# `<prefix>_internal.h`, a name no such header has.
HEADER_STEMS = frozenset("""
    assert complex ctype errno fenv float inttypes iso646 limits locale math setjmp signal stdalign stdarg
    stdatomic stdbit stdbool stdckdint stddef stdint stdio stdlib stdnoreturn string tgmath threads time uchar
    wchar wctype
    features newlib arm_mve_types
""".split()) | {header.removesuffix(".h") for header in INCLUDED_SYSTEM_HEADERS}
# Library names `lib<prefix>.a` must not take: the libraries a bundle links with (-lm) and those its compilers
# link by default (libc, newlib's libg and libnosys, librdimon, libgcc): a link with `-L OUT` takes the bundle's.
LIBRARY_STEMS = frozenset("m c g gcc nosys rdimon".split())
# CMake target names the bundle's CMakeLists.txt (`add_library(<prefix> ...)`) cannot take: CMake reserves them.
CMAKE_RESERVED_TARGETS = frozenset("all clean edit_cache help install package package_source preinstall "
                                   "rebuild_cache test".split())
_TAKEN_STEMS = HEADER_STEMS | LIBRARY_STEMS | CMAKE_RESERVED_TARGETS
# The longest prefix kept, in characters (ASCII: bytes). The longest file name a prefix gives is
# `.<prefix>_model_profiled.c.<12 hex digits>` (a file being written: packager.files.replace_file), 31 more;
# 128 leaves room below NAME_MAX (255 bytes) for a compute unit's name in `<prefix>_kernels_<unit>.c` too.
MAX_PREFIX_CHARS = 128
_FALLBACK_PREFIX = "model_"


def c_identifier(text: str) -> str:
    """`text` (a file name) made into the bundle's C prefix: non-alphanumerics become `_`; a prefix that is
    empty, starts with a digit, is a keyword, a name of HEADER_STEMS, LIBRARY_STEMS or CMAKE_RESERVED_TARGETS,
    or starts like a reserved or bundle-internal name gets `model_` in front; the result is cut to
    MAX_PREFIX_CHARS. So `<prefix>_run`, `<PREFIX>_ARENA_BYTES`, ... never hit a C or C++ keyword, a reserved
    identifier or a name the self-test uses, `<prefix>.h` and `lib<prefix>.a` never shadow a system header or
    library, the CMake target `<prefix>` is not reserved, and every file name of the bundle can be created."""
    ident = re.sub(r"[^0-9A-Za-z_]", "_", text).strip("_")
    if (not ident or ident[0].isdigit() or ident.lower() in _KEYWORDS | _TAKEN_STEMS
            or _RESERVED_PREFIX.match(ident)):
        ident = f"{_FALLBACK_PREFIX}{ident}"
    return ident[:MAX_PREFIX_CHARS].rstrip("_")


def checked_prefix(name: str) -> str:
    """`name` if it is usable as the bundle's C prefix as given (`c_identifier` keeps it), for a prefix the user
    chooses (`--name`); ValueError saying why not and what would be."""
    if c_identifier(name) != name:
        raise ValueError(f"{name!r} is not usable as the bundle's C prefix: it must be a C identifier (ASCII "
                         f"letters, digits, '_', not first a digit) of at most {MAX_PREFIX_CHARS} characters that is "
                         "no C or C++ keyword, reserved name, system header, library or CMake target name "
                         f"(try {c_identifier(name)!r})")
    return name
