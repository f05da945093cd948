"""Index operators with indices from a model input: an index of 1000 on a size-10 axis makes `<model>_run`
return <MODEL>_ERROR_INDEX_OUT_OF_RANGE and writes nothing (issue 26, section 1), on the host under
AddressSanitizer and UndefinedBehaviorSanitizer and on QEMU's Cortex-M4F; valid indices (ONNX's negative
ones too) still give the reference runtime's output; a constant index outside its axis is refused at compile
time without running the operator on the host.
"""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from c_checks import strict_sanitized_selftest
from conftest import profile_target, run_cli
from index_models import INDEX_CASES, IndexCase, driver_source
from tvm_ext.frontend import TensorSpec
from tvm_ext.reference.outputs import ReferenceRuntimeError, run_reference

CASES = [pytest.param(case, id=case.name) for case in INDEX_CASES]


def _reference(case: IndexCase, folder: Path, inputs: tuple[np.ndarray, ...]) -> np.ndarray:
    path = case.write(folder)
    specs = [TensorSpec(name, x.shape, str(x.dtype)) for name, x in zip(case.input_names, inputs)]
    return run_reference(path, path.suffix[1:], list(inputs), specs, 1)[0][0]


def _driver(case: IndexCase, bundle, folder: Path) -> str:
    return driver_source(bundle.plan.model, case.good, case.bad, _reference(case, folder, case.good))


@pytest.mark.parametrize("case", CASES)
def test_a_bad_index_returns_the_status_and_writes_nothing_under_sanitizers(case, compiled, tmp_path):
    """What the reference runtime does (onnxruntime, TFLite Micro: an error for the index 1000), the bundle
    does: the index status, and no byte written."""
    with pytest.raises(ReferenceRuntimeError):
        _reference(case, tmp_path, case.bad)
    bundle = compiled(case.write)
    assert bundle.selftest.passed  # the self-test's own (valid) indices
    header = (bundle.out_dir / f"{bundle.plan.model}.h").read_text()
    assert f"#define {bundle.plan.model.upper()}_ERROR_INDEX_OUT_OF_RANGE 4 " in header
    run = strict_sanitized_selftest(bundle.out_dir, tmp_path / "build", selftest_source=_driver(case, bundle, tmp_path))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "bad index status 4, valid status 0, output as expected" in run.stdout


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_a_bad_index_returns_the_status_and_writes_nothing_on_qemu(case, compiled, tmp_path):
    from emulator.qemu import run_qemu
    from emulator.selftest import build_selftest_elf

    bundle = compiled(case.write, "cortex-m4f")
    copy = tmp_path / "bundle"
    shutil.copytree(bundle.out_dir, copy)
    (copy / "selftest.c").write_text(_driver(case, bundle, tmp_path))
    result = run_qemu(build_selftest_elf(copy), profile_target("cortex-m4f").board, timeout_s=120)
    assert result.exit_status == 0, f"ended with {result.ending()}: {result.stdout}"
    assert "bad index status 4, valid status 0, output as expected" in result.stdout


def _onnx(path: Path, nodes: list, inputs: list, outputs: list, initializers: list) -> Path:
    graph = helper.make_graph(nodes, path.stem, inputs, outputs, initializers)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), str(path))
    return path


def test_a_constant_index_outside_its_axis_is_refused_in_one_line(tmp_path, cli_in_process):
    path = _onnx(tmp_path / "constant_gather.onnx", [helper.make_node("Gather", ["x", "i"], ["y"], name="pick")],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [10, 4])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
                 [numpy_helper.from_array(np.array([3, 1000], np.int64), "i")])
    result = cli_in_process(str(path), "-o", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        "tvm_ext.compile: error: constant_gather.onnx: operator Gather at layer pick (Gather): index 1000 is "
        "outside [0, 10) (a constant index)")
    assert not (tmp_path / "out").exists()


