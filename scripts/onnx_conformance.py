"""ONNX's own backend node tests as the conformance suite of the ONNX path: compile, run, compare.

The tests come from the installed onnx package (`onnx.backend.test.case.node`: each test's model and its
input and expected output arrays; wheels since onnx 1.17 no longer ship them as `data/node/*.pb` files,
so they are written here into a temporary folder in that same layout, never into the repository).
`FAMILIES` selects the tests for small CNN/MLP inference by name prefix. Many tests pass an operand a real
model holds as a constant (Resize's scales and sizes, Pad's pads, Slice's starts and ends, Reshape's shape,
Squeeze's axes) as a graph input, a form the compiler refuses; each such test also runs a second time with those
inputs made initializers holding the test's values (`<name>__as_initializers`, counted in a table of its own).

Each test is compiled in its own process with the library API (`tvm_ext.compile`, target `lowpower` with 16 MiB
of SRAM: CONFORMANCE_PROFILE; which also runs the bundle's own self-test against onnxruntime), then the built
bundle is loaded as a shared library and run on the test's OWN inputs; its outputs are compared with the test's
expected outputs at the test's own tolerances (ONNX's `rtol`/`atol`; integers exactly). Outcome per test:

  match    built, and every output equals the expected one
  refused  a one-line CompileError (the model is at fault, or we lack the operator)
  crash    any other exception, a worker that died or timed out, an error of more than one line, or
           generated C that does not build
  wrong    built, but an output differs from the expected one

Prints a table per family and the totals and the wall time; exits 1 on any crash or wrong output.

    python scripts/onnx_conformance.py [-j 2] [-k SUBSTRING] [--family NAME ...] [--verbose]

Collecting the tests from the onnx package takes most of a minute (its generators compute every expected
output, 3-D pooling included), so a caller that runs the suite in parts writes them once
(`--write-tests DIR`) and runs each part on that folder (`--tests DIR --family NAME ...`).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

REPO = Path(__file__).resolve().parents[1]

# Operator family -> the node-test name prefixes it selects (a test belongs to the family of its longest
# matching prefix, so `test_matmulinteger` is not a `test_matmul`).
FAMILIES: dict[str, tuple[str, ...]] = {
    "conv": ("test_conv_", "test_basic_conv_"),
    "convtranspose": ("test_convtranspose",),
    "gemm": ("test_gemm_",),
    "matmul": ("test_matmul_",),
    "pooling": ("test_maxpool_", "test_averagepool_", "test_globalaveragepool", "test_globalmaxpool"),
    "activations": ("test_relu", "test_leakyrelu", "test_sigmoid", "test_tanh", "test_hardsigmoid",
                    "test_hardswish", "test_elu", "test_selu", "test_prelu", "test_softmax_"),
    "elementwise": ("test_add", "test_sub", "test_mul", "test_div"),
    "concat": ("test_concat_",),
    "transpose": ("test_transpose_",),
    "clip": ("test_clip",),
    "pad": ("test_constant_pad", "test_edge_pad", "test_reflect_pad"),
    "reshape": ("test_reshape_",),
    "flatten": ("test_flatten_",),
    "squeeze": ("test_squeeze", "test_unsqueeze"),
    "slice": ("test_slice",),
    "reduce_mean": ("test_reduce_mean_",),
    "resize": ("test_resize_",),
    "batchnorm": ("test_batchnorm_",),
    "quantize": ("test_quantizelinear", "test_dequantizelinear"),
    "qlinear": ("test_qlinearconv", "test_qlinearmatmul"),
    "integer": ("test_convinteger", "test_matmulinteger"),
    "indexing": ("test_gather_", "test_gathernd_", "test_scatter_", "test_scatternd", "test_onehot_"),
    "abs": ("test_abs",),
    "cast": ("test_cast_", "test_castlike_"),
    "recurrent": ("test_gru_", "test_lstm_", "test_simple_rnn_", "test_rnn_seq_length"),
}
# Tests a prefix catches that are not small-CNN inference: training-mode BatchNorm (extra outputs of running
# statistics), sequence/optional/string types, and number formats no microcontroller bundle has.
EXCLUDED_SUBSTRINGS = ("training_mode", "_bfloat16", "float16", "float8", "e4m3", "e5m2", "int4", "uint4",
                       "float4", "int2", "_expanded")
OUTCOMES = ("match", "refused", "crash", "wrong")
# A second pass: each test whose graph inputs give an operand a real model holds as a constant (Resize's scales,
# Pad's pads, Slice's starts, Reshape's shape, Squeeze's axes: tvm_ext.model_check.onnx_operands) once more, with
# those inputs made initializers holding the test's values. Its name is the test's plus this suffix.
AS_INITIALIZERS = "__as_initializers"
TEST_TIMEOUT_SECONDS = 900


@dataclass(frozen=True)
class Outcome:
    """One test's result: its family, outcome (one of OUTCOMES) and a one-line detail."""

    name: str
    family: str
    outcome: str
    detail: str


