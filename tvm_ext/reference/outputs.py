"""Reference outputs from an independent runtime, for the bundle's embedded self-test.

Float TFLite models run on LiteRT, int8 TFLite models on TFLite Micro (the golden for integer kernels), and so
does a model with TFLite Micro's own operators (its signal library, which LiteRT lacks); ONNX models run on
onnxruntime. The compiler's own output is never used as the expected output.

Each run is a process of its own, forked by a long-lived server (`tvm_ext.reference.server`, running
`tvm_ext.reference.runtimes`): a runtime that crashes (a signal) or hangs on a model is reported as
ReferenceRuntimeError, one line, instead of taking the compiler down.
"""

from __future__ import annotations

import json
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tvm_ext.processes.command_process import interrupts_held_back
from tvm_ext.reference.runtimes import (RESULT_FILE, STDERR_FILE, Request, Runtime, case_stem, read_arrays,
                                        write_arrays)
from tvm_ext.reference.server import ServedRun

if TYPE_CHECKING:
    from tvm_ext.frontend import TensorSpec
    from tvm_ext.reference.input_grids import QuantizationGrid

# A reference runtime still running after this many seconds is stopped (the largest shared model takes
# a few seconds).
REFERENCE_TIMEOUT_SECONDS = 600
# A ReferenceCopy's file, in a run's folder.
REFERENCE_COPY_FILE = "model_copy"


DIVIDING_OPERATORS = frozenset({"Div", "Mod", "DIV", "FLOOR_DIV", "FLOOR_MOD"})
"""ONNX and TFLite operators that may divide by an input: a model with one gets `nonzero_integers` inputs."""


@dataclass(frozen=True)
class _ValueRange:
    """The values a self-test input takes: from `low` to `high`, both included (floats: `high` excluded from a
    random draw), zero left out when `skips_zero` (the range then holds it)."""

    low: float
    high: float
    skips_zero: bool = False


def _value_range(spec: TensorSpec, nonzero_integers: bool, index_limit: int | None,
                 grid: QuantizationGrid | None = None) -> _ValueRange:
    """The range of test_inputs and extreme_inputs for one input (their arguments)."""
    dtype = np.dtype(spec.dtype)
    if grid is not None:
        return _ValueRange(grid.low, grid.high)
    if dtype.kind in "iu" and index_limit is not None and (index_limit < 10 or dtype.itemsize == 1):
        low = int(nonzero_integers and index_limit > 1)
        return _ValueRange(low, max(index_limit - 1, low))
    if dtype.kind == "b":
        return _ValueRange(0, 1)
    if dtype.kind == "f":
        return _ValueRange(-1.0, 1.0)
    if dtype.kind in "iu" and dtype.itemsize == 1:
        info = np.iinfo(dtype)
        if nonzero_integers and info.min == 0:
            return _ValueRange(1, info.max)
        return _ValueRange(info.min, info.max, skips_zero=nonzero_integers)
    return _ValueRange(int(nonzero_integers), 9)


def test_inputs(specs: list[TensorSpec], seed: int = 0, nonzero_integers: bool = False,
                index_limits: dict[int, int] | None = None, grids: dict[int, QuantizationGrid] | None = None,
                ties: bool = False) -> list[np.ndarray]:
    """Deterministic inputs: floats uniform in [-1, 1), bools uniform, 1-byte integers uniform over the
    type's range, wider integers in [0, 10). With `nonzero_integers` (a model that divides by an input: an
    integer Div or Mod would divide by zero and crash the reference runtime), integers are never zero:
    1-byte ones uniform over the type's nonzero values, wider ones in [1, 10). An integer input k with
    `index_limits[k]` (its values are indices on an axis of that size: index_guards.index_input_limits)
    takes values in [0, that size) when it is less than 10 or the input has 1 byte, so the reference runtime
    accepts them. A float input k with `grids[k]` (the model only quantizes it: input_grids) is uniform from
    one step below its grid to one step above, and with `ties` each value is moved onto a rounding tie of
    the grid."""
    rng = np.random.default_rng(seed)
    arrays = []
    limits, input_grids = index_limits or {}, grids or {}
    for k, spec in enumerate(specs):
        dtype = np.dtype(spec.dtype)
        values = _value_range(spec, nonzero_integers, limits.get(k), input_grids.get(k))
        if dtype.kind == "f":
            drawn = rng.uniform(values.low, values.high, spec.shape)
            arrays.append(input_grids[k].ties(drawn) if ties and k in input_grids else drawn.astype(dtype))
        elif values.skips_zero:
            drawn = rng.integers(values.low, values.high, spec.shape)  # one value fewer than the range holds,
            arrays.append((drawn + (drawn >= 0)).astype(dtype))  # shifted over zero
        else:
            arrays.append(rng.integers(values.low, values.high + 1, spec.shape).astype(dtype))
    return arrays


