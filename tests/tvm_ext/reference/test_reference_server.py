"""The reference runtimes' fork server (tvm_ext.reference.server): a crash or a hang costs one run, not the
server; a server that died is replaced; no server outlives the process that started it; a forked process,
and each thread with a run in flight, has a server of its own.

The runtime is a stand-in onnxruntime (first on PYTHONPATH) that looks at the model's bytes only (the runtime
is given the file's bytes; each model file here holds its own name): "crash*" segfaults, "hang*" sleeps,
anything else returns its inputs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from test_reference_isolation import fake_package
from tvm_ext.reference import outputs as reference
from tvm_ext.reference import server as reference_server
from tvm_ext.frontend import TensorSpec

REPO = Path(__file__).resolve().parents[3]

BY_NAME_ONNXRUNTIME = """
    import os
    import signal
    import time

    __version__ = "0"

    class SessionOptions:
        def add_session_config_entry(self, key, value):
            pass

    class InferenceSession:
        def __init__(self, model, *args, **kwargs):
            if model.startswith(b"crash"):
                os.kill(os.getpid(), signal.SIGSEGV)
            if model.startswith(b"hang"):
                time.sleep(120)

        def run(self, names, feeds):
            return list(feeds.values())
"""

INPUT = np.arange(4, dtype="float32").reshape(1, 4)


@pytest.fixture()
def models(tmp_path: Path, monkeypatch) -> Path:
    """A folder for model files, with the stand-in runtime on PYTHONPATH."""
    monkeypatch.setenv("PYTHONPATH", str(fake_package(tmp_path / "fake", "onnxruntime", BY_NAME_ONNXRUNTIME)))
    folder = tmp_path / "models"
    folder.mkdir()
    return folder


def run(folder: Path, name: str) -> list[np.ndarray]:
    path = folder / name
    path.write_bytes(path.name.encode())
    outputs, _ = reference.run_reference(path, "onnx", [INPUT], [TensorSpec("x", (1, 4), "float32")], 1)
    return outputs


def server_pids(pid: int | str = "self") -> set[int]:
    """The living reference servers that process `pid` started."""
    children = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        children.update(int(child) for child in (task / "children").read_text().split())
    return {child for child in children if b"reference/runtimes.py" in _cmdline(child)}


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:  # it ended meanwhile
        return b""


def ended(pid: int) -> bool:
    try:
        return "zombie" in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True


def test_a_crash_costs_one_run_and_the_server_serves_on(models: Path) -> None:
    assert (run(models, "first.onnx")[0] == INPUT).all()
    servers = server_pids()
    with pytest.raises(reference.ReferenceRuntimeError, match=r"^crash\.onnx: the reference runtime onnxruntime "
                                                              r"crashed on the model \(SIGSEGV\)$"):
        run(models, "crash.onnx")
    assert (run(models, "after.onnx")[0] == INPUT).all()
    assert server_pids() == servers


def test_a_hang_is_stopped_and_the_server_serves_on(models: Path, monkeypatch) -> None:
    monkeypatch.setattr(reference, "REFERENCE_TIMEOUT_SECONDS", 2)
    run(models, "first.onnx")
    servers = server_pids()
    with pytest.raises(reference.ReferenceRuntimeError, match=r"did not finish within 2 s \(stopped\)$"):
        run(models, "hang.onnx")
    assert (run(models, "after.onnx")[0] == INPUT).all()
    assert server_pids() == servers


def test_a_run_that_ended_before_its_caller_waited_keeps_its_result_past_the_deadline(models: Path,
                                                                                     monkeypatch) -> None:
    """The caller compiles while the reference runs: when it asks for the result after the deadline (a loaded
    machine), a run that ended in time is read, not stopped."""
    monkeypatch.setattr(reference, "REFERENCE_TIMEOUT_SECONDS", 1)
    path = models / "quick.onnx"
    path.write_bytes(path.name.encode())
    with reference.start_reference(path, "onnx", [[INPUT]], [TensorSpec("x", (1, 4), "float32")], 1) as running:
        time.sleep(3)  # the run (milliseconds) ended long ago; the deadline passed meanwhile
        outputs, _ = running.result()
    assert (outputs[0][0] == INPUT).all()


def test_a_dead_server_is_replaced(models: Path) -> None:
    run(models, "first.onnx")
    servers = server_pids()
    for pid in servers:
        os.kill(pid, signal.SIGKILL)
    assert (run(models, "after.onnx")[0] == INPUT).all()
    assert server_pids().isdisjoint(servers)


def test_leaving_the_block_early_stops_the_run(models: Path) -> None:
    path = models / "hang.onnx"
    path.write_bytes(path.name.encode())
    with reference.start_reference(path, "onnx", [[INPUT]], [TensorSpec("x", (1, 4), "float32")], 1) as running:
        time.sleep(1)  # the run has started and sleeps
        folder = running._folder
    assert not folder.exists()
    assert (run(models, "after.onnx")[0] == INPUT).all()


CHILD = """
import os, signal, sys, time
from pathlib import Path
import numpy as np
from tvm_ext.reference import outputs as reference
from tvm_ext.reference import server as reference_server
from tvm_ext.frontend import TensorSpec
from test_reference_server import server_pids
path = Path(sys.argv[1])
reference.run_reference(path, "onnx", [np.zeros((1, 4), "float32")], [TensorSpec("x", (1, 4), "float32")], 1)
if sys.argv[2] == "killed":
    print(*server_pids(), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
# A forked process holds the server's stdin open (as a code generation worker would): only atexit stops it.
holder = os.fork()
if holder == 0:
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)
    os.dup2(null, 2)
    time.sleep(60)
    os._exit(0)