def family_of(name: str) -> str | None:
    """The family whose longest prefix starts `name`, or None when no prefix selects it or it is excluded."""
    if any(s in name for s in EXCLUDED_SUBSTRINGS):
        return None
    best = max(((len(p), fam) for fam, prefixes in FAMILIES.items() for p in prefixes if name.startswith(p)),
               default=None)
    return best[1] if best else None


def constant_operand_inputs(model) -> list[str]:
    """The graph inputs a node reads as an operand that must be known at compile time."""
    from tvm_ext.model_check.onnx_operands import COMPILE_TIME_OPERANDS

    inputs = {value.name for value in model.graph.input}
    return sorted({node.input[i] for node in model.graph.node if node.domain in ("", "ai.onnx")
                   for i in COMPILE_TIME_OPERANDS.get(node.op_type, {}) if i < len(node.input)
                   and node.input[i] in inputs})


def with_initializers(model, values: dict[str, np.ndarray]):
    """`model` with the graph inputs named in `values` made initializers holding them."""
    import onnx
    from onnx import numpy_helper

    result = onnx.ModelProto()
    result.CopyFrom(model)
    kept = [value for value in result.graph.input if value.name not in values]
    del result.graph.input[:]
    result.graph.input.extend(kept)
    result.graph.initializer.extend(numpy_helper.from_array(np.asarray(array), name) for name, array in values.items())
    return result


def _write_test(folder: Path, name: str, model, inputs: list, outputs: list, rtol: float, atol: float) -> None:
    from onnx import TensorProto, numpy_helper

    data = folder / name / "test_data_set_0"
    data.mkdir(parents=True)
    (folder / name / "model.onnx").write_bytes(model.SerializeToString())
    for kind, arrays in (("input", inputs), ("output", outputs)):
        for i, array in enumerate(arrays):
            tensor = array if isinstance(array, TensorProto) else numpy_helper.from_array(np.asarray(array))
            (data / f"{kind}_{i}.pb").write_bytes(tensor.SerializeToString())
    (folder / name / "tolerance.json").write_text(json.dumps({"rtol": rtol, "atol": atol}))


def write_tests(folder: Path, substring: str | None = None) -> dict[str, str]:
    """Write every selected node test as `folder/<name>/model.onnx` and `test_data_set_0/{input,output}_<i>.pb`
    plus `tolerance.json`, and its initializer variant (AS_INITIALIZERS) where it has one; return {name: family}."""
    import warnings

    from onnx import TensorProto, numpy_helper
    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the test generators' own numpy overflow warnings
        cases = node.collect_testcases(None)
    selected = {}
    for case in cases:
        family = family_of(case.name)
        if family is None or (substring and substring not in case.name):
            continue
        if not all(v.type.HasField("tensor_type") for v in case.model.graph.input):
            continue
        inputs, outputs = case.data_sets[0]
        _write_test(folder, case.name, case.model, inputs, outputs, case.rtol, case.atol)
        selected[case.name] = family
        constant = constant_operand_inputs(case.model)
        if constant:
            names = [value.name for value in case.model.graph.input]
            values = {name: np.asarray(array) for name, array in zip(names, inputs) if name in constant}
            rest = [array for name, array in zip(names, inputs) if name not in constant]
            _write_test(folder, case.name + AS_INITIALIZERS, with_initializers(case.model, values), rest, outputs,
                        case.rtol, case.atol)
            selected[case.name + AS_INITIALIZERS] = family
    return selected


