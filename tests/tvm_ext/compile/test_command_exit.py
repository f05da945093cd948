"""The command ends as soon as the bundle is in place: by `os._exit` with its code, after flushing its output,
not by Python's shutdown, whose teardown of TVM's modules and objects the user would wait for (about 0.8 CPU
seconds on this 2-core machine). Every child and temporary folder is gone by then (test_command_entry checks
the folders); what shows that the shutdown was skipped is an `atexit` handler that never runs."""

from __future__ import annotations

import subprocess
import sys

# Runs the command's entry (`run()`, as `python -m tvm_ext.compile` does) with an atexit handler registered
# first: the handler would print a line if Python's shutdown ran.
_ENTRY_WITH_ATEXIT = """
import atexit, sys
atexit.register(lambda: print("python shutdown ran", flush=True))
sys.argv = ["tvm_ext.compile", *sys.argv[1:]]
from tvm_ext.compile.__main__ import run
run()
"""


def test_a_successful_compile_ends_without_pythons_shutdown_and_with_its_output(tmp_path):
    proc = subprocess.run([sys.executable, "-c", _ENTRY_WITH_ATEXIT, "--example", "--jobs", "1",
                           "-o", str(tmp_path / "out")], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "python shutdown ran" not in proc.stdout
    assert proc.stdout.splitlines()[-1].startswith("[tvm_ext] example_kws_cnn: arena "), proc.stdout
    assert (tmp_path / "out" / "libexample_kws_cnn.a").is_file()


def test_a_failing_compile_ends_with_its_code_and_one_line(tmp_path):
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"not a model at all")
    proc = subprocess.run([sys.executable, "-c", _ENTRY_WITH_ATEXIT, str(bad), "-o", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("tvm_ext.compile: error: bad.tflite: ")
    assert not (tmp_path / "out").exists()
