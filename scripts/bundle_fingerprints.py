"""Fingerprint every bundle of the shared models on every profile, to show a change left them byte-identical.

    python scripts/bundle_fingerprints.py record FINGERPRINTS.json [--models DIR] [--targets a,b] [--workers N]
                                          [--repo CHECKOUT] [--no-build]
    python scripts/bundle_fingerprints.py compare BEFORE.json AFTER.json

`record` compiles each `.tflite`/`.onnx` under the models folder (default: ../shared/models or $TVM_EXT_MODELS)
for each profile (default: every built-in profile) with the CLI, each in a folder of its own, and writes for each
model x profile either the SHA-256 of every file of the bundle (the archive excepted: it holds the same files)
or the one error line of a refusal. `compare` prints every bundle whose files differ, appeared or disappeared,
and every refusal that changed, and exits 1 when any did. A benchmark-style script, not a test: recording every
pair takes tens of minutes.

`--repo` runs the compiler of another checkout (a worktree of an older commit, say), so one copy of this script
fingerprints both sides of a change. `--no-build` passes `--no-build` to the compile: every generated file
(sources, headers, build files, manifest, reports) is fingerprinted without building or running the self-test,
which makes a run over every pair several times shorter; the library and the measured figures then go unchecked.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SKIPPED_SUFFIXES = (".tar.gz",)
"""Files left out of a fingerprint: the archive holds the bundle's other files again."""


def default_models() -> Path:
    return Path(os.environ.get("TVM_EXT_MODELS", REPO.parent / "shared" / "models"))


def builtin_profiles() -> list[str]:
    return sorted(path.stem for path in (REPO / "target" / "profiles").glob("*.toml"))


def bundle_digest(folder: Path) -> dict[str, str]:
    """SHA-256 of each file under `folder`, by its path relative to `folder` (the archive left out)."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.name.endswith(SKIPPED_SUFFIXES)
    }


def fingerprint(model: Path, target: str, scratch: Path, repo: Path, build: bool) -> dict[str, object]:
    """Compile `model` for `target` with the compiler of the checkout `repo` into a fresh folder under `scratch`
    (built and self-tested unless `build` is false): its digest, or its refusal line."""
    out = scratch / f"{model.stem}--{target}"
    command = [sys.executable, "-m", "tvm_ext.compile", str(model), "--target", target, "-o", str(out), "--jobs", "1"]
    if not build:
        command.append("--no-build")
    completed = subprocess.run(command, cwd=repo, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        lines = completed.stderr.strip().splitlines()
        return {"exit_code": completed.returncode, "error": lines[-1] if lines else ""}
    return {"exit_code": 0, "files": bundle_digest(out)}


def record(destination: Path, models_dir: Path, targets: list[str], workers: int, repo: Path, build: bool) -> None:
    models = sorted(p for p in models_dir.rglob("*") if p.suffix in (".tflite", ".onnx"))
    pairs = [(model, target) for model in models for target in targets]
    with tempfile.TemporaryDirectory(prefix="fingerprints-") as scratch, ThreadPoolExecutor(workers) as pool:
        results = pool.map(lambda pair: fingerprint(pair[0], pair[1], Path(scratch), repo, build), pairs)
        table: dict[str, object] = {}
        for (model, target), result in zip(pairs, results):
            key = f"{model.relative_to(models_dir)} @ {target}"
            table[key] = result
            print(f"{key}: {'bundle' if result['exit_code'] == 0 else result['error']}", flush=True)
    destination.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")


def compare(before_path: Path, after_path: Path) -> int:
    before, after = json.loads(before_path.read_text()), json.loads(after_path.read_text())
    changed = 0
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        changed += 1
        if old is None or new is None:
            print(f"{key}: only in {'after' if old is None else 'before'}")
        elif "files" in old and "files" in new:
            files = sorted(f for f in set(old["files"]) | set(new["files"])
                           if old["files"].get(f) != new["files"].get(f))
            print(f"{key}: {len(files)} files differ: {', '.join(files)}")
        else:
            print(f"{key}: {old.get('error', 'bundle')!r} -> {new.get('error', 'bundle')!r}")
    print(f"{len(set(before) | set(after))} model x profile pairs, {changed} changed")
    return 1 if changed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    recording = verbs.add_parser("record")
    recording.add_argument("destination", type=Path)
    recording.add_argument("--models", type=Path, default=default_models())
    recording.add_argument("--targets", default=",".join(builtin_profiles()))
    recording.add_argument("--workers", type=int, default=2)
    recording.add_argument("--repo", type=Path, default=REPO, help="the checkout whose compiler runs (default: this one)")
    recording.add_argument("--no-build", dest="build", action="store_false",
                           help="fingerprint the generated files only, without building or self-testing")
    comparing = verbs.add_parser("compare")
    comparing.add_argument("before", type=Path)
    comparing.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.verb == "record":
        record(args.destination, args.models, args.targets.split(","), args.workers, args.repo.resolve(), args.build)
        return 0
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
