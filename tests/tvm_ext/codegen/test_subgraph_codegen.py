"""Kernels generated per subgraph in worker processes: each distinct kernel once, the same bundle for any
--jobs, and a worker's crash or an interrupt ends the compile cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from backends.cortex_m.helpers import CORTEX_M_HELPERS
from conftest import REPO
from memory_planner.plan import KernelSignature
from test_interrupts import assert_ended_by_the_signal
from test_partition_subgraphs import before, lowpower
from tvm_ext.codegen.codegen_c import KernelSource
from tvm_ext.plan.extract_plan import unique_kernels
from tvm_ext.codegen.subgraph_codegen import combine, subgraph_kernels
from tvm_ext.transform import PartitionSubgraphs


def signature(name: str) -> KernelSignature:
    return KernelSignature(name, 1, 1, (), ())


def test_combine_keeps_the_subgraphs_order_and_every_helper():
    first = KernelSource({"a": "void a(void) {}\n"}, {"a": signature("a")}, ("double",))
    second = KernelSource({"b": "void b(void) {}\n"}, {"b": signature("b")}, ("single", "double"),
                          helper_libraries=(CORTEX_M_HELPERS,))
    combined = combine([first, second])
    assert combined.definitions == {"a": "void a(void) {}\n", "b": "void b(void) {}\n"}
    assert list(combined.signatures) == ["a", "b"]
    assert combined.requantize_roundings == ("double", "single")
    assert combined.helper_libraries == (CORTEX_M_HELPERS,), \
        "a subgraph's kernels call the dual MAC helper: the bundle's header must define it"


def test_a_kernel_called_in_several_subgraphs_is_generated_once():
    """before(): relu(x), x + 1, a + b, relu(c), relu(d), cut into four subgraphs: the three relus are one
    kernel, generated with the first subgraph; the last two subgraphs bring no new kernel."""
    mod = PartitionSubgraphs(lowpower(1))(before())
    kernels, c_name_of = unique_kernels(mod, "m")
    subgraphs = subgraph_kernels(mod, kernels, c_name_of)
    assert [s.subgraph for s in subgraphs] == [0, 1]
    generated = [name for s in subgraphs for name in s.kernels]
    assert sorted(generated) == sorted(kernels) and len(kernels) == 3
    assert len({c_name_of[name] for name in c_name_of if "relu" in name}) == 1


def archive_members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def test_the_bundle_is_the_same_for_one_and_for_two_jobs(tmp_path):
    """The example model in 64-byte subgraphs (one per single-entry piece): both archives hold the same files
    with the same bytes."""
    import tvm_ext
    from tvm_ext.example import EXAMPLE_NAME, write_example_model

    model = write_example_model(tmp_path / f"{EXAMPLE_NAME}.onnx")
    bundles = [tvm_ext.compile(model, target=lowpower(64), out=tmp_path / f"jobs{jobs}", jobs=jobs)
               for jobs in (1, 2)]
    assert len({call.subgraph for call in bundles[0].plan.calls}) > 2
    serial, parallel = (archive_members(bundle.archive) for bundle in bundles)
    assert serial.keys() == parallel.keys()
    assert [name for name in serial if serial[name] != parallel[name]] == []


def children(pid: int) -> list[int]:
    """The code generation workers of the compiler `pid`: its living children but the reference runtime's,
    which may still run beside the code generation (or have ended: a zombie has no command line, and killing
    it would change nothing)."""
    pids = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    return [child for child in pids if _cmdline(child) and b"reference/runtimes.py" not in _cmdline(child)]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:  # it ended meanwhile
        return b"reference/runtimes.py"


def run_until_the_workers_start(shared_models: Path, out: Path, act) -> subprocess.CompletedProcess:
    """Compile vww_96_int8 (11 subgraphs) with --jobs 2; once its passes finished and the code generation's
    workers appeared, call `act(compiler pid, worker pids)`; wait for the end."""
    command = [sys.executable, "-m", "tvm_ext.compile", str(shared_models / "mlperf_tiny/vww_96_int8.tflite"),
               "--jobs", "2", "-o", str(out)]
    proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    printed = ""
    while not printed.startswith("[tvm_ext] passes "):
        printed = proc.stdout.readline()
        assert printed, "the command ended before its passes stage"
    deadline = time.monotonic() + 30
    while not children(proc.pid):
        assert time.monotonic() < deadline and proc.poll() is None, "no code generation worker started"
        time.sleep(0.001)
    workers = children(proc.pid)
    act(proc.pid, workers)
    stdout, stderr = proc.communicate(timeout=300)  # a worker left behind would hold stdout open
    for worker in workers:
        assert not Path(f"/proc/{worker}").exists() or "zombie" in Path(f"/proc/{worker}/status").read_text()
    return subprocess.CompletedProcess(command, proc.returncode, stdout, stderr)


def test_a_crashed_worker_is_an_internal_error_and_leaves_nothing(shared_models, tmp_path):
    out = tmp_path / "out"
    proc = run_until_the_workers_start(shared_models, out, lambda pid, workers: os.kill(workers[0], signal.SIGKILL))
    assert proc.returncode == 3, (proc.returncode, proc.stderr)
    assert proc.stderr.startswith("tvm_ext.compile: internal error: RuntimeError: a code generation worker")
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert not out.exists() and not list(tmp_path.glob(".out.*"))


@pytest.mark.parametrize("signum, line", [(signal.SIGINT, "tvm_ext.compile: interrupted"),
                                          (signal.SIGTERM, "tvm_ext.compile: terminated by SIGTERM")])
def test_an_interrupt_during_the_workers_ends_them_and_the_compile(signum, line, shared_models, tmp_path):
    out = tmp_path / "out"
    proc = run_until_the_workers_start(shared_models, out, lambda pid, workers: subprocess.run(
        ["kill", f"-{signum.value}", str(pid)]))
    assert_ended_by_the_signal(proc, out, signum, line)
