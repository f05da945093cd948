"""No name in a model file ever becomes C code: models named to inject code compile, build under the strict
warnings and the sanitizers, pass their self-test, and the payload never runs; the escapers are exact and
the bundle's lexical check can fail. No name reaches a terminal, report.md, memory_plan.svg or report.html unescaped,
forges a second error line, or names a bundle file after a system header; and neither a long file name nor
a path that is not UTF-8 stops a compile."""

from __future__ import annotations

import importlib
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from types import SimpleNamespace

import pytest
from c_checks import strict_sanitized_selftest
from conftest import REPO
from fuzz_corpus import build_tflite
from html_tree import external_references, parse_html
from hostile_names import (FORGED_LINE, HOSTILE_NAMES, MARKUP_NAMES, TERMINAL_ESCAPES, colliding_onnx,
                           hostile_tflite, matmul_chain_onnx, payload_onnx, payload_tflite, runtime_refused_onnx,
                           unlowerable_softmax_tflite, relu_onnx)
from tflite_builder import build

from packager.c_lexical import UnsafeCError, check_c_text
from packager.c_text import c_string, comment
from printable import printable
import target
from tvm_ext.compile import compile
from tvm_ext.frontend import c_identifier
from packager.bundle_prefix import MAX_PREFIX_CHARS

MARKER = "PAYLOAD_RAN"
NASTY_TEXTS = (*HOSTILE_NAMES, "a\nb\r\tc\x00d", "*/", "/*", "?", "??", "*", "/", "caf\u00e9 \\xff", "%s%n")


def test_escaped_text_is_exact_in_a_string_and_inert_in_a_comment(tmp_path: Path) -> None:
    """gcc -std=c99 (trigraphs on) prints every literal back byte for byte; every comment stays one."""
    lines = ["#include <stdio.h>", "int main(void)", "{"]
    for text in NASTY_TEXTS:
        lines += [f"  /* {comment(text)} */", f"  fputs({c_string(text)}, stdout);", '  fputs("|", stdout);']
    lines += ["  return 0;", "}", ""]
    source = tmp_path / "escaped.c"
    source.write_text("\n".join(lines))
    for text in NASTY_TEXTS:
        assert comment(text).isascii() and comment(text).isprintable()
        assert not {"*/", "/*", "??"} & {comment(text)[i:i + 2] for i in range(len(comment(text)))}
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-o", str(tmp_path / "escaped"),
                    str(source)], check=True)
    printed = subprocess.run([str(tmp_path / "escaped")], capture_output=True, check=True).stdout
    # A NUL ends fputs's string: C strings stop there, as the name would in any C API.
    expected = b"".join(t.encode("utf-8").split(b"\x00")[0] + b"|" for t in NASTY_TEXTS)
    assert printed == expected


def test_comment_never_holds_a_delimiter_or_trigraph_for_any_short_text() -> None:
    """Every text of up to 5 characters over the dangerous alphabet, placed as our templates place it."""
    for length in range(1, 6):
        for chars in itertools.product("/*?=\\ a", repeat=length):
            inside = f"/* {comment(''.join(chars))} */"[2:-2]
            assert "*/" not in inside and "/*" not in inside and "??" not in inside, chars


def test_lexical_check_passes_our_c_and_fails_on_code_from_a_name() -> None:
    ours = '#include <stdint.h>\n/* a comment */\nconst char* s = "x\\"\\?\\101";\nint f(void) { return 1; }\n'
    check_c_text("ok.c", ours)
    for slipped in ('int a\n#include <stdlib.h>\n', "/* x /* y */", "int a; // tail\n", "s = \"??/\";",
                    "int b\\\nc;", "int caf\u00e9;", "int x; #define y\n", "/* unterminated"):
        with pytest.raises(UnsafeCError):
            check_c_text("bad.c", slipped)


