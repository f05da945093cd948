"""The reference runtimes themselves, run outside the compiler's process by a fork server:
`python -P tvm_ext/reference/runtimes.py` (see `serve`; `tvm_ext.reference.server` starts and talks to it).

A runtime may crash on a model (LiteRT segfaults on some malformed files) or hang; in a process of its own
that takes only that process down, and `tvm_ext.reference.outputs` reports it in one line. This module imports
neither TVM nor the compiler, only numpy, the runtimes it runs and onnx (to read an ONNX file's tensor types).

The exchange, all in FOLDER (written by the parent, private to one run):
- in: `request.json` (a `Request`), `case<c>_input<i>.npy` for each case c and each model input i in order;
- out, when the runtime ran: `case<c>_output<i>.npy` for each case and output and `result.json`
  `{"runtime": "<name version>", "outputs": <count>}`;
  when it raised an error: `result.json` `{"error": "<one readable line>"}`. Exit status 0 in both cases;
  anything else (a signal, another status) means the runtime crashed; its stderr is in `stderr.txt`.
"""

from __future__ import annotations

import enum
import importlib
import json
import os
import re
import signal
import sys
import traceback
from dataclasses import asdict, dataclass
from importlib.metadata import version
from pathlib import Path
from typing import NoReturn

import numpy as np

REQUEST_FILE = "request.json"
RESULT_FILE = "result.json"
STDERR_FILE = "stderr.txt"
# Longest runtime complaint passed on, in characters: the first sentence names the problem.
MAX_ERROR_CHARS = 240
# onnxruntime's session option that runs every int8 QDQ node group as the integer operator it fuses it into
# (its default on Arm). On x86-64 its default instead keeps a Conv or MatMul group with int8 activations in
# float32 (a float convolution of the dequantized values, whose sum no C compiler orders as MLAS does, rarely
# one rounding away from the integer result) and first makes int8 pairs uint8, which changes which Adds it fuses.
ONNXRUNTIME_INTEGER_QDQ = ("session.qdqisint8allowed", "1")
# onnxruntime's session option for exact uint8 x int8 products on x86-64 without VNNI (AVX2, AVX-512 before VNNI):
# there its kernels add them in pairs in int16 (VPMADDUBSW), saturating, unless it widens them (onnxruntime
# PR 12088, issue 14642); on other hosts it changes nothing. Set only for a model holding uint8 tensors: with it,
# onnxruntime 1.32 finds no kernel for an int8 x int8 per-channel QLinearConv.
ONNXRUNTIME_EXACT_UINT8 = ("session.x64quantprecision", "1")
# onnxruntime's threads per operator: one, as a bundle runs. MLAS splits a float convolution's output pixels
# among its threads and the pixels each thread computes decide how it blocks the sum over the taps
# (tvm_ext.codegen.fused_float_products): with the host's default (its cores) the reference would depend on it.
ONNXRUNTIME_THREADS = 1

# onnxruntime's status prefix, "[ONNXRuntimeError] : 1 : FAIL : ", carries nothing for the user.
_ORT_STATUS_PREFIX = re.compile(r"^\s*\[ONNXRuntimeError\]\s*:\s*\d+\s*:\s*\w+\s*:\s*")
# A C++ source location, with the C++ signature onnxruntime puts after it: "/onnxruntime_src/.../reshape_helper.h:91
# onnxruntime::ReshapeHelper::ReshapeHelper(const onnxruntime::TensorShape&, ..., bool) " (LiteRT: the location).
_SOURCE_LOCATION = re.compile(
    r"(?:/?[\w.+-]+/)*[\w.+-]+\.(?:h|hh|hpp|c|cc|cpp):\d+\s+"
    r"(?:[\w:<>,*&~ ]*?[\w>]::[\w~<>]+\((?:[^()]|\([^()]*\))*\)(?:\s*const)?\s*)?"
)
# The failed C++ check before onnxruntime's sentence: "input_shape_size == size was false. ".
_FAILED_CHECK = re.compile(r"\s[^\s.:'{}][^.:'{}]*\bwas false\.\s")
_WHITESPACE = re.compile(r"\s+")
# Largest arena TFLite Micro is given, in bytes (far above any model a microcontroller runs).
TFLM_MAX_ARENA_BYTES = 1 << 30
# Smallest arena it is given: a small model of TFLite Micro's signal operators (SignalIrfft) allocates its
# persistent buffers in the kernel's Init, where running out crashes the interpreter instead of failing.
TFLM_MIN_ARENA_BYTES = 1 << 18
# The message of TFLM's Python interpreter when the tensors do not fit its arena.
_TFLM_ALLOCATION_FAILURE = "failed to allocate tensors"


class Runtime(str, enum.Enum):
    """A reference runtime, by the name messages give it."""

    ONNXRUNTIME = "onnxruntime"
    LITERT = "LiteRT"
    TFLITE_MICRO = "TFLite Micro"


