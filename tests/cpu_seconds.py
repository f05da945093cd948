"""Where the test suite's CPU-seconds go: each test's, summed per test file, in pytest's terminal summary.

A pytest plugin (tests/conftest.py registers it). Each test's CPU-seconds are those of its setup, call and
teardown (module- and session-scoped fixtures are counted in the test that first asks for them): the user and
system time of the test's process and of the children it waited for during them (compilers, QEMU, programs,
code generation workers; tvm_ext.compile.cpu_seconds), not those of long-lived helpers that outlive the test
(the reference runtimes' fork server, tvm_ext.reference.server). The figure is each test's user property
`CPU_PROPERTY` (so also in `--junitxml`'s XML), which pytest-xdist carries from the workers to the controller;
the controller prints the files and the tests that took the most, and the total, whatever the workers were.

Wall time on a shared machine says little about a test's cost; CPU-seconds over the cores say what a CI run of
the suite takes: CI's 2 cores need about the total / 2, plus the longest test a worker runs last.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterator

import pytest

CPU_PROPERTY = "test_cpu_seconds"
"""The user property each test's report carries: its CPU-seconds (setup, call and teardown)."""

FILES_SHOWN = 25
TESTS_SHOWN = 15
"""How many of the costliest files and tests the terminal summary lists."""


def _cpu_seconds() -> float:
    from tvm_ext.compile import cpu_seconds

    return cpu_seconds()


class CpuSeconds:
    """The plugin: measures each test in its process, and sums the measures the controller receives."""

    def __init__(self) -> None:
        self._spent: dict[str, float] = {}  # per test id, in the process that runs it
        self._received: dict[str, float] = {}  # per test id, from every process's teardown reports

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Iterator[None]:
        yield from self._measured(item)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[None]:
        yield from self._measured(item)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Iterator[None]:
        yield from self._measured(item)
        item.user_properties.append((CPU_PROPERTY, round(self._spent.pop(item.nodeid, 0.0), 3)))

    def _measured(self, item: pytest.Item) -> Iterator[None]:
        start = _cpu_seconds()
        yield
        self._spent[item.nodeid] = self._spent.get(item.nodeid, 0.0) + _cpu_seconds() - start

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown":
            for name, value in report.user_properties:
                if name == CPU_PROPERTY:
                    self._received[report.nodeid] = float(value)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self._received:
            return
        per_file: Counter[str] = Counter()
        for nodeid, seconds in self._received.items():
            per_file[nodeid.split("::")[0]] += seconds
        total = sum(per_file.values())
        write = terminalreporter.write_line
        terminalreporter.section("CPU-seconds (this process and its waited children, per test and per file)")
        write(f"{total:,.1f} CPU-s in {len(self._received)} tests, {len(per_file)} files")
        for path, seconds in per_file.most_common(FILES_SHOWN):
            write(f"{seconds:9.1f}  {path}")
        write("costliest tests:")
        for nodeid, seconds in Counter(self._received).most_common(TESTS_SHOWN):
            write(f"{seconds:9.1f}  {nodeid}")