def extreme_inputs(specs: list[TensorSpec], nonzero_integers: bool = False,
                   index_limits: dict[int, int] | None = None,
                   grids: dict[int, QuantizationGrid] | None = None) -> list[np.ndarray]:
    """Inputs at the ends of test_inputs' ranges, alternating element by element (low, high, low, ...): 1-byte
    integers at their type's minimum and maximum (1 for uint8's minimum with `nonzero_integers`), so that every
    integer kernel meets saturation both ways; index inputs at 0 and their axis' last index (as test_inputs:
    `index_limits`); bools False and True; wider integers at test_inputs' 0 (1) and 9; floats at -1 and 1 (a
    float model's reference is not known to stay finite beyond the range the first case draws from), or, for
    an input the model only quantizes (`grids`), one step beyond either end of its grid (saturating both
    ways)."""
    arrays = []
    limits, input_grids = index_limits or {}, grids or {}
    for k, spec in enumerate(specs):
        values = _value_range(spec, nonzero_integers, limits.get(k), input_grids.get(k))
        alternating = np.arange(int(np.prod(spec.shape, dtype=np.int64))) % 2 == 1
        arrays.append(np.where(alternating, values.high, values.low).reshape(spec.shape).astype(spec.dtype))
    return arrays


def selftest_cases(specs: list[TensorSpec], count: int, nonzero_integers: bool = False,
                   index_limits: dict[int, int] | None = None,
                   grids: dict[int, QuantizationGrid] | None = None) -> list[list[np.ndarray]]:
    """`count` input cases for the self-test, deterministic: case 0 is test_inputs' (seed 0, without `grids`:
    the input the self-test always ran), case 1 extreme_inputs', the others test_inputs' with seeds 1, 2, ...,
    the first of them (case 2) on the grids' rounding ties (the arguments are theirs)."""
    cases = [test_inputs(specs, 0, nonzero_integers, index_limits)]
    if count > 1:
        cases.append(extreme_inputs(specs, nonzero_integers, index_limits, grids))
    cases += [test_inputs(specs, seed, nonzero_integers, index_limits, grids, ties=seed == 1)
              for seed in range(1, count - 1)]
    return cases


def _is_integer_model(specs: list[TensorSpec]) -> bool:
    return any(np.dtype(s.dtype).kind in "iu" for s in specs)


@dataclass(frozen=True)
class ReferenceCopy:
    """Bytes the reference runtime runs instead of the model file: the model as the compile edited it for that
    runtime (`data`), and what changed, for the runtime's name in messages and reports (`change`, "the model with
    ...")."""

    data: bytes
    change: str


class ReferenceRuntimeError(Exception):
    """The reference runtime cannot run the model; the message names the runtime and its complaint."""


def run_reference(path: Path, model_format: str, inputs: list[np.ndarray], input_specs: list[TensorSpec],
                  num_outputs: int, micro_operators: bool = False) -> tuple[list[np.ndarray], str]:
    """The reference runtime's outputs for one case `inputs`, and the runtime's name and version;
    `micro_operators`: the model's operators are TFLite Micro's to judge (quantized ones, whose arithmetic we match
    TFLite Micro's, or ones only TFLite Micro runs); a TFLite model without them and with float inputs is run by
    LiteRT.

    Raises ReferenceRuntimeError when the runtime refuses the model, crashes or outlives
    REFERENCE_TIMEOUT_SECONDS.
    """
    with start_reference(path, model_format, [inputs], input_specs, num_outputs, micro_operators) as running:
        outputs, runtime = running.result()
        return outputs[0], runtime


def runs_on_tflite_micro(facts) -> bool:
    """Whether the model (its `tvm_ext.model_check.ModelFacts`) runs on TFLite Micro rather than LiteRT: TFLite Micro
    for a quantized model even with float inputs and outputs (QUANTIZE and DEQUANTIZE inside): our integer kernels
    are TFLite Micro's arithmetic, which LiteRT's kernels do not always share (a float -> int16 QUANTIZE of 1.0 in
    tests/tvm_ext/transform/int8/test_int16_ops.py: LiteRT 2.3 gives 1525 where TFLite Micro gives 1526); and for
    its signal library's operators, which only TFLite Micro runs."""
    from tvm_ext.model_check.signal_ops import SIGNAL_OPERATORS

    return facts.quantized or not facts.op_types().isdisjoint(SIGNAL_OPERATORS)


def start_reference(path: Path, model_format: str, cases: list[list[np.ndarray]], input_specs: list[TensorSpec],
                    num_outputs: int, micro_operators: bool = False,
                    micro_copy: ReferenceCopy | None = None) -> RunningReference:
    """The reference runtime started on each of `cases` (one array per model input each), each case from the
    model's initial state, in its process, to be awaited with `result()` (see RunningReference); `micro_copy`: what
    TFLite Micro runs instead of the file, if it is the runtime; the other arguments are run_reference's."""
    if model_format == "onnx":
        runtime = Runtime.ONNXRUNTIME
    elif micro_operators or _is_integer_model(input_specs):
        runtime = Runtime.TFLITE_MICRO
    else:
        runtime = Runtime.LITERT
    request = Request(runtime, str(path.resolve()), tuple(s.name for s in input_specs), num_outputs, len(cases))
    return RunningReference(path.name, request, cases, micro_copy if runtime is Runtime.TFLITE_MICRO else None)