@dataclass(frozen=True)
class Request:
    """What the child runs: `runtime` on the model file `model` (an absolute path), whose inputs are named
    `input_names` (in order) and which has `num_outputs` outputs, for each of `cases` input cases, each from
    the model's initial state (a fresh TFLite Micro or LiteRT interpreter per case: their variable tensors and
    signal operators' buffers carry state from one invoke to the next; an ONNX model has none). The child
    reads the file itself and gives the runtime its bytes, never the path: a runtime's C++ API takes paths as
    UTF-8 text, and a path that is not (Python's surrogate escapes) made onnxruntime and LiteRT refuse the
    call, a failure blamed on the model."""

    runtime: Runtime
    model: str
    input_names: tuple[str, ...]
    num_outputs: int
    cases: int = 1

    def write(self, folder: Path) -> None:
        (folder / REQUEST_FILE).write_text(json.dumps(asdict(self)))

    @classmethod
    def read(cls, folder: Path) -> Request:
        fields = json.loads((folder / REQUEST_FILE).read_text())
        return cls(Runtime(fields["runtime"]), fields["model"], tuple(fields["input_names"]), fields["num_outputs"],
                   fields["cases"])


def write_arrays(folder: Path, stem: str, arrays: list[np.ndarray]) -> None:
    """`arrays` as `<stem>0.npy`, `<stem>1.npy`, ... (no pickled objects)."""
    for index, array in enumerate(arrays):
        np.save(folder / f"{stem}{index}.npy", np.asarray(array), allow_pickle=False)


def case_stem(case: int, stem: str) -> str:
    """The file stem of case `case`'s arrays `stem` ("input", "output"): `case<c>_<stem>`."""
    return f"case{case}_{stem}"


def read_arrays(folder: Path, stem: str, count: int) -> list[np.ndarray]:
    return [np.load(folder / f"{stem}{index}.npy", allow_pickle=False) for index in range(count)]


def readable_error(err: Exception) -> str:
    """A runtime's exception as one line, without onnxruntime's status prefix, C++ source locations and
    signatures, or the C++ condition that failed."""
    text = _FAILED_CHECK.sub(" ", _SOURCE_LOCATION.sub(" ", _ORT_STATUS_PREFIX.sub("", str(err))))
    text = _WHITESPACE.sub(" ", text).strip() or type(err).__name__
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 3] + "..."