@pytest.mark.parametrize("name, prefix", [("int", "model_int"), ("main", "model_main"), ("return", "model_return"),
                                          ("selftest", "model_selftest"), ("3d-net", "model_3d_net"),
                                          ("__", "model"), ("kws.v2", "kws_v2")])
def test_bundle_prefix_is_never_a_keyword_or_reserved(name: str, prefix: str) -> None:
    assert c_identifier(name) == prefix


def _compile_and_check(model: Path, tmp_path: Path):
    bundle = compile(model, "lowpower", tmp_path / "out")
    assert bundle.selftest.passed, bundle.selftest.output
    strict = strict_sanitized_selftest(tmp_path / "out", tmp_path / "strict")
    assert strict.returncode == 0 and "selftest: PASS" in strict.stdout, strict.stdout + strict.stderr
    return json.loads((tmp_path / "out" / "manifest.json").read_text())


@pytest.mark.parametrize("file_name", ["evil.onnx", "evil.tflite"])
def test_payload_in_an_input_name_never_runs(file_name: str, tmp_path: Path) -> None:
    """On the old code both models built, self-tested PASS and created the marker in the folder the
    self-test ran in (a relative path: TVM turns `-` and `.` in names into `_`, pytest's folders have them)."""
    model = tmp_path / file_name
    if file_name.endswith(".onnx"):
        model.write_bytes(payload_onnx("evil", MARKER))
    else:
        model.write_bytes(build_tflite(payload_tflite("evil", MARKER)))
    _compile_and_check(model, tmp_path)
    assert not list(tmp_path.rglob(MARKER))


def test_hostile_and_colliding_onnx_names_compile(tmp_path: Path) -> None:
    model = tmp_path / "int.onnx"  # a keyword as the file name too
    model.write_bytes(colliding_onnx().SerializeToString())
    manifest = _compile_and_check(model, tmp_path)
    layers = json.dumps(manifest)
    assert all(json.dumps(name)[1:-1] in layers for name in ("/* open", "what??/", "return"))
    header = (tmp_path / "out" / "model_int.h").read_text()
    assert "const float* input2;" in header and "float* output1;" in header


def test_hostile_and_non_utf8_tflite_names_compile(tmp_path: Path) -> None:
    """The weights' name is not UTF-8: TVM's converter decodes strictly and failed on it before."""
    model = tmp_path / "main.tflite"
    model.write_bytes(build_tflite(hostile_tflite()))
    manifest = _compile_and_check(model, tmp_path)
    assert json.dumps("out ??= \u00e9 return")[1:-1] in json.dumps(manifest)
    assert (tmp_path / "out" / "model_main.h").exists()  # `main` is a keyword-like prefix: made safe


# -- text from the model reaches the terminal, the report and the error line only escaped --------------------

ERROR_LINE = "tvm_ext.compile: error: "


def assert_one_printable_error_line(stderr: str, model_name: str) -> str:
    """`stderr` is one line, the error about `model_name`, with nothing a terminal acts on; return it."""
    lines = stderr.split("\n")
    assert len(lines) == 2 and lines[1] == "", stderr
    assert lines[0].isprintable(), repr(lines[0])
    assert lines[0].startswith(f"{ERROR_LINE}{model_name}: "), lines[0]
    return lines[0]


def test_a_runtime_error_quoting_a_node_name_reaches_stderr_escaped(tmp_path: Path, cli_in_process) -> None:
    """onnxruntime refuses the int16 Relu quoting the node's name; the old line carried its ESC, OSC, BEL and
    right-to-left override to the terminal as they were."""
    model = tmp_path / "relu16.onnx"
    model.write_bytes(runtime_refused_onnx(f"n{TERMINAL_ESCAPES}"))
    done = cli_in_process(str(model), "-o", str(tmp_path / "out"))
    assert done.returncode == 2, done.stderr
    line = assert_one_printable_error_line(done.stderr, model.name)
    assert "onnxruntime" in line and printable(f"n{TERMINAL_ESCAPES}"[:20]) in line, line


