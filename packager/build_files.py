"""`Makefile` and `CMakeLists.txt`: a static library and the self-test, with the target's compiler flags.

Every word from the profile (compiler, archiver, flags) is written through `packager.make_text` or
`packager.cmake_text`, never pasted: a profile is a shared file, and its text must not become make or CMake
syntax or a shell command.

`BuildConfig` is the one place a bundle's compiler flags are decided (from the target profile): the Makefile,
the CMakeLists.txt, the emulated self-test's build (the backend's `EmulatedRunner`) and the host check build
(`packager.build`) all take their flags from it, so what the emulator measures is compiled as what ships.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from backends.backend import EmulatedRunner
from packager.c_text import macro_prefix
from packager.cmake_text import cmake_argument, cmake_quoted
from packager.make_text import make_words
from packager.unit_libraries import UnitBuild, cmake_lines, kernel_sources, make_rules

C_STANDARD_FLAG = "-std=c99"
"""The bundle's C is C99 (CMake: CMAKE_C_STANDARD 99 without extensions)."""

HOST_PORTABLE_PREFIXES = ("-O", "-D", "-U", "-f", "-g")
"""Flags any GCC-compatible host compiler takes: optimisation, defines, code generation conventions, debug
info (not the machine-dependent `-m` flags or a cross compiler's own options)."""


@dataclass(frozen=True)
class BuildConfig:
    """How the bundle is compiled and linked, decided once from the target profile.

    `cflags` and `ldflags` are the profile's, in order; `compile_flags` is every flag a library source is
    compiled with (the emulated self-test adds only flags that do not change the code: see its runner's
    support files, e.g. `backends.cortex_m.bundle_files.support.COMPILE_FLAGS`).
    """

    cc: str = "cc"
    ar: str = "ar"
    cflags: tuple[str, ...] = ("-O2",)  # the target's code generation flags (-mcpu, -mfloat-abi, -O2, ...)
    ldflags: tuple[str, ...] = ()
    libs: tuple[str, ...] = ("-lm",)
    warnings: tuple[str, ...] = ("-Wall", "-Wextra")
    runs_on_host: bool = True  # the compiler makes host programs: `make all` also builds the self-test
    emulated: EmulatedRunner | None = None  # what runs the self-test on an emulated board (qemu-test), if any
    units: tuple[UnitBuild, ...] = ()  # the compute units' kernel libraries (packager.unit_libraries), if listed
    # the models of a bundle of several (packager.several), each with its own kernels and run function; empty: the
    # bundle is its one model
    members: tuple[str, ...] = ()
    # a one-model bundle's weights are the members of one struct, addressed from one base pointer in the run
    # function (packager.weights_block; Backend.weights_block)
    weights_block: bool = False

    @property
    def has_device_flags(self) -> bool:
        """Whether some profile flag is one a host compiler need not take (not HOST_PORTABLE_PREFIXES: `-mthumb`,
        `-mlongcalls`): the library then needs the profile's compiler, not any C compiler."""
        return not all(flag.startswith(HOST_PORTABLE_PREFIXES) for flag in self.cflags)

    @property
    def selftest_on_host(self) -> bool:
        """Whether the self-test runs on this machine's own core: built by a host compiler with no device flag
        (not on an emulated board, nor on the device of a cross compiler such as hifi4's xt-clang)."""
        return self.runs_on_host and not self.has_device_flags

    @property
    def language_and_cflags(self) -> tuple[str, ...]:
        """The Makefile's CFLAGS: the C standard, then the profile's flags."""
        return (C_STANDARD_FLAG, *self.cflags)

    @property
    def compile_flags(self) -> tuple[str, ...]:
        """Every flag the library's sources are compiled with: standard, profile flags, warnings."""
        return (*self.language_and_cflags, *self.warnings)

    def on_host(self) -> BuildConfig:
        """The same build for the host's `cc`, for profiles whose compiler makes no host programs: the
        profile's portable flags (HOST_PORTABLE_PREFIXES) and no device link flags."""
        portable = tuple(flag for flag in self.cflags if flag.startswith(HOST_PORTABLE_PREFIXES))
        return replace(self, cc="cc", ar="ar", cflags=portable, ldflags=(), runs_on_host=True, emulated=None)

    @property
    def selftest_make(self) -> tuple[str, str]:
        """The Makefile's self-test command and what it does, as the bundle's README and the --no-build message
        say it: on the emulated board (`make qemu-test`), else built and run by `make check`."""
        return ("make qemu-test", "runs it on QEMU") if self.emulated else ("make check", "builds and runs it")

    def make_variables(self) -> dict[str, tuple[str, ...]]:
        """The Makefile's tool and flag variables, each as its words (`packager.make_text` writes them)."""
        return {"CC": (self.cc,), "AR": (self.ar,), "CFLAGS": self.language_and_cflags, "LDFLAGS": self.ldflags}

    def commands(self) -> dict[str, str]:
        """The programs the build runs from this config, by what they are ("C compiler", "archiver", a unit's
        "<unit> unit's C compiler", the host check build's "host C compiler" and "host archiver")."""
        commands = {"C compiler": self.cc, "archiver": self.ar}
        commands |= {f"{unit.name} unit's C compiler": unit.cc for unit in self.units}
        if not self.runs_on_host and self.emulated is None:
            host = self.on_host()
            commands |= {"host C compiler": host.cc, "host archiver": host.ar}
        return commands


