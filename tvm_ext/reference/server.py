"""The reference runtimes' fork server, from the compiler's side: `ServedRun` runs `reference_runtimes.main`
on one exchange FOLDER in a process forked by a long-lived server (`python -P tvm_ext/reference/runtimes.py`,
see `reference_runtimes.serve`).

Why a server: a fresh `python` per run spent ~0.13 of its 0.15-0.19 CPU s starting Python and importing numpy
and the runtime, ~0.05 s running the model; the suite and multi-model compiles run hundreds. The server
imports them once; each run is a fork of it, still a process of its own (a crash or a hang takes only it).

Contracts:
- A process uses its own servers only: one started by the process it was forked from is never used nor
  stopped (the pid that started them is checked). Servers are started lazily, one per run in flight at a
  time (normally one per process), and reused only with the environment (os.environ) they were started
  with, which each run inherits, as a child started for that run would.
- A server runs in its own process group, with its runs. It ends when its stdin closes (this process ended);
  `stop_servers` (at this process's exit, atexit) kills it and its runs. One that died is replaced on the
  next run (a run it had not started yet goes to the new one; one it had started gets the server's own exit
  status as its own).
- Thread safe: the servers are handed out under a lock, and a server serves one ServedRun at a time.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tvm_ext.reference import runtimes as reference_runtimes

# The server runs this file as a script, not `-m tvm_ext.reference.runtimes`: `-m` would import the tvm_ext package
# first (the compiler's API, the packager, ...), a large share of the server's start, for nothing it uses.
_RUNTIMES_SCRIPT = Path(reference_runtimes.__file__).resolve()
# Longest wait, in seconds, for the server's report that a run it was told to stop (SIGKILL) ended; past it the
# server is stopped too.
_STOP_SECONDS = 10.0


def run_environment() -> dict[str, str]:
    """The environment a run inherits from its server: os.environ when the server started, which a server must
    still match to be reused (`_take_server`)."""
    return dict(os.environ)


class _Server:
    """One server process and the unread part of its stdout."""

    def __init__(self) -> None:
        self.environment = run_environment()
        # `-P`: neither the script's folder (tvm_ext/, whose module names could shadow a runtime's imports) nor
        # the working directory goes first on the import path. Its stderr is unused: each run writes its own.
        self._process = subprocess.Popen([sys.executable, "-P", str(_RUNTIMES_SCRIPT)], cwd="/",
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, start_new_session=True)
        self._unread = b""

    @property
    def pid(self) -> int:
        return self._process.pid

    def alive(self) -> bool:
        return self._process.poll() is None

    def send(self, folder: Path) -> None:
        """Ask for a run in `folder`; OSError (BrokenPipeError) if the server ended."""
        self._process.stdin.write(f"{folder}\n".encode())
        self._process.stdin.flush()

    def read_line(self, deadline: float) -> list[str] | None:
        """The next line's words; [] once the server ended (end of its stdout); None at `deadline`
        (time.monotonic() seconds) without a whole line. Past the deadline, what the server already wrote is
        still read (a run that ended while its caller was busy keeps its result)."""
        stdout = self._process.stdout.fileno()
        while b"\n" not in self._unread:
            remaining = max(0.0, deadline - time.monotonic())
            if not select.select([stdout], [], [], remaining)[0]:
                return None
            chunk = os.read(stdout, 4096)
            if not chunk:
                return []
            self._unread += chunk
        line, _, self._unread = self._unread.partition(b"\n")
        return line.decode().split()

    def stop(self) -> int:
        """Kill the server and its runs (its process group) unless it was already waited for; wait for it;
        its return code (negative: the signal that ended it)."""
        if self._process.returncode is None:
            # Before the wait: while it is not waited for, its pid (the group's id) is not reused.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, signal.SIGKILL)
        for pipe in (self._process.stdin, self._process.stdout):
            with contextlib.suppress(OSError):
                pipe.close()
        return self._process.wait()


class _Servers:
    """The servers of one process (`owner`): all of them, and the idle ones."""

    def __init__(self) -> None:
        self.owner = os.getpid()
        self.lock = threading.Lock()
        self.started: list[_Server] = []
        self.idle: list[_Server] = []


_servers = _Servers()


def _own_servers() -> _Servers:
    """This process's servers: a process forked from another starts with none (and a fresh lock)."""
    global _servers
    if _servers.owner != os.getpid():
        _servers = _Servers()
    return _servers


def _take_server() -> _Server:
    """An idle server of this process started with the current environment (others idle are stopped), or a
    new one."""
    servers = _own_servers()
    with servers.lock:
        while servers.idle:
            server = servers.idle.pop()
            if server.alive() and server.environment == run_environment():
                return server
            servers.started.remove(server)
            server.stop()
        server = _Server()
        servers.started.append(server)
        return server


def _give_back(server: _Server) -> None:
    servers = _own_servers()
    with servers.lock:
        if server in servers.started:
            servers.idle.append(server)


def _discard(server: _Server) -> int:
    """Stop `server` and forget it; its return code (see `_Server.stop`)."""
    servers = _own_servers()
    with servers.lock:
        if server in servers.started:
            servers.started.remove(server)
    return server.stop()


def stop_servers() -> None:
    """Kill this process's servers and their runs and wait for them (at exit; idempotent)."""
    servers = _own_servers()
    with servers.lock:
        stopping, servers.started, servers.idle = servers.started, [], []
    for server in stopping:
        server.stop()


atexit.register(stop_servers)


class ServedRun:
    """`reference_runtimes.main(folder)` in a process forked by one of this process's servers, started on
    construction (the exchange files must be in `folder` by then).

    `wait(deadline)` gives its return code as subprocess does (negative: the signal that ended it), or None
    while it runs; `stop()` kills it if it still runs and hands its server back (or stops a server that does
    not answer). Every ServedRun must be stopped: until then it holds its server.
    """

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._pid: int | None = None
        self._returncode: int | None = None
        # A server that ends before it started the run (one killed while idle) is replaced, once.
        self._replacements = 1
        self._server: _Server | None = _take_server()
        self._send()

    def _send(self) -> None:
        with contextlib.suppress(OSError):  # it ended: `wait` finds its stdout closed
            self._server.send(self._folder)

    def wait(self, deadline: float) -> int | None:
        """The run's return code once it ended, or None if it still runs at `deadline` (time.monotonic()
        seconds). A server that ends after it started the run gives its own return code."""
        while self._returncode is None:
            line = self._server.read_line(deadline)
            if line is None:
                return None
            if line[:1] == ["started"]:
                self._pid = int(line[1])
            elif line[:1] == ["ended"] and int(line[1]) == self._pid:
                self._returncode = os.waitstatus_to_exitcode(int(line[2]))
                _give_back(self._server)
                self._server = None
            elif self._pid is None and self._replacements:
                self._replacements -= 1
                _discard(self._server)
                self._server = _take_server()
                self._send()
            else:
                self._returncode = _discard(self._server)
                self._server = None
        return self._returncode

    def stop(self) -> None:
        """Kill the run if it still runs (its server, if it has not said which process runs it yet); wait for
        it to end (idempotent)."""
        if self._returncode is not None:
            return
        if self._pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)
            if self.wait(time.monotonic() + _STOP_SECONDS) is not None:
                return
        self._returncode = _discard(self._server)
        self._server = None