def copy_written_tests(source: Path, folder: Path, wanted: Callable[[str, str], bool]) -> dict[str, str]:
    """Copy the tests `write_tests` wrote into `source` whose (name, family) is `wanted` into `folder`
    (`source` is only read); return {name: family} of the copies."""
    selected = {}
    for model in sorted(source.glob("*/model.onnx")):
        name = model.parent.name
        family = family_of(name)
        if family is not None and wanted(name, family):
            shutil.copytree(model.parent, folder / name)
            selected[name] = family
    return selected


def _read_pbs(folder: Path, kind: str) -> list[np.ndarray]:
    from onnx import TensorProto, numpy_helper

    arrays = []
    for i in range(len(list(folder.glob(f"{kind}_*.pb")))):
        tensor = TensorProto()
        tensor.ParseFromString((folder / f"{kind}_{i}.pb").read_bytes())
        arrays.append(numpy_helper.to_array(tensor))
    return arrays


def bundle_runner(out: Path, model: str, archive: Path | None = None
                  ) -> Callable[[list[np.ndarray], list[np.ndarray]], list[np.ndarray]]:
    """Build the bundle in `out` as a shared library once; return a function running `<model>_run` on inputs (in
    the bundle's declared types and order) that returns its outputs, shaped and typed like `outputs_like`.

    `archive`: the bundle's own library (lib<model>.a), built position-independent (a CONFORMANCE_PROFILE bundle's),
    linked as it is: the objects its self-test ran, not compiled again. Without it the bundle's C is compiled.
    Each call builds a library of a new file name: the dynamic loader returns an object already loaded under the
    same path name, so a bundle compiled again into `out` would otherwise run the first build's code."""
    with tempfile.NamedTemporaryFile(dir=out, prefix=f"{model}_conformance_", suffix=".so", delete=False) as made:
        library = Path(made.name)
    if archive is not None:
        inputs = ["-Wl,--whole-archive", str(archive), "-Wl,--no-whole-archive"]
    else:
        inputs = ["-fPIC", "-O1", "-std=c99",
                  *(str(out / f"{model}_{part}.c") for part in ("kernels", "model", "weights"))]
    subprocess.run(["cc", "-shared", "-o", str(library), *inputs, "-lm"], check=True, capture_output=True)
    lib = ctypes.CDLL(str(library))
    run = getattr(lib, f"{model}_run")

    def run_once(inputs: list[np.ndarray], outputs_like: list[np.ndarray]) -> list[np.ndarray]:
        ins = [np.ascontiguousarray(x) for x in inputs]
        outs = [np.zeros(y.shape, y.dtype) for y in outputs_like]
        pointers = [ctypes.c_void_p(a.ctypes.data) for a in ins + outs]
        if len(ins) == 1 and len(outs) == 1:
            status = run(*pointers)
        else:  # the inputs and outputs structs are arrays of pointers, in order
            in_struct = (ctypes.c_void_p * len(ins))(*pointers[:len(ins)])
            out_struct = (ctypes.c_void_p * len(outs))(*pointers[len(ins):])
            status = run(ctypes.byref(in_struct), ctypes.byref(out_struct))
        if status != 0:
            raise RuntimeError(f"{model}_run returned status {status}")
        return outs

    return run_once


def run_bundle(out: Path, model: str, inputs: list[np.ndarray], outputs_like: list[np.ndarray],
               archive: Path | None = None) -> list[np.ndarray]:
    """Build the bundle in `out` as a shared library and run `<model>_run` on `inputs` once (see bundle_runner)."""
    return bundle_runner(out, model, archive)(inputs, outputs_like)


def compare(got: list[np.ndarray], want: list[np.ndarray], rtol: float, atol: float) -> str | None:
    """None when every output matches (floats by ONNX's allclose rule, NaN equal to NaN; others exactly),
    else one line on the first difference."""
    for i, (g, w) in enumerate(zip(got, want)):
        if w.dtype.kind == "f":
            close = np.isclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)
        else:
            close = g == w
        if not close.all():
            j = int(np.flatnonzero(~close.reshape(-1))[0])
            return (f"output {i}: {int((~close).sum())} of {w.size} elements differ, first at {j}: "
                    f"{g.reshape(-1)[j]!r} instead of {w.reshape(-1)[j]!r}")
    return None


