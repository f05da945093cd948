"""Reference outputs from an independent runtime, for the bundle's embedded self-test.

Float TFLite models run on LiteRT, int8 TFLite models on TFLite Micro (the golden for integer kernels),
ONNX models on onnxruntime. The compiler's own output is never used as the expected output.
"""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import numpy as np

from tvm_ext.frontend import TensorSpec


def test_inputs(specs: list[TensorSpec], seed: int = 0) -> list[np.ndarray]:
    """Deterministic inputs: floats uniform in [-1, 1), bools uniform, 1-byte integers uniform over the
    type's range, wider integers in [0, 10)."""
    rng = np.random.default_rng(seed)
    arrays = []
    for spec in specs:
        dtype = np.dtype(spec.dtype)
        if dtype.kind == "b":
            arrays.append(rng.integers(0, 2, spec.shape).astype(dtype))
        elif dtype.kind == "f":
            arrays.append(rng.uniform(-1.0, 1.0, spec.shape).astype(dtype))
        elif dtype.kind in "iu" and dtype.itemsize == 1:
            info = np.iinfo(dtype)
            arrays.append(rng.integers(info.min, info.max + 1, spec.shape).astype(dtype))
        else:
            arrays.append(rng.integers(0, 10, spec.shape).astype(dtype))
    return arrays


def _is_integer_model(specs: list[TensorSpec]) -> bool:
    return any(np.dtype(s.dtype).kind in "iu" for s in specs)


class ReferenceRuntimeError(Exception):
    """The reference runtime cannot run the model; the message names the runtime and its complaint."""


def run_reference(path: Path, model_format: str, inputs: list[np.ndarray], input_specs: list[TensorSpec],
                  num_outputs: int) -> tuple[list[np.ndarray], str]:
    """The reference runtime's outputs for `inputs`, and the runtime's name and version."""
    if model_format == "onnx":
        runner, runtime = (lambda: _run_onnxruntime(path, inputs, input_specs)), "onnxruntime"
    elif _is_integer_model(input_specs):
        runner, runtime = (lambda: _run_tflite_micro(path, inputs, num_outputs)), "TFLite Micro"
    else:
        runner, runtime = (lambda: _run_litert(path, inputs)), "LiteRT"
    try:
        return runner()
    except Exception as err:  # noqa: BLE001 - each runtime raises its own types; all mean "cannot run it"
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ReferenceRuntimeError(f"{path.name}: the reference runtime {runtime} cannot run the model: {detail}") from err


def run_relax_vm(mod, inputs: list[np.ndarray]) -> tuple[list[np.ndarray], str]:
    """Outputs of a user's Relax module on TVM's own Relax VM, compiled with LLVM for the host.

    The reference for modules that come from no model file: the same graph through a different code
    generator and executor than the bundle's.
    """
    import tvm
    from tvm import relax

    executable = relax.build(mod, target="llvm")
    vm = relax.VirtualMachine(executable, tvm.cpu())
    result = vm["main"](*[tvm.runtime.tensor(x) for x in inputs])
    fields = [result] if hasattr(result, "numpy") else list(result)
    return [f.numpy() for f in fields], f"TVM {tvm.__version__} Relax VM (llvm)"


def _run_onnxruntime(path: Path, inputs: list[np.ndarray], specs: list[TensorSpec]):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # errors only: its warnings about old opsets are not ours to print
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    feeds = {spec.name: value for spec, value in zip(specs, inputs)}
    return session.run(None, feeds), f"onnxruntime {onnxruntime.__version__}"


def _run_litert(path: Path, inputs: list[np.ndarray]):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    # The reference kernels, not XNNPACK: the reference is the one LiteRT documents as exact.
    interpreter = Interpreter(model_path=str(path), experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    interpreter.allocate_tensors()
    for detail, value in zip(interpreter.get_input_details(), inputs):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    outputs = [interpreter.get_tensor(d["index"]).copy() for d in interpreter.get_output_details()]
    return outputs, f"LiteRT {version('ai-edge-litert')}"


def _run_tflite_micro(path: Path, inputs: list[np.ndarray], num_outputs: int):
    from tflite_micro import runtime

    interpreter = runtime.Interpreter.from_file(str(path))
    for index, value in enumerate(inputs):
        interpreter.set_input(value, index)
    interpreter.invoke()
    outputs = [np.array(interpreter.get_output(index)).copy() for index in range(num_outputs)]
    return outputs, f"TFLite Micro (tflite-micro {version('tflite-micro')})"
