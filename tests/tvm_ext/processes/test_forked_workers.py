"""The forked worker pool (tvm_ext.processes.forked_workers): every index's result, the worker's exception raised in
the parent, a dead worker reported, and no worker left behind however the call ends, an interrupt included."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import REPO
from tvm_ext.processes.forked_workers import WorkerEndedError, run_in_forked_workers


def living_children() -> list[int]:
    """This process's children that have not ended (zombies excluded)."""
    pids = [int(c) for c in Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text().split()]
    return [pid for pid in pids if "zombie" not in Path(f"/proc/{pid}/status").read_text()]


@pytest.fixture
def no_worker_left():
    """Fail the test if a child process it started still runs at its end (children this process had before,
    such as a reference runtime's server, are not its)."""
    before = set(living_children())
    yield
    assert set(living_children()) <= before, "a worker outlived its run"


@pytest.mark.parametrize("count", [1, 2, 3, 8])
def test_every_index_gets_its_own_result_from_a_worker(count, no_worker_left):
    results = run_in_forked_workers(lambda index: (index * index, os.getpid()), [3, 0, 2, 1, 4], count)
    assert {index: square for index, (square, _) in results.items()} == {i: i * i for i in range(5)}
    pids = {pid for _, pid in results.values()}
    assert os.getpid() not in pids and len(pids) <= min(count, 5)


def test_a_single_worker_takes_the_indices_in_the_given_order(tmp_path):
    taken = tmp_path / "taken"

    def record(index: int) -> None:
        with taken.open("a") as file:
            file.write(f"{index}\n")

    run_in_forked_workers(record, [2, 0, 3, 1], 1)
    assert taken.read_text().split() == ["2", "0", "3", "1"]


def test_an_exception_in_a_worker_is_raised_here_with_the_workers_traceback(no_worker_left):
    def fail_on_two(index: int) -> int:
        if index == 2:
            raise ValueError(f"index {index} is bad")
        return index

    with pytest.raises(ValueError, match="index 2 is bad") as raised:
        run_in_forked_workers(fail_on_two, [0, 1, 2, 3], 2)
    assert "in fail_on_two" in raised.value.__notes__[0]


def test_a_result_that_cannot_be_sent_back_is_an_error_naming_its_index(no_worker_left):
    with pytest.raises(RuntimeError, match="cannot send the result of index 1 back"):
        run_in_forked_workers(lambda index: (lambda: index) if index == 1 else index, [0, 1], 2)


def test_a_killed_worker_ends_the_run_and_no_worker_is_left(no_worker_left):
    def killed_on_one(index: int) -> int:
        if index == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return index

    with pytest.raises(WorkerEndedError):
        run_in_forked_workers(killed_on_one, [0, 1, 2, 3], 2)


# A process interrupted (SIGINT, Python's default handler: KeyboardInterrupt) at a random moment of runs whose
# workers return 1 MB each, so that most interrupts fall while a worker writes a result. It prints how many runs
# were interrupted and how many of its children still run at the end.
_INTERRUPTED_RUNS = textwrap.dedent("""
    import gc, os, random, signal, threading, time
    from tvm_ext.processes.forked_workers import run_in_forked_workers

    interrupted = 0
    for attempt in range(RUNS):
        interrupt = threading.Timer(random.uniform(0.0, 0.03), os.kill, (os.getpid(), signal.SIGINT))
        try:
            interrupt.start()
            run_in_forked_workers(lambda index: bytes(1 << 20), range(8), 2)
            interrupt.join()  # the run finished first: the interrupt falls into the sleep
            time.sleep(1)
        except KeyboardInterrupt:
            interrupted += 1
    gc.collect()  # a worker forked just before an interrupt and not recorded ends when its connection closes
    deadline = time.monotonic() + 10
    while (running := [pid for pid in open(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read().split()
                       if "zombie" not in open(f"/proc/{pid}/status").read()]) and time.monotonic() < deadline:
        time.sleep(0.05)
    print(interrupted, len(running))
""")


def test_interrupts_while_workers_send_results_never_hang_and_leave_no_worker_running():
    """concurrent.futures' executor, ended this way, hung in shutdown() (its manager thread blocked on a half
    written result) within about ten runs; 40 runs here must all end."""
    runs = 40
    script = _INTERRUPTED_RUNS.replace("RUNS", str(runs))
    try:
        proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True,
                              timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("an interrupted run of the forked workers hung")
    assert proc.returncode == 0, proc.stderr
    interrupted, children_left = map(int, proc.stdout.split())
    assert interrupted > runs // 2, "the interrupts fell outside the runs: the test no longer tests them"
    assert children_left == 0, "a worker still runs after its run was interrupted"
