"""Compile many models for many profiles on a Dask distributed cluster: one task per model x profile.

    python scripts/compile_many.py MODEL... --targets lowpower,cortex-m4f -o OUT [--scheduler ADDRESS | --workers N]

Each bundle goes to OUT/<model file's stem>/<profile name>/, the same bundle `python -m tvm_ext.compile` writes
(`tvm_ext.compile.cluster` says why the task is a whole compile). With --scheduler the tasks run on that scheduler's
workers (`dask scheduler`, then `dask worker ADDRESS` on each machine); without it a local cluster of N worker
processes (default: the machine's cores) is started for this run. Prints one line per bundle as it arrives and
then the wall time. A job that fails prints one stderr line `tvm_ext.compile: error: ...` (the model or its
bundle is at fault) or `tvm_ext.compile: internal error: ...` (ours) and the others go on; exit code 0 when
every bundle is in place, 2 when some job failed by the user's input only, 3 when any failed by our bug.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from printable import printable
from target.tvm_import_hook import leave_torch_out_of_tvm
from tvm_ext.compile.cluster import CompileJob, compile_job, connected, make_job, write_compiled
from tvm_ext.compile import CompileError, default_jobs, fill_bundle_folder
from tvm_ext.compile.output_folder import check_output_folder


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", type=Path, help=".tflite or .onnx model files")
    parser.add_argument("--targets", required=True, help="comma-separated target profiles (names or files)")
    parser.add_argument("-o", "--out", type=Path, default=Path("out"), help="output folder (default: out)")
    parser.add_argument("--force", action="store_true", help="replace non-empty bundle folders")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS", help="a Dask distributed scheduler (tcp://host:8786)")
    where.add_argument("--workers", type=int, default=None, metavar="N",
                       help="worker processes of the local cluster started without --scheduler "
                            "(default: the machine's cores)")
    return parser


@contextmanager
def scheduler_address(scheduler: str | None, workers: int | None) -> Iterator[str]:
    """`scheduler`, or the address of a local cluster of `workers` single-threaded processes, closed on leaving."""
    if scheduler is not None:
        yield scheduler
        return
    from distributed import LocalCluster

    with LocalCluster(n_workers=workers or default_jobs(), threads_per_worker=1, processes=True,
                      dashboard_address=None, silence_logs=logging.ERROR) as cluster:
        yield cluster.scheduler_address


def planned_jobs(models: list[Path], targets: list[str], out: Path, force: bool) -> dict[Path, CompileJob]:
    """Each bundle folder and its job, all checked before any is sent (CompileError otherwise)."""
    jobs: dict[Path, CompileJob] = {}
    for model in models:
        for spec in targets:
            job = make_job(model, spec)
            folder = out / model.stem / job.profile.name
            if folder in jobs:
                raise CompileError(f"{model.name}: {folder} is also the folder of {jobs[folder].model_file} for "
                                   f"{job.profile.name}; give models with different file stems")
            check_output_folder(folder, model, model.name, force)
            jobs[folder] = job
    return jobs


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    leave_torch_out_of_tvm()  # as the command line: a compile uses no PyTorch, whose import is most of TVM's
    targets = [spec for spec in args.targets.split(",") if spec]
    start = time.perf_counter()
    try:
        jobs = planned_jobs(args.models, targets, args.out, args.force)
    except CompileError as err:
        print(f"tvm_ext.compile: error: {err}", file=sys.stderr)
        return 2
    codes = []
    with scheduler_address(args.scheduler, args.workers) as address, connected(address, "compile_many") as client:
        from distributed import as_completed

        folder_of = {client.submit(compile_job, job, pure=False): folder for folder, job in jobs.items()}
        for future in as_completed(folder_of, loop=client.loop):
            folder, job = folder_of[future], jobs[folder_of[future]]
            try:
                compiled = future.result()
                bundle = fill_bundle_folder(folder, job.model_file, None, args.force,
                                            lambda staging: write_compiled(staging, compiled, job.model_file))
            except CompileError as err:
                codes.append(2)
                print(f"tvm_ext.compile: error: {err}", file=sys.stderr)
                continue
            except Exception as err:  # noqa: BLE001 - any other failure (SelftestMismatchError...) is our bug
                codes.append(3)
                print(printable(f"tvm_ext.compile: internal error: {job.model_file} for {job.profile.name}: "
                                f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"),
                      file=sys.stderr)
                continue
            print(printable(f"{job.model_file:<28} {job.profile.name:<14} {time.perf_counter() - start:7.1f} s  "
                            f"arena {bundle.arena_bytes:,} B, self-test "
                            f"{'PASS' if bundle.selftest.passed else 'FAIL'} -> {folder}"), flush=True)
    print(f"{len(jobs) - len(codes)} of {len(jobs)} bundles in {time.perf_counter() - start:.1f} s wall")
    return max(codes, default=0)


if __name__ == "__main__":
    sys.exit(main())
