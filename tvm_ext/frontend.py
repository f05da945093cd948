"""Import a TFLite or ONNX model with TVM's own frontends, keeping the model's layer names.

TVM's frontends drop the model's layer names. We keep them by binding the value each model operator
returns to a Relax variable named `layer<N>` (N indexes `ImportedModel.layers`); `tvm_ext.layers` later
attributes every kernel call to the layers it implements.
"""

from __future__ import annotations

import re
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import tvm
from tvm import relax

LAYER_VAR_PREFIX = "layer"


@dataclass(frozen=True)
class TensorSpec:
    """A model input or output as the model file declares it."""

    name: str
    shape: tuple[int, ...]
    dtype: str


@dataclass
class ImportedModel:
    """A model in Relax, with what the file says about it."""

    name: str  # C identifier derived from the file name
    path: Path
    format: str  # "tflite" or "onnx"
    mod: tvm.IRModule
    layers: list[str]  # layers[N] is the model layer bound to Relax vars named `layer<N>`
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    operator_names: list[str] = field(default_factory=list)  # TFLite: a name per operator index


class ModelImportError(Exception):
    """The frontend could not import the model; the message names the model and the operator."""


# C99/C11/C23 keywords, and C++'s (the header is `extern "C"` for C++ callers).
_KEYWORDS = frozenset("""
    auto break case char const continue default do double else enum extern float for goto if inline int long
    register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while
    alignas alignof bool constexpr false nullptr static_assert thread_local true typeof typeof_unqual
    asm catch class const_cast delete dynamic_cast explicit export friend mutable namespace new noexcept operator
    private protected public reinterpret_cast template this throw try typeid typename using virtual
    main
""".split())
# Prefixes the bundle's names `<prefix>_...` and `<PREFIX>_...` must not start with: our own self-test and
# Cortex-M support names, and the names C reserves or keeps for its library (C23 7.33: int*_t, is*, to*,
# str*, mem*, wcs*, SIG*, LC_*, PRI*, SCN*, FE_*, FP_*, INT*/UINT* macros, threads and atomics).
# (E<upper> macros, kept for <errno.h>, are not listed: the bundle never includes <errno.h>.)
_RESERVED_PREFIX = re.compile(
    r"^(selftest|lp_|u?int|is[a-z]|to[a-z]|str[a-z]|mem[a-z]|wcs[a-z]|atomic_|cnd_|mtx_|thrd_|tss_"
    r"|sig|lc_|pri|scn|fe_|fp_|e[0-9])",
    re.IGNORECASE,
)
_FALLBACK_PREFIX = "model_"


def c_identifier(text: str) -> str:
    """`text` (a file name) made into the bundle's C prefix: non-alphanumerics become `_`; a prefix that is
    empty, starts with a digit, is a keyword or starts like a reserved or bundle-internal name gets
    `model_` in front. So `<prefix>_run`, `<PREFIX>_ARENA_BYTES`, ... never hit a C or C++ keyword, a
    reserved identifier or a name the self-test uses."""
    ident = re.sub(r"[^0-9A-Za-z_]", "_", text).strip("_")
    if not ident or ident[0].isdigit() or ident.lower() in _KEYWORDS or _RESERVED_PREFIX.match(ident):
        return f"{_FALLBACK_PREFIX}{ident}".rstrip("_")
    return ident


def tflite_name(raw: bytes | None) -> str:
    """A TFLite name (flatbuffer bytes, any encoding) as text: UTF-8, with every byte that is not valid
    UTF-8 written `\\xNN` (lossless and visible). The one place TFLite names are decoded."""
    return (raw or b"").decode("utf-8", errors="backslashreplace")