def test_a_layer_name_with_a_line_break_cannot_forge_the_error_line(tmp_path: Path, cli_in_process) -> None:
    """The int16 lowering refuses the layer, naming it; the old line kept only the text after the name's line
    break: `error: model.tflite: compiled, nothing wrong here ...`, about another file."""
    model = tmp_path / "softmax16.tflite"
    model.write_bytes(build(unlowerable_softmax_tflite(f"out{FORGED_LINE}")))
    done = cli_in_process(str(model), "-o", str(tmp_path / "out"))
    assert done.returncode == 2, done.stderr
    line = assert_one_printable_error_line(done.stderr, model.name)
    assert printable(f"out{FORGED_LINE}") in line and "SOFTMAX" in line, line


def test_report_svg_and_manifest_hold_any_name(tmp_path: Path) -> None:
    """Names holding markup, NUL, ESC, line breaks and a noncharacter: memory_plan.svg parses as XML and shows
    each name escaped, report.md has no control character and each name escaped for Markdown, the manifest is
    strict JSON holding the names exactly. (The old report held the NUL and ESC bytes raw; the old SVG did not
    parse.)"""
    model = tmp_path / "names.onnx"
    model.write_bytes(matmul_chain_onnx(MARKUP_NAMES))
    bundle = compile(model, "lowpower", tmp_path / "out")
    svg_text = "".join(ElementTree.parse(bundle.out_dir / "memory_plan.svg").getroot().itertext())
    assert printable(MARKUP_NAMES[0]) in svg_text and printable(MARKUP_NAMES[1]) in svg_text, svg_text
    report = (bundle.out_dir / "report.md").read_text()
    assert all(char.isprintable() or char == "\n" for char in report), [c for c in report if not c.isprintable()]
    table_rows = [line for line in report.splitlines() if line.startswith("| ")]
    for name in MARKUP_NAMES:
        cell = "".join(f"\\{char}" if char in "\\`*_{}[]<>()#+-.!|~&$" else char for char in printable(name))
        assert any(cell in row for row in table_rows), (cell, table_rows)
    manifest = json.loads((bundle.out_dir / "manifest.json").read_text(), strict=True)
    layers = {layer["name"] for call in manifest["layer_report"]["calls"] for layer in call["layers"]}
    assert layers == set(MARKUP_NAMES)


SCRIPT_NAMES = ("<script>alert(1)</script>", "\"><img src=x onerror=alert(1)>", "</td></tr></table><u>x")


def test_report_html_shows_markup_names_as_text(tmp_path: Path) -> None:
    """Layers named as HTML (a script, an attribute break with an image, closing tags): report.html shows each
    name as text, escaped by our own escaping, in the layer table and the memory plan's tooltips, and holds no
    element or reference any name could have made."""
    model = tmp_path / "names.onnx"
    model.write_bytes(matmul_chain_onnx(SCRIPT_NAMES))
    bundle = compile(model, "lowpower", tmp_path / "out")
    text = (bundle.out_dir / "report.html").read_text(encoding="utf-8")
    assert "<script" not in text and "<img" not in text and "<u>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    root = parse_html(text)
    assert external_references(root) == [] and not list(root.iter("u")) and len(list(root.iter("table"))) == 3
    rows = [row.text() for row in root.find_id("layer-table").iter("tr")]
    titles = [title.text() for title in root.iter("title")]
    for name in SCRIPT_NAMES:
        assert any(name in row for row in rows), (name, rows)
    for name in SCRIPT_NAMES[:-1]:  # the last layer writes the output, which is not in the arena
        assert any(title.endswith(f"; {name} (MatMul)") for title in titles), (name, titles)