# The profile the tests compile for: lowpower with room for the largest node test's inputs and outputs (a 3-D
# pool's 750,708 B do not fit lowpower's 512 KiB, which the compiler rightly refuses): the node tests check
# what an operator computes, not whether a model fits a part. Its objects are position-independent (lowpower's -O2
# and -fPIC), so that the library the self-test ran is the shared library run on the test's inputs (bundle_runner's
# `archive`) instead of the bundle's C being compiled a second time (some 0.2 CPU-s a test).
CONFORMANCE_PROFILE = """extends = "lowpower"
name = "conformance"
description = "lowpower with 16 MiB of SRAM, for ONNX's node tests"
sram_bytes = 16_777_216
cflags = ["-O2", "-fPIC"]
"""


def run_one(test_dir: Path) -> tuple[str, str]:
    """(outcome, detail) of one test folder: match, refused or wrong (a worker calls it). The compile runs on one
    process (`jobs=1`): the tests run `--jobs` at once, each worker on a core of its own, and a node test's model is
    a few kernels, whose code generation a forked pool and early objects only make dearer."""
    import tvm_ext
    from tvm_ext.compile import CompileError

    data = test_dir / "test_data_set_0"
    inputs, expected = _read_pbs(data, "input"), _read_pbs(data, "output")
    tolerance = json.loads((test_dir / "tolerance.json").read_text())
    try:
        profile = test_dir / "conformance.toml"
        profile.write_text(CONFORMANCE_PROFILE)
        bundle = tvm_ext.compile(test_dir / "model.onnx", target=str(profile), out=test_dir / "out", name="conf",
                                 jobs=1)
    except CompileError as err:
        message = str(err)
        if "\n" in message.strip():
            return "crash", "multi-line: " + message[:200]
        return "refused", message
    model = bundle.plan.model
    got = run_bundle(bundle.out_dir, model, inputs, expected, bundle.library)
    difference = compare(got, expected, tolerance["rtol"], tolerance["atol"])
    return ("wrong", difference) if difference else ("match", "")