def import_model(path: str | Path, name: str | None = None) -> ImportedModel:
    """Import a `.tflite` or `.onnx` file into Relax; raise ModelImportError naming what failed.

    `name` (default: the file name's stem) becomes the bundle's C prefix, made a C identifier.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".tflite", ".onnx"):
        imported = _import_tflite(path) if suffix == ".tflite" else _import_onnx(path)
        imported.name = c_identifier(name or path.stem)
        imported.mod = with_generated_var_names(imported.mod)
        return imported
    raise ModelImportError(f"{path.name}: unknown model format '{suffix}' (expected .tflite or .onnx)")


def from_relax(mod: tvm.IRModule, name: str = "model") -> ImportedModel:
    """Wrap a Relax module a user built (BlockBuilder, a frontend, their own passes) as an imported model.

    `main` must take tensors of static shape and return a tensor or a tuple of tensors. Layer names come from
    vars named `layer<N>` when the module has them (`tvm_ext.layers` attribute), else calls are unnamed.
    """
    main = mod["main"]

    def spec(var_name: str, ty) -> TensorSpec:
        if not isinstance(ty, relax.TensorType) or ty.shape is None:
            raise ModelImportError(f"{name}: {var_name} is not a tensor of static shape")
        return TensorSpec(var_name, tuple(int(d) for d in ty.shape.values), str(ty.dtype))

    ret = main.ret_ty
    ret_fields = list(ret.fields) if isinstance(ret, relax.TupleType) else [ret]
    layers = [str(n) for n in (main.attrs or {}).get("tvm_ext.layers", [])]
    return ImportedModel(
        name=c_identifier(name),
        path=Path(f"{name}.relax"),
        format="relax",
        mod=with_generated_var_names(mod),
        layers=layers,
        inputs=[spec(p.name, p.ty) for p in main.params],
        outputs=[spec(f"output{i}", ty) for i, ty in enumerate(ret_fields)],
    )


_OUR_LAYER_VAR = re.compile(rf"{LAYER_VAR_PREFIX}\d+$")


@relax.expr_functor.mutator
class _GeneratedVarNames(relax.PyExprMutator):
    """Renames every var of a function whose name is not one of our `layer<N>`: parameters `input<i>`, the
    rest `v<n>`, in visiting order. TVM's frontends name vars after the model's tensors, and TVM's
    C code generator names kernel buffers and parameters after vars: after this, no model text can."""

    def __init__(self, mod: tvm.IRModule, params: list[relax.Var]) -> None:
        super().__init__(mod)
        self.params = params
        self.renamed = 0

    def _rename(self, var: relax.Var, make) -> relax.Var:
        if _OUR_LAYER_VAR.match(var.name):
            return var
        index = next((i for i, p in enumerate(self.params) if p.same_as(var)), None)
        name = f"input{index}" if index is not None else f"v{self.renamed}"
        self.renamed += index is None
        new = make(name, var.ty)
        self.set_var_remap(var, new)
        return new

    def visit_var_def_(self, var: relax.Var) -> relax.Var:
        return self._rename(var, relax.Var)

    def visit_dataflow_var_def_(self, var: relax.DataflowVar) -> relax.Var:
        return self._rename(var, relax.DataflowVar)


def with_generated_var_names(mod: tvm.IRModule) -> tvm.IRModule:
    """`mod` with `main`'s vars renamed by `_GeneratedVarNames` (its attributes kept)."""
    main = mod["main"]
    renamed = tvm.IRModule(dict(mod.functions.items()), attrs=mod.attrs)  # the caller's module stays as it was
    renamed["main"] = _GeneratedVarNames(mod, list(main.params)).visit_expr(main)
    return renamed


def _layer_var_name(layers: list[str], layer: str) -> str:
    layers.append(layer)
    return f"{LAYER_VAR_PREFIX}{len(layers) - 1}"


def _bind_layer_output(bb: relax.BlockBuilder, value: relax.Expr, layers: list[str], layer: str) -> relax.Expr:
    """Bind an operator's single tensor result to a var named after its layer; leave tuples alone."""
    if isinstance(value, relax.Call):
        value = bb.normalize(value)
        if isinstance(value.ty, relax.TensorType):
            return bb.emit(value, name_hint=_layer_var_name(layers, layer))
    return value


_TFLITE_DTYPES = {0: "float32", 2: "int32", 3: "uint8", 4: "int64", 7: "int16", 9: "int8", 6: "bool"}


def _import_tflite(path: Path) -> ImportedModel:
    import tflite
    from tvm.relax.frontend.tflite import tflite_frontend

    layers: list[str] = []

    class LayerNamingConverter(tflite_frontend.OperatorConverter):
        """TVM's TFLite converter, binding each operator's result to a var named after its layer."""

        def __init__(self, model, subgraph, exp_tab, bb):
            super().__init__(model, subgraph, exp_tab, bb)
            self.convert_map = {op: self._named(fn) for op, fn in self.convert_map.items()}

        def _named(self, convert):
            def convert_and_name(op):
                output_name = tflite_name(self.get_output_tensors(op)[0].tensor.Name())
                # TFLite joins the names of fused graph ops with ';': the first is the layer's own.
                layer = f"{output_name.split(';')[0]} ({self.get_op_code_str(op)})"
                try:
                    result = convert(op=op)
                    return None if result is None else _bind_layer_output(self.bb, result, layers, layer)
                except Exception as err:  # noqa: BLE001 - a conversion or type failure is this operator's
                    raise ModelImportError(f"{path.name}: layer {layer}: {_import_failure(err)}") from err

            return convert_and_name

    buf = path.read_bytes()
    model = tflite.Model.GetRootAsModel(buf, 0)
    strict_tensor_name = tflite_frontend.get_tensor_name
    # TVM's converter decodes tensor names as strict UTF-8 and fails on any other byte: ours never fails.
    tflite_frontend.get_tensor_name = lambda graph, index: tflite_name(graph.Tensors(index).Name()) or f"t{index}"
    try:
        mod = tflite_frontend.from_tflite(model, op_converter=LayerNamingConverter)
    except tvm.error.OpError as err:  # TVM's errors for operators a model gets wrong or TVM lacks
        raise ModelImportError(f"{path.name}: {_first_line(err)}") from err
    finally:
        tflite_frontend.get_tensor_name = strict_tensor_name
    mod["main"] = mod["main"].with_attr("tvm_ext.layers", layers)
    subgraph = model.Subgraphs(0)
    operator_names = [
        tflite_name(subgraph.Tensors(subgraph.Operators(i).Outputs(0)).Name()).split(";")[0]
        for i in range(subgraph.OperatorsLength())
    ]

    def spec(index: int) -> TensorSpec:
        tensor = subgraph.Tensors(index)
        return TensorSpec(
            tflite_name(tensor.Name()), tuple(int(d) for d in tensor.ShapeAsNumpy()), _TFLITE_DTYPES[tensor.Type()]
        )

    return ImportedModel(
        name=path.stem,
        path=path,
        format="tflite",
        mod=mod,
        layers=layers,
        inputs=[spec(i) for i in subgraph.InputsAsNumpy()],
        outputs=[spec(i) for i in subgraph.OutputsAsNumpy()],
        operator_names=operator_names,
    )