def test_constant_folding_never_runs_a_scatter_with_a_bad_constant_index_on_the_host(tmp_path):
    """All of ScatterElements' operands constant: TVM's FoldConstant ran its lowering on the host, which
    wrote at the index 10^8 in the compiler's own memory (a segmentation fault, exit -11)."""
    path = _onnx(tmp_path / "folded_scatter.onnx",
                 [helper.make_node("ScatterElements", ["d", "i", "u"], ["s"], name="scatter", axis=1),
                  helper.make_node("Add", ["s", "x"], ["y"])],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 10])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
                 [numpy_helper.from_array(np.zeros((1, 10), np.float32), "d"),
                  numpy_helper.from_array(np.array([[100_000_000]], np.int64), "i"),
                  numpy_helper.from_array(np.ones((1, 1), np.float32), "u")])
    result = run_cli(str(path), "-o", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1].endswith(
        "operator ScatterElements at layer scatter (ScatterElements): index 100000000 is outside [-10, 10) "
        "(a constant index)")


def test_an_index_operator_whose_reads_cannot_be_checked_is_refused_naming_it(tmp_path, cli_in_process):
    """RoiAlign's kernel loops as many times as its regions' coordinates say: nothing bounds it."""
    path = _onnx(tmp_path / "roi.onnx",
                 [helper.make_node("RoiAlign", ["x", "r", "b"], ["y"], name="roi", output_height=2, output_width=2)],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4]),
                  helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, 4]),
                  helper.make_tensor_value_info("b", TensorProto.INT64, [1])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 2, 2])], [])
    result = cli_in_process(str(path), "-o", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        "tvm_ext.compile: error: roi.onnx: operator RoiAlign at layer roi (RoiAlign) is refused: its kernel loops "
        "a number of times read from tensor data (no bound to check)")


def test_argmax_indices_feed_a_gather(tmp_path):
    """An index computed by the model (ArgMax) reaches Gather as a checked index; the ArgMax kernel's int64
    loop once made the stream-order analysis fail (exit 3)."""
    from tvm_ext.compile import compile

    path = _onnx(tmp_path / "argmax_gather.onnx",
                 [helper.make_node("ArgMax", ["x"], ["i"], axis=0, keepdims=0),
                  helper.make_node("Gather", ["t", "i"], ["y"])],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [10])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
                 [numpy_helper.from_array(np.arange(40, dtype=np.float32).reshape(10, 4), "t")])
    bundle = compile(path, "lowpower", tmp_path / "out")
    assert bundle.selftest.passed
    assert any(call.checks_indices for call in bundle.plan.calls)


# ---------------------------------------------------------------------------------------------------------
# The divergence of issue 26: a model that onnxruntime runs with valid indices and the bundle with bad ones.


@functools.cache
def _bundle_expf():
    """The bundle's own expf (packager/templates/float_math_expf.h.in, which its kernels call), built on the
    host into a shared library: a ctypes function of a float."""
    import ctypes
    import subprocess
    import tempfile

    from packager.fixed_point_c import EXPF, requantize_helpers_c

    with tempfile.TemporaryDirectory() as folder:
        source, library = Path(folder) / "expf.c", Path(folder) / "expf.so"
        source.write_text(requantize_helpers_c("t", [EXPF]) + "float call_expf(float x) { return t_expf(x); }\n")
        subprocess.run(["gcc", "-std=c99", "-O2", "-shared", "-fPIC", str(source), "-o", str(library)], check=True)
        expf = ctypes.CDLL(str(library)).call_expf
    expf.restype, expf.argtypes = ctypes.c_float, [ctypes.c_float]
    return expf