class Worker:
    """A child process (`--worker`) that compiles and runs the test folders it reads on stdin, one per line,
    writing each folder's `result.json` and echoing the folder on stdout when done. TVM is imported once
    per worker, not once per test; a worker that dies or overruns a test is replaced, and that test is
    a crash."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.proc: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            p for p in (os.environ.get("PYTHONPATH"), str(REPO)) if p))
        # Its own folder as working directory: `-m`-style imports never see a user's `target/`.
        return subprocess.Popen([sys.executable, __file__, "--worker"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=self.log.open("ab"), text=True, env=env,
                                cwd=self.log.parent)

    def run(self, test_dir: Path, name: str, family: str) -> Outcome:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{test_dir}\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], TEST_TIMEOUT_SECONDS)
        if ready and self.proc.stdout.readline().strip() == str(test_dir):
            outcome, detail = json.loads((test_dir / "result.json").read_text())
            return Outcome(name, family, outcome, detail)
        self.stop()
        last = next((line for line in reversed(self.log.read_text(errors="replace").splitlines()) if line.strip()),
                    "")
        why = f"exit {self.proc.returncode}" if ready else f"timed out after {TEST_TIMEOUT_SECONDS} s"
        return Outcome(name, family, "crash", f"{why}: {last.strip()[:300]}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        if self.proc is not None:
            self.proc.wait()


def serve() -> None:
    """The worker's loop (see Worker): a test that raises anything but CompileError is a crash.

    The protocol has stdout to itself: whatever else writes to file descriptor 1 (TVM's converters print
    there) goes to the log on stderr."""
    from target.tvm_import_hook import leave_torch_out_of_tvm

    leave_torch_out_of_tvm()  # TVM's import, once per worker, without PyTorch's (no test uses it)
    protocol = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    for line in sys.stdin:
        test_dir = Path(line.strip())
        try:
            result = run_one(test_dir)
        except Exception as err:  # noqa: BLE001 - any other failure is a crash of the compiler
            message = next((part for part in str(err).splitlines() if part.strip()), "")
            result = ("crash", f"{type(err).__name__}: {message[:300]}")
        (test_dir / "result.json").write_text(json.dumps(result))
        print(test_dir, file=protocol, flush=True)


def run_all(folder: Path, selected: dict[str, str], jobs: int) -> list[Outcome]:
    """Every selected test of `folder`, on `jobs` new workers (stopped at the end); outcomes in name order."""
    workers = [Worker(folder / f"worker{index}.log") for index in range(jobs)]
    try:
        return run_on(folder, selected, workers)
    finally:
        for worker in workers:
            worker.stop()


def run_on(folder: Path, selected: dict[str, str], workers: list[Worker]) -> list[Outcome]:
    """Every selected test of `folder` on `workers` (each takes the next test when done; a worker started
    before keeps its TVM import: a caller running several selections, e.g. the test suite's parts, on one worker
    pays the import once); outcomes in name order. The workers are left running."""
    names = sorted(selected)
    results: dict[str, Outcome] = {}
    lock = threading.Lock()

    def job(worker: Worker) -> None:
        while True:
            with lock:
                if not names:
                    return
                name = names.pop(0)
            results[name] = worker.run(folder / name, name, selected[name])

    threads = [threading.Thread(target=job, args=(worker,)) for worker in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [results[name] for name in sorted(results)]


def _print_counts(title: str, results: list[Outcome]) -> None:
    by_family: dict[str, Counter] = {}
    for r in results:
        by_family.setdefault(r.family, Counter())[r.outcome] += 1
    header = f"{title:<15}" + "".join(f"{o:>9}" for o in OUTCOMES) + f"{'total':>9}"
    print(header)
    print("-" * len(header))
    for family in FAMILIES:
        if family in by_family:
            counts = by_family[family]
            print(f"{family:<15}" + "".join(f"{counts[o]:>9}" for o in OUTCOMES) + f"{sum(counts.values()):>9}")
    total = Counter(r.outcome for r in results)
    print("-" * len(header))
    print(f"{'total':<15}" + "".join(f"{total[o]:>9}" for o in OUTCOMES) + f"{len(results):>9}")


def print_table(results: list[Outcome], wall_seconds: float, verbose: bool) -> None:
    """The outcomes per family, of the node tests as ONNX writes them and then of their initializer variants."""
    _print_counts("family", [r for r in results if not r.name.endswith(AS_INITIALIZERS)])
    variants = [r for r in results if r.name.endswith(AS_INITIALIZERS)]
    if variants:
        print()
        _print_counts("as initializers", variants)
    print(f"wall time {wall_seconds:.0f} s")
    for r in sorted(results, key=lambda r: (r.outcome, r.name)):
        if verbose or r.outcome in ("crash", "wrong"):
            print(f"{r.outcome:<8} {r.name}: {r.detail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-j", "--jobs", type=int, default=2, help="tests compiled at once (default 2)")
    parser.add_argument("-k", dest="substring", help="only tests whose name contains this")
    parser.add_argument("--family", action="append", choices=sorted(FAMILIES),
                        help="only tests of this family (repeatable; default all)")
    parser.add_argument("--tests", type=Path, metavar="DIR",
                        help="run the tests written into DIR by --write-tests (DIR is only read)")
    parser.add_argument("--write-tests", type=Path, metavar="DIR",
                        help="only write the selected tests into DIR (an empty or new folder) and exit")
    parser.add_argument("--verbose", action="store_true", help="list every test, not only crashes and wrong ones")
    parser.add_argument("--json", type=Path, help="also write the outcomes to this file")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        serve()
        return 0
    if args.write_tests:
        args.write_tests.mkdir(parents=True, exist_ok=True)
        print(f"{len(write_tests(args.write_tests, args.substring))} tests written into {args.write_tests}")
        return 0

    def wanted(name: str, family: str) -> bool:
        return (not args.substring or args.substring in name) and (not args.family or family in args.family)

    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="onnx_conformance.") as folder:
        if args.tests:
            selected = copy_written_tests(args.tests, Path(folder), wanted)
        else:
            selected = {name: family for name, family in write_tests(Path(folder), args.substring).items()
                        if wanted(name, family)}
        if not selected:
            print("onnx_conformance: error: no node test selected", file=sys.stderr)
            return 2
        results = run_all(Path(folder), selected, args.jobs)
    print_table(results, time.monotonic() - start, args.verbose)
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in results], indent=1))
    return 1 if any(r.outcome in ("crash", "wrong") for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