def _import_onnx(path: Path) -> ImportedModel:
    import onnx
    from onnx import helper
    from tvm.relax.frontend.onnx import onnx_frontend

    from tvm_ext.onnx_conv_transpose import output_shape_as_pads
    from tvm_ext.onnx_integer_ops import CONVERTERS as ONNX_CONVERTERS

    layers: list[str] = []

    class LayerNamingImporter(onnx_frontend.ONNXGraphImporter):
        """TVM's ONNX importer, binding each node's result to a var named after the node."""

        def _check_for_unsupported_ops(self, graph):
            """TVM's check, for the nodes our converters leave to TVM."""
            theirs = onnx.GraphProto()
            theirs.node.extend(node for node in graph.node if node.op_type not in ONNX_CONVERTERS)
            super()._check_for_unsupported_ops(theirs)

        def _convert_operator(self, op_name, inputs, attrs, opset):
            node_name = attrs.get("tvm_custom", {}).get("name")
            layer = f"{node_name} ({op_name})" if node_name else op_name
            try:
                if op_name == "ConvTranspose" and "output_shape" in attrs:
                    data_shape, weight_shape = (_static_dims(x) for x in inputs[:2])
                    attrs = output_shape_as_pads(attrs, data_shape[2:], weight_shape[2:])
                if op_name in ONNX_CONVERTERS:
                    result = ONNX_CONVERTERS[op_name](self.bb, inputs, attrs)
                else:
                    result = super()._convert_operator(op_name, inputs, attrs, opset)
                return _bind_layer_output(self.bb, result, layers, layer)
            except Exception as err:  # noqa: BLE001 - a conversion or type failure is this node's
                raise ModelImportError(f"{path.name}: node {layer}: {_import_failure(err)}") from err

    model = onnx.load(str(path))
    initializers = {init.name for init in model.graph.initializer}
    graph_inputs = [i for i in model.graph.input if i.name not in initializers]

    def spec(value_info) -> TensorSpec:
        tensor_type = value_info.type.tensor_type
        dims = tuple(d.dim_value if d.HasField("dim_value") else -1 for d in tensor_type.shape.dim)
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)).name
        return TensorSpec(value_info.name, dims, dtype)

    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    importer = LayerNamingImporter({}, "float32", keep_params_in_input=False, sanitize=True)
    try:
        with warnings.catch_warnings():
            # The importer warns for each input it renames to a valid identifier; the plan keeps the model's names.
            warnings.simplefilter("ignore", UserWarning)
            mod = importer.from_onnx(model.graph, opset)
    except tvm.error.OpError as err:  # TVM's errors for operators a model gets wrong or TVM lacks
        raise ModelImportError(f"{path.name}: {_first_line(err)}") from err
    mod["main"] = mod["main"].with_attr("tvm_ext.layers", layers)
    return ImportedModel(
        name=path.stem,
        path=path,
        format="onnx",
        mod=mod,
        layers=layers,
        inputs=[spec(i) for i in graph_inputs],
        outputs=[spec(o) for o in model.graph.output],
    )


def _static_dims(value: relax.Expr) -> list[int]:
    """The static shape of a Relax tensor value (the model check made every shape static)."""
    return [int(d) for d in value.ty.shape.values]


def _import_failure(err: Exception) -> str:
    """One line on why TVM could not import an operator: its message, else where it failed."""
    if str(err).strip():
        return f"TVM cannot import it: {_first_line(err)}"
    failed_at = traceback.extract_tb(err.__traceback__)[-1]
    return (f"TVM cannot import it ({type(err).__name__} at {Path(failed_at.filename).name}:"
            f"{failed_at.lineno}: {failed_at.line})")


def _first_line(err: Exception) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return lines[-1] if lines else type(err).__name__
