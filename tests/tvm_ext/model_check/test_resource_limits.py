"""Resource limits checked before TVM sees the model, each refused in one line with exit 2: the operator count,
the constant data together (not only each tensor), the inputs and outputs the self-test embeds (model check,
tvm_ext.model_check.limits), and the inputs, outputs and state the chosen profile's SRAM must hold
(target.check_io_fits, before the import). The hostile model files themselves are in tests/fuzz_corpus.py.

Before: a 75-byte ONNX file with a 64 MiB input and output compiled for 5 minutes into a 480 MB selftest.c;
four 64 MiB constants passed the per-tensor bound; a bundle whose inputs and outputs alone exceed the
profile's SRAM was built and called fitting."""

from __future__ import annotations

import pickle

import onnx
import pytest
from onnx import TensorProto, helper

import fuzz_corpus
import target
import tvm_ext
from svdf_models import SvdfSpec, build_svdf_model
from tvm_ext.compile import CompileError, DoesNotFitError
from tvm_ext.compile.__main__ import main
from tvm_ext.model_check import ErrorKind, ModelError, check_model, limits

M0PLUS = target.load_profile("cortex-m0plus")  # 32,768 B SRAM


def _check_error(path) -> ModelError:
    with pytest.raises(ModelError) as raised:
        check_model(path)
    assert raised.value.kind is ErrorKind.RESOURCES and "\n" not in str(raised.value)
    return raised.value


def test_inputs_and_outputs_exactly_at_the_sram_fit_and_one_byte_more_does_not():
    target.check_io_fits(M0PLUS, "m", 16_384, 16_384, 0, io_in_arena=False)
    with pytest.raises(target.ResourceError) as error:
        target.check_io_fits(M0PLUS, "m", 16_384, 16_384, 1, io_in_arena=False)
    assert str(error.value) == ("m: inputs, outputs and state need 32,769 B of SRAM but cortex-m0plus has 32,768 B "
                                "(1 B over)")


def test_with_io_in_arena_an_input_s_bytes_may_serve_an_output():
    target.check_io_fits(M0PLUS, "m", 30_000, 30_000, 2_768, io_in_arena=True)
    with pytest.raises(target.ResourceError, match="60,000 B of SRAM"):
        target.check_io_fits(M0PLUS, "m", 30_000, 30_000, 0, io_in_arena=False)


def test_the_facts_count_constants_and_state(tmp_path):
    onnx_path = tmp_path / "small.onnx"
    onnx.save(fuzz_corpus.small_onnx_model(), onnx_path)
    facts = check_model(onnx_path)
    assert (facts.weight_bytes, facts.state_bytes) == (4 * (4 * 3 * 3 * 3 + 5 * 144), 0)
    svdf_path = tmp_path / "svdf.tflite"
    svdf_path.write_bytes(build_svdf_model(SvdfSpec(batch=2, units=3, rank=2, memory=5)))
    assert check_model(svdf_path).state_bytes == 2 * (3 * 2 * 5) * 2  # batch x filters x memory, int16


def test_constants_are_bounded_together_not_each(tmp_path, monkeypatch):
    """Each constant within the largest flash, together beyond it (a 1,000-byte flash stands in for 64 MiB)."""
    monkeypatch.setattr(limits, "largest_target_memory", lambda memories=("SRAM", "flash"): (1000, "tiny flash"))
    weights = [helper.make_tensor(f"w{i}", TensorProto.FLOAT, (1, 4), [1.0] * 4) for i in range(2)]
    nodes = [helper.make_node("Add", ["x", "w0"], ["a"]), helper.make_node("Add", ["a", "w1"], ["y"])]
    small = fuzz_corpus._graph_model(nodes, [fuzz_corpus._vector("x")], [fuzz_corpus._vector("y")], weights)
    onnx_path = tmp_path / "two.onnx"
    onnx.save(small, onnx_path)
    check_model(onnx_path)  # 32 bytes
    monkeypatch.setattr(limits, "largest_target_memory", lambda memories=("SRAM", "flash"): (20, "tiny flash"))
    assert str(_check_error(onnx_path)) == (
        "two.onnx: constant data of 32 bytes together, more than the largest target flash (tiny flash, 20 bytes)")
    # TFLite: one 48-byte buffer read through two tensors is two constants of TVM's import.
    spec = fuzz_corpus.TinyTflite()
    spec.tensors.append(fuzz_corpus.TinyTensor("weights_again", (3, 4), fuzz_corpus.FLOAT32, 1))
    spec.tensors.append(fuzz_corpus.TinyTensor("dense2/output", (1, 3), fuzz_corpus.FLOAT32, 0))
    spec.operators.append(fuzz_corpus.TinyOperator(0, (0, 4, 2), (5,), True))
    spec.outputs = (3, 5)
    tflite_path = tmp_path / "shared.tflite"
    tflite_path.write_bytes(fuzz_corpus.build_tflite(spec))
    monkeypatch.setattr(limits, "largest_target_memory", lambda memories=("SRAM", "flash"): (100, "tiny flash"))
    assert "constant data of 108 bytes together" in str(_check_error(tflite_path))


