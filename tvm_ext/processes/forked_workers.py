"""Run `function(index)` for a list of indices on a few forked worker processes, with no thread in this process.

`run_in_forked_workers(function, order, count)` forks `count` workers (the 'fork' start method: each inherits
`function` and everything it refers to, nothing is pickled on the way in), hands them the indices in `order`
one at a time (a worker that finishes takes the next), and returns `{index: function(index)}`; the results are
pickled on the way back.

Why not `concurrent.futures.ProcessPoolExecutor`: its results are read by a manager thread, and a worker
ended while it writes a result (as an interrupt's cleanup must end them) leaves that thread blocked for ever
in the middle of a message, so the executor's `shutdown()` never returns. Measured: terminating a two-worker
executor's workers while they return 200 KB results hung `shutdown(wait=True)` at the 8th of 300 tries, and
a Ctrl-C during a compile's code generation once hung the command for 600 s. Here the main thread itself
waits on each worker's connection and its process sentinel: a worker that ends mid-message gives EOF, and
leaving the function by any exception (an interrupt's KeyboardInterrupt among them) kills the workers
(SIGKILL) and waits for them, which cannot block.

In the compile command an interrupt waits while workers are forked and while they are ended
(command_process.interrupts_held_back), so every worker is ended before the function returns or raises. Under
Python's own SIGINT handler, a KeyboardInterrupt raised between a fork and the parent's record of it leaves
that worker unrecorded: it ends by itself once its connection is garbage collected (end of file), as every
worker does when the parent's end of its connection closes.

A worker ignores SIGINT and takes SIGTERM's default action: the parent process decides what an interrupt does
(tvm_ext.processes.command_process) and ends its workers; on Linux the kernel also kills a worker when its parent ends in
any other way (SIGKILL).
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import traceback
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import TypeVar

from tvm_ext.processes.command_process import interrupts_held_back

Result = TypeVar("Result")


class WorkerEndedError(RuntimeError):
    """A worker process ended before it returned its result: it crashed or was killed."""


_ENDED = "a worker process ended abruptly (crashed or was killed)"


def run_in_forked_workers(function: Callable[[int], Result], order: Sequence[int],
                          count: int) -> dict[int, Result]:
    """`{index: function(index)}` for every index of `order`, computed by min(`count`, len(`order`)) forked
    workers that take the indices in that order. An exception `function` raises in a worker is raised here
    (with the worker's traceback as a note); WorkerEndedError if a worker ends abruptly. Every worker is ended
    and waited for when the function returns or raises (see the module docstring for an interrupt's one
    exception)."""
    context = multiprocessing.get_context("fork")
    workers: list[_Worker] = []
    finished = False
    try:
        with interrupts_held_back():  # every forked worker is in `workers`, to be ended below
            for _ in range(min(count, len(order))):
                workers.append(_Worker.start(context, function))
        results = _collect(workers, deque(order))
        finished = True
        return results
    finally:
        _end_all(workers, kill=not finished)


def _end_all(workers: list[_Worker], kill: bool) -> None:
    """End every worker (see _Worker.end). A KeyboardInterrupt meanwhile (Python's own SIGINT handler raises
    it at any moment) is raised once every worker ended."""
    interrupted: KeyboardInterrupt | None = None
    with interrupts_held_back():
        for worker in workers:
            while True:
                try:
                    worker.end(kill)
                    break
                except KeyboardInterrupt as err:
                    interrupted, kill = err, True
    if interrupted is not None:
        raise interrupted


def _collect(workers: list[_Worker], waiting: deque[int]) -> dict[int, object]:
    """Hand the indices `waiting` out to idle workers until every result is back."""
    results: dict[int, object] = {}
    busy: dict[Connection, tuple[_Worker, int]] = {}

    def hand_out(worker: _Worker) -> None:
        if waiting:
            busy[worker.connection] = (worker, waiting[0])
            worker.send(waiting.popleft())

    for worker in workers:
        hand_out(worker)
    while busy:
        sentinels = {worker.process.sentinel: worker for worker, _ in busy.values()}
        ready = wait([*busy, *sentinels])
        for connection in [item for item in ready if isinstance(item, Connection)]:
            worker, index = busy.pop(connection)
            results[index] = worker.receive()
            hand_out(worker)
        if any(sentinels[item].connection in busy for item in ready if isinstance(item, int)):
            raise WorkerEndedError(_ENDED)
    return results


@dataclass
class _Worker:
    """One forked worker process and this process's end of its connection."""

    process: BaseProcess
    connection: Connection

    @classmethod
    def start(cls, context: multiprocessing.context.ForkContext, function: Callable[[int], object]) -> _Worker:
        """Fork a worker that serves `function`."""
        ours, theirs = context.Pipe()
        try:
            process = context.Process(target=_serve, args=(os.getpid(), function, theirs, ours))
            process.start()
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()  # the worker's copy only: its end of file is then the worker's end
        return cls(process, ours)

    def send(self, index: int) -> None:
        """Hand the worker `index`; WorkerEndedError if it ended."""
        try:
            self.connection.send(index)
        except OSError as err:  # BrokenPipeError, ConnectionResetError
            raise WorkerEndedError(_ENDED) from err

    def receive(self) -> object:
        """The result the worker sent, or the exception it sent raised here; WorkerEndedError at its end."""
        try:
            returned, value, worker_traceback = self.connection.recv()
        except (EOFError, OSError) as err:
            raise WorkerEndedError(_ENDED) from err
        if returned:
            return value
        value.add_note(f"raised in worker process {self.process.pid}:\n{worker_traceback}")
        raise value

    def end(self, kill: bool) -> None:
        """Tell the worker to stop (or SIGKILL it unless it was waited for already), wait for it, close the
        connection. Safe to call again after an interrupt cut it short."""
        if kill and self.process.exitcode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGKILL)
        else:
            with contextlib.suppress(OSError):
                self.connection.send(None)
        self.process.join()
        self.connection.close()


_PR_SET_PDEATHSIG = 1  # prctl(2): the signal this process gets when its parent ends


def _serve(parent: int, function: Callable[[int], object], connection: Connection, parents_end: Connection
           ) -> None:
    """A worker's life: answer each index received on `connection` with (True, function(index), "") or
    (False, the exception, its traceback) until None arrives. Signals are left to the parent (pid `parent`),
    and the worker ends with it however it ends (on Linux)."""
    parents_end.close()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.setitimer(signal.ITIMER_REAL, 0)  # a retry timer of command_process armed before the fork
    if sys.platform == "linux":
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
    if os.getppid() != parent:  # it ended before prctl: nobody waits for this worker
        os._exit(1)
    while (index := _next_index(connection)) is not None:
        try:
            answer = (True, function(index), "")
        except Exception as err:  # noqa: BLE001 - any failure is the parent's to report
            answer = (False, err, traceback.format_exc())
        try:
            connection.send(answer)
        except Exception as err:  # noqa: BLE001 - a result or exception that does not pickle
            connection.send((False, RuntimeError(f"cannot send the result of index {index} back: {err!r}"),
                             traceback.format_exc()))


def _next_index(connection: Connection) -> int | None:
    """The next index the parent sends, or None when it says stop or closed its end."""
    try:
        return connection.recv()
    except EOFError:
        return None