def a_bundle_in(out: Path) -> SimpleNamespace:
    """What the command prints a compiled bundle's summary from."""
    memory = SimpleNamespace(arena_bytes=0, lower_bound=0, optimal=True, strategy="exact")
    ram = target.RamUse(0, 0, 0, 0, 0, target.StackSource.MEASURED)
    flash = target.FlashUse.weights_only(0, target.FlashSource.WEIGHTS_ONLY)
    return SimpleNamespace(plan=SimpleNamespace(model="m", calls=[]), memory=memory, total_ram_bytes=0, ram=ram,
                           flash=flash, weight_bytes=0, selftest=SimpleNamespace(passed=True), out_dir=out)


@pytest.mark.parametrize("debug", [False, True])
def test_relayed_stderr_and_debug_tracebacks_are_printable(debug: bool, monkeypatch, capfd, tmp_path: Path) -> None:
    """What TVM or a library writes to stderr during a compile that succeeds is relayed after it, each line
    escaped (the old command copied it raw); under --debug (where TVM's own log goes to stderr as TVM writes
    it), an internal error's traceback is escaped too (the old one was printed raw)."""
    command = importlib.import_module("tvm_ext.compile.__main__")

    def compile_writing_to_stderr(model, target, out, **options):
        if debug:
            raise RuntimeError(f"internal {TERMINAL_ESCAPES}")
        os.write(2, f"warning: layer {TERMINAL_ESCAPES}\n".encode())
        return a_bundle_in(out)

    monkeypatch.setattr(command, "compile", compile_writing_to_stderr)
    code = command.main(["--example", "-o", str(tmp_path / "out"), *(["--debug"] if debug else [])])
    captured = capfd.readouterr()
    assert code == (3 if debug else 0), captured
    assert all(line.isprintable() for line in (captured.out + captured.err).split("\n")), captured
    if debug:
        assert "Traceback" in captured.err and captured.err.splitlines()[-1].startswith(
            f"tvm_ext.compile: internal error: RuntimeError: internal {printable(TERMINAL_ESCAPES)}"), captured.err
    else:
        assert captured.err.splitlines() == [f"warning: layer {printable(TERMINAL_ESCAPES)}"], captured.err


# -- the bundle's names: no system header, library or CMake target; any file name length ----------------------

# Every standard C header, C89 to C23 (C23 7.1.2).
C_STANDARD_HEADERS = """assert complex ctype errno fenv float inttypes iso646 limits locale math setjmp signal stdalign
    stdarg stdatomic stdbit stdbool stdckdint stddef stdint stdio stdlib stdnoreturn string tgmath threads time
    uchar wchar wctype""".split()


@pytest.mark.parametrize("stem", [*C_STANDARD_HEADERS, "STDINT", "Math", "arm_acle", "arm_mve", "m", "c", "gcc", "test",
                                  "all"])
def test_the_bundle_prefix_is_no_header_library_or_cmake_target_name(stem: str) -> None:
    """`<prefix>.h` would shadow the system header under `-I OUT`, `lib<prefix>.a` the library under `-L OUT`,
    and CMake refuses a reserved target name (`test` with testing enabled)."""
    assert c_identifier(stem) == f"model_{stem}"