class RunningReference:
    """A reference runtime running in its process (`reference_runtimes.main(FOLDER)`, forked by a server: see
    `tvm_ext.reference.server`), started on construction, while the caller goes on with other work (the run
    needs only the model file and the inputs, written into FOLDER first).

    Contract: `result()` waits for the run, at most REFERENCE_TIMEOUT_SECONDS after its start (then stops
    it), and returns its outputs (per case) and the runtime's name, or raises ReferenceRuntimeError (one line naming the
    model file). Use the object as a context manager: leaving the block, however (an error or an interrupt
    in the caller's other work), kills a run still running, waits for it and deletes FOLDER, so that no
    process and no file outlives the block. The run writes its stderr into FOLDER, so nothing in this
    process has to read a pipe meanwhile (no thread).
    """

    def __init__(self, model_name: str, request: Request, cases: list[list[np.ndarray]],
                 copy: ReferenceCopy | None = None) -> None:
        self._model_name = model_name
        self._runtime = request.runtime
        self._cases = len(cases)
        self._deadline = time.monotonic() + REFERENCE_TIMEOUT_SECONDS
        self._timeout_seconds = REFERENCE_TIMEOUT_SECONDS
        self._runtime_note = ""  # what the runtime ran, where not the model file as it is
        with interrupts_held_back():  # the folder and the run exist together, or neither does
            self._folder = Path(tempfile.mkdtemp(prefix="tvm_ext_reference."))
            try:
                self._run = self._start_run(request, cases, copy)
            except BaseException:
                shutil.rmtree(self._folder, ignore_errors=True)
                raise

    def _start_run(self, request: Request, cases: list[list[np.ndarray]], copy: ReferenceCopy | None) -> ServedRun:
        if copy is not None:
            (self._folder / REFERENCE_COPY_FILE).write_bytes(copy.data)
            request = replace(request, model=str(self._folder / REFERENCE_COPY_FILE))
            self._runtime_note = f" on {copy.change}"
        request.write(self._folder)
        for case, inputs in enumerate(cases):
            write_arrays(self._folder, case_stem(case, "input"), inputs)
        (self._folder / STDERR_FILE).touch()  # there even if the run ends before it opens it
        return ServedRun(self._folder)

    def __enter__(self) -> RunningReference:
        return self

    def __exit__(self, *exc_info: object) -> None:
        with interrupts_held_back():
            self._run.stop()
            shutil.rmtree(self._folder, ignore_errors=True)

    def result(self) -> tuple[list[list[np.ndarray]], str]:
        """The runtime's outputs, per case, and its name and version, once the run ended (see the class's
        contract)."""
        failure = self._wait()
        if failure is None:
            result = json.loads((self._folder / RESULT_FILE).read_text())
            if "error" not in result:
                return [read_arrays(self._folder, case_stem(case, "output"), result["outputs"])
                        for case in range(self._cases)], result["runtime"] + self._runtime_note
            failure = f"cannot run the model: {result['error']}"
        raise ReferenceRuntimeError(f"{self._model_name}: the reference runtime {self._runtime.value} {failure}")

    def _wait(self) -> str | None:
        """None when the run wrote its result, else how it failed ("crashed (SIGSEGV)", ...)."""
        returncode = self._run.wait(self._deadline)
        if returncode is None:
            self._run.stop()
            return f"did not finish within {self._timeout_seconds} s (stopped)"
        if returncode < 0:
            return f"crashed on the model ({_signal_name(-returncode)})"
        if returncode != 0 or not (self._folder / RESULT_FILE).is_file():
            stderr = (self._folder / STDERR_FILE).read_text(errors="replace")
            last_line = next((line.strip() for line in reversed(stderr.splitlines()) if line.strip()), "")
            return f"exited with status {returncode}" + (f": {last_line[:200]}" if last_line else "")
        return None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def run_relax_vm(mod, cases: list[list[np.ndarray]]) -> tuple[list[list[np.ndarray]], str]:
    """Outputs of a user's Relax module on TVM's own Relax VM, compiled with LLVM for the host, per input case.

    The reference for modules that come from no model file: the same graph through a different code
    generator and executor than the bundle's. Give it the module exactly as the user gave it, before any of
    our passes ran on it: a Python pass may edit the IRModule object it receives in place (`mod["main"] =
    ...` changes that object, unlike TVM's C++ passes), and a reference taken from our passes' work could
    not catch their bugs.
    """
    import tvm

    from tvm_ext.reference.host_vm import host_vm

    main = host_vm(mod)["main"]
    outputs = []
    for inputs in cases:
        result = main(*[tvm.runtime.tensor(x) for x in inputs])
        fields = [result] if hasattr(result, "numpy") else list(result)
        outputs.append([f.numpy() for f in fields])
    return outputs, f"TVM {tvm.__version__} Relax VM (llvm)"
