"""tvm_ext: TFLite/ONNX models to framework-free C bundles for low-power processors, as a TVM plugin.

Importing this package does not import TVM. The execution plan it produces (`memory_planner.plan`) is plain
data that `memory_planner` and `packager` use without importing TVM or tvm_ext. The public API:

- `tvm_ext.compile(model, target="lowpower", out="out") -> Bundle`: a .tflite/.onnx file or a Relax IRModule
  to a built and self-tested bundle folder (also the command `tvm-ext-compile`, or
  `python -m tvm_ext.compile`).
- `tvm_ext.pipeline(target="lowpower") -> tvm.transform.Sequential`: every pass we run, in order (the one
  list of tvm_ext/lower.py), for your own pipelines; `tvm_ext.compile` takes its result as it is;
  `tvm_ext.transform` holds each of our passes.
- The device profiles are TVM target tags (`tvm.target.Target("lowpower-cortex-m4f")`), registered as soon
  as both `tvm_ext` and `tvm` are imported, in either order (see target/tvm_import_hook.py).
"""

from __future__ import annotations
from tvm_ext.processes import command_process as _command_process
_command_process.prepare_if_compile_command()  # before our packages load: see tvm_ext/processes/command_process.py

from typing import Any

from target.tvm_import_hook import register_when_tvm_is_imported
from tvm_ext.compile import Bundle, CompileError, compile  # noqa: A004 - the public name users expect

# Now if TVM is loaded, else right after `import tvm` runs: without loading TVM here.
register_when_tvm_is_imported()

__all__ = ["Bundle", "CompileError", "compile", "pipeline", "transform"]


def __getattr__(name: str) -> Any:
    """Load the TVM-facing parts (and TVM itself) only when they are asked for."""
    if name == "pipeline":
        from tvm_ext.lower import pipeline

        return pipeline
    if name == "transform":
        import importlib

        return importlib.import_module("tvm_ext.transform")
    raise AttributeError(f"module 'tvm_ext' has no attribute {name!r}")