def sources(model: str, units: tuple[UnitBuild, ...] = (), members: tuple[str, ...] = ()) -> list[str]:
    """The library's C files: the bundle's kernels, run function and weights; for a bundle of several models
    (`members`), each member's kernels and run function, then the bundle's own `<model>_model.c` (its one static
    arena) and `<model>_weights.c` (every member's weights)."""
    if members:
        return [*(f"{member}{suffix}.c" for member in members for suffix in ("_kernels", "_model")),
                f"{model}_model.c", f"{model}_weights.c"]
    return [*kernel_sources(model, units), f"{model}_model.c", f"{model}_weights.c"]


def write_makefile(model: str, config: BuildConfig) -> str:
    srcs = " ".join(sources(model, config.units, config.members))
    lines = [
        f"# Builds lib{model}.a and the self-test. Generated by tvm_ext.",
        "# Override any variable on the command line, e.g. `make CC=clang`.",
        *(f"{name} = {make_words(words)}" for name, words in config.make_variables().items()),
        f"WARNINGS = {' '.join(config.warnings)}",
        "EXTRA_CFLAGS =",
        f"LDLIBS = {' '.join(config.libs)}",
        "",
        f"SRCS = {srcs}",
        "OBJS = $(SRCS:.c=.o)",
        "",
        ".PHONY: all lib check clean",
        f"all: lib{model}.a{' selftest' if config.runs_on_host else ''}",
        f"lib: lib{model}.a",
        "",
        "%.o: %.c",
        "\t$(CC) $(CFLAGS) $(WARNINGS) $(EXTRA_CFLAGS) -c -o $@ $<",
        "",
        *make_rules(model, config.units, C_STANDARD_FLAG),
        f"lib{model}.a: $(OBJS)",
        "\t$(AR) rcs $@ $^",
        "",
        f"selftest: selftest.c lib{model}.a",
        f"\t$(CC) $(CFLAGS) $(WARNINGS) $(EXTRA_CFLAGS) $(LDFLAGS) -o $@ selftest.c lib{model}.a $(LDLIBS)",
        "",
        "clean:",
        f"\trm -f $(OBJS) lib{model}.a selftest",
        "",
    ]
    if config.emulated:
        lines += config.emulated.makefile_lines()
    elif config.runs_on_host:
        lines += ["check: selftest", "\t./selftest", ""]
    return "\n".join(lines)


def write_cmakelists(model: str, config: BuildConfig) -> str:
    flags = " ".join(cmake_quoted(f) for f in (*config.cflags, *config.warnings))  # CMake adds -std=c99 itself
    return "\n".join(
        [
            f"# Builds the {model} static library and its self-test. Generated by tvm_ext.",
            "cmake_minimum_required(VERSION 3.13)",
            f"project({model} C)",
            "",
            "set(CMAKE_C_STANDARD 99)",
            "set(CMAKE_C_STANDARD_REQUIRED ON)",
            "set(CMAKE_C_EXTENSIONS OFF)",
            "",
            *_cmake_compiler_check(model, config),
            f"add_library({model} STATIC {' '.join(sources(model, config.units, config.members))})",
            *cmake_lines(model, config.units),
            f"target_include_directories({model} PUBLIC ${{CMAKE_CURRENT_SOURCE_DIR}})",
            f"target_compile_options({model} PRIVATE {flags})",
            "find_library(MATH_LIBRARY m)",
            "if(MATH_LIBRARY)",
            f"  target_link_libraries({model} PUBLIC ${{MATH_LIBRARY}})",
            "endif()",
            "",
            *_cmake_selftest(model, config, flags),
        ]
    )