def _diverging_exponent() -> tuple[np.float32, np.float32]:
    """(c, onnxruntime's Exp(c)) for a float32 c whose exp onnxruntime rounds away from the correctly rounded
    value, which the bundle's expf gives (within 1 ULP on every core, so only a c whose exp it rounds correctly
    is taken; c's exp is not near a rounding midpoint)."""
    import onnxruntime

    graph = helper.make_graph([helper.make_node("Exp", ["x"], ["y"])], "exp",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for c in np.linspace(-4, 4, 4001, dtype=np.float32):
        exact = np.exp(np.float64(c))
        rounded = np.float32(exact)
        ulp = float(np.spacing(rounded))
        if abs(exact - float(rounded)) > 0.3 * ulp:  # near a midpoint: expf implementations may round either way
            continue
        ours = session.run(None, {"x": np.array([c], np.float32)})[0][0]
        if ours != rounded and np.float32(_bundle_expf()(float(c))) == rounded:
            return c, ours
    raise AssertionError("no float32 in [-4, 4] whose Exp onnxruntime rounds differently from expf")


def write_divergence_model(folder: Path) -> Path:
    """y = ScatterElements(zeros, Where(Exp(x * 0 + c) == e, valid, bad), ones), e onnxruntime's Exp(c):
    onnxruntime picks the valid indices, a bundle whose expf rounds Exp(c) correctly picks the index 1000."""
    c, exp_c = _diverging_exponent()
    constants = {"zero": np.zeros(1, np.float32), "c": np.array([c], np.float32), "e": np.array([exp_c], np.float32),
                 "valid": np.array([[1, 4, 7]], np.int64), "bad": np.array([[1, 1000, 7]], np.int64),
                 "data": np.zeros((1, 10), np.float32), "updates": np.ones((1, 3), np.float32)}
    nodes = [helper.make_node("Mul", ["x", "zero"], ["x0"]), helper.make_node("Add", ["x0", "c"], ["cc"]),
             helper.make_node("Exp", ["cc"], ["exp"]), helper.make_node("Equal", ["exp", "e"], ["same"]),
             helper.make_node("Where", ["same", "valid", "bad"], ["indices"]),
             helper.make_node("ScatterElements", ["data", "indices", "updates"], ["y"], name="scatter", axis=1)]
    return _onnx(folder / "diverge.onnx", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
                 [numpy_helper.from_array(value, name) for name, value in constants.items()])


@pytest.mark.parametrize("target", ["lowpower", pytest.param("cortex-m4f", marks=pytest.mark.slow)])
def test_the_exp_divergence_ends_as_a_failed_self_test_not_an_out_of_bounds_write(target, tmp_path):
    """The bundle computes the bad index the reference never saw: its run call returns the index status (no
    write at 1000), so the compile fails its self-test and leaves no bundle."""
    from tvm_ext.compile import SelftestMismatchError, compile

    path = write_divergence_model(tmp_path)
    with pytest.raises(SelftestMismatchError, match="got an error status from the bundle.s run call"):
        compile(path, target, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_indices_from_an_input_on_a_short_axis_get_self_test_values_inside_it(tmp_path):
    """The self-test's integer inputs lie in [0, 10): an index input on an axis of 5 made onnxruntime refuse
    the self-test's input, so no such model compiled; it now draws that input's values inside the axis."""
    from tvm_ext.compile import compile

    path = _onnx(tmp_path / "short_axis.onnx", [helper.make_node("GatherElements", ["x", "i"], ["y"], axis=1)],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5]),
                  helper.make_tensor_value_info("i", TensorProto.INT64, [2, 6])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 6])], [])
    assert compile(path, "lowpower", tmp_path / "out").selftest.passed


def _reverse_sequence(folder: Path, lengths: list[int]) -> Path:
    """TFLite REVERSE_SEQUENCE of a 2 x 10 input along its axis of 10, with constant sequence lengths."""
    from tflite_builder import Model, Operator, Options, Tensor, build

    model = Model([Tensor("x", (2, 10), "float32"), Tensor("lengths", (2,), "int32", data=np.array(lengths, np.int32)),
                   Tensor("y", (2, 10), "float32")],
                  [Operator("REVERSE_SEQUENCE", (0, 1), (2,),
                            Options("ReverseSequenceOptions", {"SeqDim": 1, "BatchDim": 0}))], (0,), (2,))
    folder.mkdir(exist_ok=True)
    path = folder / "reverse.tflite"
    path.write_bytes(build(model))
    return path


def test_constant_sequence_lengths_are_checked_at_compile_time(tmp_path, cli_in_process):
    """TVM's REVERSE_SEQUENCE kernel picks its source with if_then_else over the lengths: a length of 10
    compiles (no run-time check: constants), one of 20 on the axis of 10 is refused in one line."""
    from tvm_ext.compile import compile

    bundle = compile(_reverse_sequence(tmp_path / "ok", [3, 10]), "lowpower", tmp_path / "ok" / "out")
    assert bundle.selftest.passed and not any(call.checks_indices for call in bundle.plan.calls)
    result = cli_in_process(str(_reverse_sequence(tmp_path, [3, 20])), "-o", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1].endswith(
        "operator REVERSE_SEQUENCE at layer y (REVERSE_SEQUENCE): index 20 is outside [0, 11) (a constant index)")
