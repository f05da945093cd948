"""Compile time with --jobs 1 and --jobs 2 (a benchmark, not a test): wall and CPU seconds per run, the speedup.

    python scripts/bench_compile.py [MODEL ...] [--target lowpower] [--repeat 3]

Each run is a fresh `python -m tvm_ext.compile MODEL --jobs N` (TVM's import included, as a user waits for
it); CPU seconds are the run's and its children's (workers, reference runtime, C compiler), and each row
gives the 1-minute load average before it. Default models: vww_96_int8, pretrainedResnet_quant and
kws_ref_model from the shared models. Each run's stage lines (wall and CPU seconds) follow its row, as
printed. The speedup is the median wall time with --jobs 1 over the median with --jobs 2; on a machine
others load, compare the CPU seconds too: wall times then measure the load as much as the compiler.
"""

from __future__ import annotations

import argparse
import os
import statistics
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODELS = Path(os.environ.get("TVM_EXT_MODELS", REPO.parent / "shared" / "models"))
DEFAULT_MODELS = [MODELS / f"mlperf_tiny/{name}.tflite"
                  for name in ("vww_96_int8", "pretrainedResnet_quant", "kws_ref_model")]


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_compile(model: Path, target: str, jobs: int) -> tuple[float, float, list[str]]:
    """(wall seconds, CPU seconds, the stage lines) of one compile of `model` with `--jobs jobs`."""
    with tempfile.TemporaryDirectory() as folder:
        command = [sys.executable, "-m", "tvm_ext.compile", str(model), "--target", target, "--jobs", str(jobs),
                   "-o", str(Path(folder) / "out")]
        cpu_before, start = children_cpu_seconds(), time.perf_counter()
        done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
        wall, cpu = time.perf_counter() - start, children_cpu_seconds() - cpu_before
    if done.returncode != 0:
        raise SystemExit(f"{model.name} --jobs {jobs}: exit {done.returncode}: {done.stderr.strip()}")
    return wall, cpu, [line for line in done.stdout.splitlines() if line.startswith("[tvm_ext] ")][:-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", type=Path, default=DEFAULT_MODELS)
    parser.add_argument("--target", default="lowpower")
    parser.add_argument("--repeat", type=int, default=1, help="runs per model and number of jobs")
    args = parser.parse_args()
    print(f"{'model':<24} {'jobs':>4} {'wall s':>7} {'CPU s':>7} {'load':>5}")
    speedups = []
    for model in args.models:
        walls: dict[int, list[float]] = {1: [], 2: []}
        for _ in range(args.repeat):
            for jobs in walls:
                load = os.getloadavg()[0]
                wall, cpu, stages = timed_compile(model, args.target, jobs)
                walls[jobs].append(wall)
                print(f"{model.stem:<24} {jobs:>4} {wall:>7.2f} {cpu:>7.2f} {load:>5.1f}", flush=True)
                for line in stages:
                    print(f"{'':<30}{line}")
        speedups.append((model.stem, statistics.median(walls[1]) / statistics.median(walls[2])))
    for name, speedup in speedups:
        print(f"{name:<24} speedup of --jobs 2 over --jobs 1: {speedup:.2f}x (median wall)")


if __name__ == "__main__":
    main()