def selftest_option(model: str) -> str:
    """The CMake option that builds the self-test into a project that adds the bundle with add_subdirectory."""
    return f"{macro_prefix(model)}_BUILD_SELFTEST"


def _cmake_selftest(model: str, config: BuildConfig, flags: str) -> list[str]:
    """The self-test's targets, only when the bundle is the top-level project or `selftest_option` is ON: a
    project that adds the bundle with add_subdirectory gets the library alone (no self-test program, test or
    qemu-test target of ours among its own)."""
    if config.emulated:
        lines = config.emulated.cmake_lines()
    elif config.runs_on_host:
        lines = [
            f"  add_executable({model}_selftest selftest.c)",
            f"  target_compile_options({model}_selftest PRIVATE {flags})",
            f"  target_link_libraries({model}_selftest PRIVATE {model})",
            "  enable_testing()",
            f"  add_test(NAME {model}_selftest COMMAND {model}_selftest)",
        ]
    else:
        return []
    option = selftest_option(model)
    return [
        "# The self-test: built when this bundle is the top-level project, or with -D" + option + "=ON in a",
        "# project that adds it with add_subdirectory (which otherwise gets the library alone).",
        f'option({option} "Build the {model} bundle\'s self-test in a project that adds it" OFF)',
        f"if(CMAKE_SOURCE_DIR STREQUAL CMAKE_CURRENT_SOURCE_DIR OR {option})",
        *lines,
        "endif()",
        "",
    ]


def _cmake_compiler_check(model: str, config: BuildConfig) -> list[str]:
    """For a profile with flags a host compiler need not take (`BuildConfig.has_device_flags`): a configure-time
    check that the C compiler takes the profile's flags, failing with one message
    that names what to configure with (the bundle's own toolchain file, where its runner ships one) instead of the
    compiler's first complaint at build time (`unrecognized command-line option '-mthumb'`). The check compiles
    a static library, as a bare-metal compiler links no program without a linker script."""
    if not config.has_device_flags:
        return []
    variable = f"{macro_prefix(model)}_COMPILER_TAKES_PROFILE_FLAGS"
    # try_compile writes CMAKE_REQUIRED_FLAGS into a CMake project of its own and splits it at spaces: only
    # words CMake and the shell read as themselves are checked (every flag the profile grammar accepts is one).
    flags = " ".join(flag for flag in config.cflags if cmake_argument(flag) == flag)
    toolchain = config.emulated.toolchain_file() if config.emulated is not None else None
    if toolchain is not None:
        before, after = (f"lib{model} is compiled for {config.emulated.name} ({flags}), flags the C compiler ",
                         " does not take: configure with -DCMAKE_TOOLCHAIN_FILE=")
        fix = ['"${CMAKE_CURRENT_SOURCE_DIR}"',
               cmake_quoted(f"/{toolchain} (the bundle's own toolchain file, {config.cc}) or a "
                            "toolchain file of yours for that core")]
    else:
        before, after = (f"lib{model} is compiled with {config.cc} ({flags}), and the C compiler ",
                         f" does not take these flags: configure with -DCMAKE_C_COMPILER={config.cc} or a "
                         "toolchain file for it")
        fix = []
    return [
        f"# lib{model} is compiled with the profile's flags: stop at configure time if the C compiler does not",
        "# take them (a Cortex-M bundle configured without its toolchain file), naming what to pass.",
        "include(CheckCSourceCompiles)",
        "include(CMakePushCheckState)",
        "cmake_push_check_state(RESET)",
        f"set(CMAKE_REQUIRED_FLAGS {cmake_quoted(flags)})",
        f"set({macro_prefix(model)}_SAVED_TRY_COMPILE_TARGET_TYPE \"${{CMAKE_TRY_COMPILE_TARGET_TYPE}}\")",
        "set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)",
        f'check_c_source_compiles("int lp_profile_flags_check(void) {{ return 0; }}" {variable})',
        f"set(CMAKE_TRY_COMPILE_TARGET_TYPE \"${{{macro_prefix(model)}_SAVED_TRY_COMPILE_TARGET_TYPE}}\")",
        "cmake_pop_check_state()",
        f"if(NOT {variable})",
        f'  message(FATAL_ERROR {cmake_quoted(before)} "${{CMAKE_C_COMPILER}}" {cmake_quoted(after)} {" ".join(fix)})',
        "endif()",
        "",
    ]