@pytest.mark.parametrize("compiler", ["gcc", "arm-none-eabi-gcc"])
def test_no_bundle_header_shadows_a_header_the_bundles_includes_pull_in(compiler: str, tmp_path: Path) -> None:
    """Asks the compiler: every header that the headers the bundle includes (packager.c_lexical's list) read
    from a folder of the system's include path by a plain name is one a bundle prefix cannot name."""
    from packager.c_lexical import INCLUDED_SYSTEM_HEADERS

    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} is not installed")
    source = tmp_path / "includes.c"
    source.write_text("".join(f"#include <{header}>\n" for header in INCLUDED_SYSTEM_HEADERS
                              if not header.startswith("arm_") or compiler.startswith("arm")))
    cpu = ["-mcpu=cortex-m55", "-mfloat-abi=hard"] if compiler.startswith("arm") else []  # DSP and MVE: arm_mve.h
    search = subprocess.run([compiler, *cpu, "-xc", "-E", "-v", "/dev/null"], capture_output=True, text=True).stderr
    folders = {Path(line.strip()).resolve() for line in
               search.split("#include <...> search starts here:")[1].split("End of search list.")[0].splitlines()
               if line.strip()}
    read = subprocess.run([compiler, *cpu, "-std=c99", "-H", "-E", "-o", os.devnull, str(source)],
                          capture_output=True, text=True, check=True).stderr
    headers = {Path(line.lstrip(". ")).resolve() for line in read.splitlines() if line.startswith(".")}
    flat = {header.stem for header in headers if header.parent in folders}
    assert {"stdint", "stddef"} <= flat, flat
    takeable = {stem for stem in flat if re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", stem)}
    assert [stem for stem in takeable if c_identifier(stem) == stem] == []


@pytest.mark.parametrize("stem", ["stdint", "stddef"])
def test_a_model_named_after_a_standard_header_does_not_shadow_it(stem: str, tmp_path: Path) -> None:
    """A program built with `-I OUT` that includes the standard header and the bundle's: the old bundle's
    `stdint.h` was found instead of the system's (and included itself), so uint8_t was unknown."""
    model = tmp_path / f"{stem}.onnx"
    model.write_bytes(relu_onnx())
    bundle = compile(model, "lowpower", tmp_path / "out")
    header = next(p for p in bundle.out_dir.glob("*.h") if not p.name.endswith("_internal.h"))
    program = tmp_path / "app.c"
    program.write_text(f'#include <stdint.h>\n#include <stddef.h>\n#include "{header.name}"\n'
                       "uint32_t counter;\nsize_t length;\nint main(void) { return (int)(counter + length); }\n")
    built = subprocess.run(["gcc", "-std=c99", "-Wall", "-Werror", "-I", str(bundle.out_dir), "-c", str(program),
                            "-o", str(tmp_path / "app.o")], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    assert header.name == f"model_{stem}.h"


def test_a_model_file_stem_of_245_characters_compiles(tmp_path: Path) -> None:
    """The stem names the bundle's files (`.<stem>_model_profiled.c.<random>` while one is written); the old
    compile failed on "File name too long" with exit 3. The prefix is cut to MAX_PREFIX_CHARS."""
    model = tmp_path / ("a" * 245 + ".onnx")
    model.write_bytes(relu_onnx())
    bundle = compile(model, "lowpower", tmp_path / "out")
    assert bundle.selftest.passed and bundle.plan.model == "a" * MAX_PREFIX_CHARS


def test_paths_that_are_not_utf8_compile_and_print_escaped(tmp_path: Path) -> None:
    """A model file and an OUT whose names hold the byte 0xff, under a UTF-8 locale whose stdout refuses what
    is not UTF-8: the old compile blamed onnxruntime and LiteRT (given the path as text), or printed a
    traceback after the bundle was in place."""
    environment = {**os.environ, "LC_ALL": "C.UTF-8", "PYTHONIOENCODING": "utf-8:strict"}
    for name, data in ((b"relu\xff.onnx", relu_onnx()), (b"dense\xff.tflite", build_tflite(hostile_tflite()))):
        model = os.fsencode(tmp_path) + b"/" + name
        out = os.fsencode(tmp_path) + b"/out\xff" + name
        Path(os.fsdecode(model)).write_bytes(data)
        done = subprocess.run([sys.executable, "-m", "tvm_ext.compile", model, "-o", out], cwd=REPO,
                              capture_output=True, env=environment, timeout=900)
        assert done.returncode == 0, done.stderr.decode(errors="replace")
        assert done.stdout.decode("ascii").rstrip().endswith("out\\xff" + printable(name)), done.stdout
        manifest = json.loads(Path(os.fsdecode(out), "manifest.json").read_bytes().decode("ascii"))
        assert manifest["source"] == printable(name)
        assert f"Model {printable(name)}".replace("\\", "\\\\").replace(".", "\\.") in \
            Path(os.fsdecode(out), "report.md").read_text()
