"""The packager replaces each bundle file whole (packager.files.replace_file): the library's sources are
already being compiled when the packager writes them again (tvm_ext.compile.early_objects), and a file
truncated and rewritten in place let a compiler read part of it: an object without its symbols that linked
into `undefined reference` errors, once in about 40 compiles of a small model on a loaded machine."""

from __future__ import annotations

import os

from packager.files import replace_file
from packager.build import first_error


def test_a_reader_of_the_old_file_reads_all_of_it(tmp_path):
    path = tmp_path / "m_weights.c"
    path.write_text("const int m_l0_weights[2] = {1, 2};\n")
    with path.open() as reader:  # a compiler that has opened the source and not read it yet
        replace_file(path, "const int m_l0_weights[2] = {3, 4};\n")
        assert reader.read() == "const int m_l0_weights[2] = {1, 2};\n"
    assert path.read_text() == "const int m_l0_weights[2] = {3, 4};\n"
    assert [p.name for p in tmp_path.iterdir()] == ["m_weights.c"]  # no temporary file left


def test_a_replaced_file_has_the_mode_a_written_one_has(tmp_path):
    written, replaced = tmp_path / "written.c", tmp_path / "replaced.c"
    written.write_text("x")
    replace_file(replaced, "x")
    assert os.stat(replaced).st_mode == os.stat(written).st_mode


def test_a_link_error_names_the_missing_symbol_not_the_linker_driver():
    stderr = ("/usr/bin/ld: libm.a(m_model.o): in function `m_run_with_arena':\n"
              "m_model.c:(.text+0x91): undefined reference to `m_conv_2d_3x3_9x9x3'\n"
              "collect2: error: ld returned 1 exit status\n"
              "make: *** [Makefile:25: selftest] Error 1\n")
    assert first_error(stderr) == "m_model.c:(.text+0x91): undefined reference to `m_conv_2d_3x3_9x9x3'"


def test_a_compiler_error_is_the_first_error_line():
    stderr = ("m_kernels.c: In function 'm_kernel':\n"
              "m_kernels.c:3:7: error: unused variable 'x' [-Werror=unused-variable]\n"
              "make: *** [Makefile:12: m_kernels.o] Error 1\n")
    assert first_error(stderr) == "m_kernels.c:3:7: error: unused variable 'x' [-Werror=unused-variable]"
