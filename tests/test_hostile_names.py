"""No name in a model file ever becomes C code: models named to inject code compile, build under the strict
warnings and the sanitizers, pass their self-test, and the payload never runs; the escapers are exact and
the bundle's lexical check can fail."""

from __future__ import annotations

import itertools
import json
import subprocess
from pathlib import Path

import pytest
from c_checks import strict_sanitized_selftest
from fuzz_corpus import build_tflite
from hostile_names import HOSTILE_NAMES, colliding_onnx, hostile_tflite, payload_onnx, payload_tflite

from packager.c_lexical import UnsafeCError, check_c_text
from packager.c_text import c_string, comment
from tvm_ext.compile import compile
from tvm_ext.frontend import c_identifier

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