def reference_session_options(model: bytes):
    """onnxruntime's SessionOptions as the reference runs the ONNX file `model`: errors only in its log, every QDQ
    group fused (ONNXRUNTIME_INTEGER_QDQ), one thread per operator (ONNXRUNTIME_THREADS), uint8 x int8 products
    exact (ONNXRUNTIME_EXACT_UINT8) where the model holds uint8 tensors."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # errors only: its warnings about old opsets are not ours to print
    options.add_session_config_entry(*ONNXRUNTIME_INTEGER_QDQ)
    if _holds_uint8_tensors(model):
        options.add_session_config_entry(*ONNXRUNTIME_EXACT_UINT8)
    options.intra_op_num_threads = ONNXRUNTIME_THREADS
    return options


def _holds_uint8_tensors(model: bytes) -> bool:
    """Whether the ONNX file `model` has a uint8 graph input, output or constant (a quantized activation's zero
    point, or weights); False for bytes that are no ONNX file (onnxruntime then says what is wrong)."""
    import onnx
    from google.protobuf.message import DecodeError

    try:
        graph = onnx.load_from_string(model).graph
    except DecodeError:
        return False
    uint8 = onnx.TensorProto.UINT8
    return (any(t.data_type == uint8 for t in graph.initializer)
            or any(v.type.tensor_type.elem_type == uint8 for v in (*graph.input, *graph.output)))


def _run_onnxruntime(request: Request, cases: list[list[np.ndarray]]) -> tuple[list[list[np.ndarray]], str]:
    import onnxruntime

    model = _model_bytes(request)
    session = onnxruntime.InferenceSession(model, reference_session_options(model), providers=["CPUExecutionProvider"])
    outputs = [session.run(None, dict(zip(request.input_names, inputs, strict=True))) for inputs in cases]
    return outputs, f"onnxruntime {onnxruntime.__version__}"


def _run_litert(request: Request, cases: list[list[np.ndarray]]) -> tuple[list[list[np.ndarray]], str]:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    model = _model_bytes(request)
    outputs = []
    for inputs in cases:  # a fresh interpreter per case: its variable tensors start at their initial value
        # The reference kernels, not XNNPACK: the reference is the one LiteRT documents as exact.
        interpreter = Interpreter(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        interpreter.allocate_tensors()
        for detail, value in zip(interpreter.get_input_details(), inputs):
            interpreter.set_tensor(detail["index"], value)
        interpreter.invoke()
        outputs.append([interpreter.get_tensor(d["index"]).copy() for d in interpreter.get_output_details()])
    return outputs, f"LiteRT {version('ai-edge-litert')}"


def _tflite_micro_interpreter(model: bytes):
    """TFLite Micro's interpreter for the model file's bytes `model` on an arena large enough: its default
    arena (10x the file's bytes) cannot hold the tensors of a model with large activations and few weights, so
    the arena is doubled, from that default (at least TFLM_MIN_ARENA_BYTES), until TFLM allocates the tensors
    or TFLM_MAX_ARENA_BYTES is reached."""
    from tflite_micro import runtime

    arena_bytes = max(10 * len(model), TFLM_MIN_ARENA_BYTES)
    while True:
        try:
            return runtime.Interpreter.from_bytes(model, arena_size=arena_bytes)
        except RuntimeError as err:
            if _TFLM_ALLOCATION_FAILURE not in str(err) or 2 * arena_bytes > TFLM_MAX_ARENA_BYTES:
                raise
        arena_bytes *= 2


def _run_tflite_micro(request: Request, cases: list[list[np.ndarray]]) -> tuple[list[list[np.ndarray]], str]:
    model = _model_bytes(request)
    outputs = []
    for inputs in cases:  # a fresh interpreter per case: its state and unwritten outputs as on its first run
        interpreter = _tflite_micro_interpreter(model)
        for index, value in enumerate(inputs):
            interpreter.set_input(value, index)
        interpreter.invoke()
        outputs.append([np.array(interpreter.get_output(index)).copy() for index in range(request.num_outputs)])
    return outputs, f"TFLite Micro (tflite-micro {version('tflite-micro')})"


def _model_bytes(request: Request) -> bytes:
    """The bytes of the request's model file (see Request: runtimes get bytes, not the path)."""
    return Path(request.model).read_bytes()


_RUNNERS = {
    Runtime.ONNXRUNTIME: _run_onnxruntime,
    Runtime.LITERT: _run_litert,
    Runtime.TFLITE_MICRO: _run_tflite_micro,
}


def main(folder: Path) -> int:
    """Run the request in `folder` and write its result there; 0 unless the runtime crashes us."""
    request = Request.read(folder)
    cases = [read_arrays(folder, case_stem(case, "input"), len(request.input_names)) for case in range(request.cases)]
    try:
        outputs, runtime = _RUNNERS[request.runtime](request, cases)
    except Exception as err:  # noqa: BLE001 - each runtime raises its own types; all mean "cannot run it"
        result: dict[str, str | int] = {"error": readable_error(err)}
    else:
        for case, case_outputs in enumerate(outputs):
            write_arrays(folder, case_stem(case, "output"), case_outputs)
        result = {"runtime": runtime, "outputs": len(outputs[0])}
    (folder / RESULT_FILE).write_text(json.dumps(result))
    return 0


# The module of each runtime that the server imports before it forks a run of that runtime: only those whose
# import starts no thread (a fork copies one thread; a lock another thread held at the fork stays locked in the
# run; numpy's OpenBLAS pool is stopped before each fork by OpenBLAS itself). onnxruntime's native module
# starts a thread when it loads, so each ONNX run imports it itself (about 20 ms, against the ~0.13 s of a
# fresh interpreter and numpy the server saves).
_PRELOADED_MODULES = {
    Runtime.LITERT: "ai_edge_litert.interpreter",
    Runtime.TFLITE_MICRO: "tflite_micro",
}


def serve() -> int:
    """The fork server: for each line of stdin, the path of an exchange FOLDER, fork a process that runs
    `main(FOLDER)` (see `_run_forked`), write `started <pid>`, wait for it and write `ended <pid> <status>`
    (`status`: os.waitpid's wait status), each a line on stdout, flushed; return 0 at the end of stdin.

    The server imports numpy once, and each runtime's module (of `_PRELOADED_MODULES`) the first time a request
    needs it, so that every run is a fork that inherits them (the point: they are most of a run's CPU time); it
    forks from a single thread, so that no other thread holds a lock at a fork (numpy's OpenBLAS stops its own
    worker threads before each fork, through pthread_atfork). It never runs a model itself, so each run starts
    from the same state. A runtime's import that fails here is left to the run, which fails on it as a
    process of its own would. SIGINT is ignored (the compiler's process decides what an
    interrupt stops); a run restores Python's handler.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while line := sys.stdin.readline():
        folder = Path(line.rstrip("\n"))
        try:
            runtime = Request.read(folder).runtime
            if runtime in _PRELOADED_MODULES:
                importlib.import_module(_PRELOADED_MODULES[runtime])
        except Exception:  # noqa: BLE001, S110 - the run repeats the read and the import, and reports their error
            pass
        pid = os.fork()
        if pid == 0:
            _run_forked(folder)
        print(f"started {pid}", flush=True)
        _, status = os.waitpid(pid, 0)
        print(f"ended {pid} {status}", flush=True)
    return 0


def _run_forked(folder: Path) -> NoReturn:
    """In the forked process: run `main(folder)` there, with stdin and stdout on /dev/null and stderr into
    `folder/STDERR_FILE`, and end with its status (1 and the traceback on stderr if it raised), as a process
    of its own would."""
    status = 1
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(folder)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.dup2(os.open(STDERR_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 2)
        status = main(folder)
    except BaseException:  # noqa: BLE001 - whatever it is, it is the run's failure, reported by its status
        traceback.print_exc()
    finally:
        sys.stderr.flush()
        os._exit(status)


if __name__ == "__main__":
    sys.exit(serve())