def test_operators_of_control_flow_bodies_count(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "MAX_OPERATORS", 3)
    body = helper.make_graph([helper.make_node("Relu", ["x"], [f"b{i}"]) for i in range(3)], "body", [],
                             [fuzz_corpus._vector("b2")])
    branch = helper.make_node("If", ["cond"], ["y"], then_branch=body, else_branch=body)
    model = fuzz_corpus._graph_model([branch], [fuzz_corpus._vector("x"),
                                                helper.make_tensor_value_info("cond", TensorProto.BOOL, ())],
                                     [fuzz_corpus._vector("y")])
    path = tmp_path / "branches.onnx"
    onnx.save(model, path)
    assert str(_check_error(path)) == "branches.onnx: 7 operators, more than the compiler's limit of 3"


def test_the_cli_refuses_a_75_byte_model_with_64_mib_input_and_output_at_once(tmp_path, capfd):
    path = tmp_path / "huge_io.onnx"
    onnx.save(fuzz_corpus.large_io_relu_onnx(), path)
    assert path.stat().st_size < 100
    assert main([str(path), "-o", str(tmp_path / "out")]) == 2
    lines = capfd.readouterr().err.strip().splitlines()
    assert lines == ["tvm_ext.compile: error: huge_io.onnx: inputs and outputs of 134217728 bytes together, more "
                     f"than the limit of {limits.MAX_IO_BYTES} bytes (the self-test embeds them in selftest.c)"]
    assert not (tmp_path / "out").exists()


def _relu_onnx(path, elements: int):
    shape = (1, elements)
    model = fuzz_corpus._graph_model([helper.make_node("Relu", ["x"], ["y"])], [fuzz_corpus._vector("x", shape)],
                                     [fuzz_corpus._vector("y", shape)])
    onnx.save(model, path)
    return path


def test_inputs_and_outputs_beyond_the_profile_s_sram_are_refused_before_the_import(tmp_path, capfd):
    path = _relu_onnx(tmp_path / "wide.onnx", 65_536)  # 256 KiB in, 256 KiB out
    assert main([str(path), "--target", "cortex-m4f", "-o", str(tmp_path / "out")]) == 2
    captured = capfd.readouterr()
    assert "[tvm_ext] import" not in captured.out
    assert captured.err.strip().splitlines() == [
        "tvm_ext.compile: error: wide.onnx: inputs, outputs and state need 524,288 B of SRAM but cortex-m4f has "
        "262,144 B (262,144 B over)"]


def test_a_quantized_bundle_s_inputs_and_outputs_count_a_byte_per_element(tmp_path):
    path = _relu_onnx(tmp_path / "wide.onnx", 40_000)  # int8: 40,000 B each side, held in turn with io_in_arena
    with pytest.raises(DoesNotFitError, match="inputs, outputs and state need 40,000 B of SRAM but cortex-m0plus") \
            as refused:
        tvm_ext.compile(path, "cortex-m0plus", tmp_path / "out", quantize="int8", calibration="random")
    assert refused.value.overruns == (target.Overrun("SRAM", 40_000, 32_768),)  # as data, for scripts
    again = pickle.loads(pickle.dumps(refused.value))  # as the tests' session cache keeps a refusal
    assert (type(again), str(again), again.overruns) == (DoesNotFitError, str(refused.value), refused.value.overruns)


def test_a_relax_module_is_held_to_the_self_test_s_limit(tmp_path):
    from tvm.relax.frontend.onnx import from_onnx

    module = from_onnx(fuzz_corpus.large_io_relu_onnx(), keep_params_in_input=False)
    with pytest.raises(CompileError, match=r"^big\.relax: inputs and outputs of 134217728 bytes together"):
        tvm_ext.compile(module, "lowpower", tmp_path / "out", name="big")
    assert not (tmp_path / "out").exists()