print(*server_pids(), holder, flush=True)
"""


@pytest.mark.parametrize("how", ["exits", "killed"])
def test_no_server_outlives_its_process(models: Path, how: str) -> None:
    """At exit (atexit) the process stops its server, even while another process holds the server's stdin
    open; killed (no atexit), its server sees its stdin close."""
    path = models / "model.onnx"
    path.write_bytes(path.name.encode())
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.environ["PYTHONPATH"], str(REPO), str(REPO / "tests"),
                                                       str(Path(__file__).resolve().parent)]))
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path), how], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == (0 if how == "exits" else -signal.SIGKILL), proc.stderr[-2000:]
    server, *holder = (int(pid) for pid in proc.stdout.split())
    assert len(holder) == (1 if how == "exits" else 0), proc.stdout
    if how == "killed":
        deadline = time.monotonic() + 10
        while not ended(server) and time.monotonic() < deadline:
            time.sleep(0.05)
    try:
        assert ended(server)
    finally:
        for pid in holder:
            os.kill(pid, signal.SIGKILL)


def test_a_forked_process_gets_its_own_server(models: Path) -> None:
    """Forked while a run is in flight (as the code generation's workers are), a process neither uses nor
    stops its parent's server."""
    run(models, "first.onnx")
    servers = server_pids()
    path = models / "in_flight.onnx"
    path.write_bytes(path.name.encode())
    with reference.start_reference(path, "onnx", [[INPUT]], [TensorSpec("x", (1, 4), "float32")], 1) as running:
        read_end, write_end = os.pipe()
        child = os.fork()
        if child == 0:
            status = 1
            try:
                os.close(read_end)
                run(models, "in_child.onnx")
                os.write(write_end, " ".join(map(str, server_pids())).encode())
                reference_server.stop_servers()  # as its atexit would: its own server only
                status = 0
            finally:
                os._exit(status)
        os.close(write_end)
        with os.fdopen(read_end) as pipe:
            child_servers = {int(pid) for pid in pipe.read().split()}
        assert os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) == 0
        assert (running.result()[0][0] == INPUT).all()
    assert len(child_servers) == 1 and child_servers.isdisjoint(servers)
    assert (run(models, "after.onnx")[0] == INPUT).all()
    assert server_pids() == servers


def test_runs_in_threads_at_once(models: Path) -> None:
    outputs: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda i=i: outputs.extend(run(models, f"thread{i}.onnx"))) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(outputs) == 3 and all((output == INPUT).all() for output in outputs)


def test_every_run_is_forked_from_a_single_thread(tmp_path: Path, shared_models: Path) -> None:
    """A fork copies only the forking thread; a lock another thread held at that moment stays locked in the run
    forever. After runs of each real runtime (their modules imported by the server where it may), every server
    of this process has one thread: onnxruntime's import thread never starts there, and numpy's OpenBLAS stops
    its pool at each fork."""
    from conftest import example_model

    onnx_model = example_model(tmp_path)
    runs = [(onnx_model, "onnx", np.zeros((1, 1, 49, 10), np.float32), TensorSpec("mfcc", (1, 1, 49, 10), "float32")),
            (shared_models / "mlperf_tiny" / "kws_ref_model.tflite", "tflite", np.zeros((1, 49, 10, 1), np.int8),
             TensorSpec("input_1", (1, 49, 10, 1), "int8")),
            (shared_models / "tflm" / "hello_world_float.tflite", "tflite", np.zeros((1, 1), np.float32),
             TensorSpec("x", (1, 1), "float32"))]
    for path, model_format, data, spec in runs:
        outputs, runtime = reference.run_reference(path, model_format, [data], [spec], 1)
        assert len(outputs) == 1, runtime
    servers = server_pids()
    assert servers
    assert {pid: len(os.listdir(f"/proc/{pid}/task")) for pid in servers} == dict.fromkeys(servers, 1)
