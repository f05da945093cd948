"""The bundle's alignment macro (issue 32, item 7): `<MODEL>_ALIGNED(bytes)` starts the declaration of the static
arena and of each weight, where every compiler's form is valid, and a definition of the user's own comes first.

Each compiler's branch is checked by gcc's preprocessor with that compiler's predefined macros (`-undef` drops
gcc's own); a real bundle's library compiles with C11's `_Alignas` in the macro's place, which only the
declaration's start accepts."""

from __future__ import annotations

import subprocess

import pytest

from c_checks import STRICT_WARNINGS
from conftest import example_model
from packager.c_text import macro_prefix
from packager.internal_header import alignment_macro


@pytest.mark.parametrize("compiler_flags, expansion", [
    ((), "__attribute__((aligned(16))) static unsigned char arena[4];"),  # gcc itself
    (("-undef", "-D__clang__=1", "-D__ARMCC_VERSION=6190004"), "__attribute__((aligned(16))) static"),  # armclang
    (("-undef", "-D__ARMCC_VERSION=5060960"), "__align(16) static unsigned char arena[4];"),  # Arm Compiler 5
    (("-undef", "-std=c99", "-D__ICCARM__=1"), "#pragma data_alignment=16\n static unsigned char arena[4];"),
    (("-undef", "-std=c11"), "_Alignas(16) static unsigned char arena[4];"),  # any other C11 compiler
    (("-undef", "-std=c99"), " static unsigned char arena[4];"),  # the documented fallback: nothing
    (("-DM_ALIGNED(bytes)=MY_ALIGNED(bytes)",), "MY_ALIGNED(16) static unsigned char arena[4];"),  # the user's own
])
def test_each_compiler_gets_its_own_form_and_a_users_definition_wins(tmp_path, compiler_flags, expansion):
    source = tmp_path / "aligned.c"
    source.write_text("\n".join(alignment_macro("M", 16)) + "\nM_ALIGNED(16) static unsigned char arena[4];\n")
    text = subprocess.run(["gcc", "-E", "-P", *compiler_flags, str(source)], capture_output=True, text=True,
                          check=True).stdout
    assert expansion in "\n".join(line for line in text.splitlines() if line.strip() or line.startswith(" "))


def test_a_bundles_library_compiles_with_the_c11_form(compiled, tmp_path):
    bundle = compiled(example_model)
    macro = macro_prefix(bundle.plan.model)
    sources = [bundle.out_dir / f"{bundle.plan.model}_{part}.c" for part in ("kernels", "model", "weights")]
    for source in sources:
        subprocess.run(["gcc", "-std=c11", "-Wall", "-Wextra", *STRICT_WARNINGS.split(), "-pedantic-errors",
                        f"-D{macro}_ALIGNED(bytes)=_Alignas(bytes)", "-c", str(source), "-o",
                        str(tmp_path / f"{source.stem}.o")], check=True)
