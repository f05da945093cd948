"""PrimFuncs -> plain C kernels with TVM's C code generator and a TIR pipeline of ours.

Each kernel becomes `void <name>(const T* in..., T* out..., T* scratch...)`: no TVM headers, no TVM-FFI
calling convention, no workspace allocation. Kernel-internal global buffers larger than
`LOCAL_BUFFER_MAX_BYTES` become scratch pointer parameters (the caller places them in the arena); smaller
ones (accumulators) and buffers declared "local" by a kernel's author stay local arrays. `generate_c` is a pure function of (kernels, target): a worker process can run it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import tvm
from tvm import s_tir, tirx

from memory_planner.plan import KernelParameter, KernelSignature, ScratchBuffer
from packager.c_types import c_prototype
from packager.fixed_point_c import requantize_helper_name
from tvm_ext.kernels.fixed_point import calls_to_c_helpers
from tvm_ext.layers import NUM_OUTPUTS_ATTR, OPERAND_ROLES_ATTR, SCRATCH_ATTR
from tvm_ext.tir_walk import map_child_stmts
from tvm_ext.stream_order import stream_orders

PIPELINE_NAME = "tvm_ext_plain_c"
CODEGEN_ONLY_PIPELINE_NAME = "tvm_ext_plain_c_codegen"
LOCAL_BUFFER_MAX_BYTES = 64
# Those roles that name a C parameter of their own; every other input is `input<k>`.
ROLE_PARAMETER_NAMES = {"weight": "weights", "bias": "bias", "multiplier": "multiplier", "shift": "shift"}


@dataclass(frozen=True)
class KernelSource:
    """The C text of all kernels (no includes beyond the C standard library) and their signatures."""

    c_text: str
    signatures: dict[str, KernelSignature]
    requantize_roundings: tuple[str, ...] = ()  # the `packager.fixed_point_c` helpers the kernels call


def _buffer_bytes(buf) -> int:
    return math.prod(int(d) for d in buf.shape) * tvm.DataType(buf.dtype).bits // 8


def _without_allocs(stmt: tirx.Stmt, taken: list) -> tirx.Stmt | None:
    """`stmt` with every scratch-sized AllocBuffer removed (appended to `taken`); None if nothing is left.
    Every statement kind is rewritten through `tir_walk.map_child_stmts` (an unknown kind raises)."""
    if isinstance(stmt, tirx.AllocBuffer):
        # A "local" buffer is the kernel author's explicit choice of a few registers' worth of temporaries.
        if stmt.buffer.scope() in ("", "global") and _buffer_bytes(stmt.buffer) > LOCAL_BUFFER_MAX_BYTES:
            taken.append(stmt.buffer)
            return None
        return stmt
    return map_child_stmts(stmt, lambda child: _without_allocs(child, taken))


def _parameter_names(func: tirx.PrimFunc, num_scratch: int) -> list[str]:
    """C names for `func`'s parameters then its `num_scratch` scratch buffers, by role and index only:
    `weights`, `bias`, `multiplier`, `shift` where OPERAND_ROLES_ATTR says so, else `input<k>`.

    TVM names a kernel's parameters after the Relax vars it was legalized from, and those can carry a
    model's tensor names: our C never takes a parameter name from anywhere but here.
    """
    if NUM_OUTPUTS_ATTR not in (func.attrs or {}):  # a user's PrimFunc through the registered pipeline
        return [f"arg{i}" for i in range(len(func.params))] + [f"scratch{k}" for k in range(num_scratch)]
    num_outputs = int(func.attrs[NUM_OUTPUTS_ATTR])
    num_inputs = len(func.params) - num_outputs
    roles = [str(r) for r in func.attrs.get(OPERAND_ROLES_ATTR, [])]
    if len(roles) != num_inputs:
        roles = ["" for _ in range(num_inputs)]
    data = iter(range(num_inputs))
    inputs = [ROLE_PARAMETER_NAMES.get(role) or f"input{next(data)}" for role in roles]
    return inputs + [f"output{j}" for j in range(num_outputs)] + [f"scratch{k}" for k in range(num_scratch)]


def _plain_c_signature(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """Buffer parameters become pointer parameters named by role (`input0`, `output0`, `scratch0`);
    large internal buffers become scratch parameters."""
    taken: list = []
    body = _without_allocs(func.body, taken) or tirx.Evaluate(0)
    params, decls = [], []
    for buf, name in zip(list(func.params) + taken, _parameter_names(func, len(taken))):
        if not tirx.is_buffer_var(buf):
            params.append(buf)
            continue
        ptr = tirx.Var(name, tirx.buffer_data_pointer_type(buf))
        params.append(ptr)
        decls.append(tirx.DeclBuffer(buf, data=ptr))
        if isinstance(buf.elem_offset, tirx.Var):
            # A TE extern stage's buffer may leave its offset symbolic; our tensors start at their pointer.
            decls.append(tirx.Bind(buf.elem_offset, tirx.const(0, str(buf.elem_offset.ty.dtype))))
    new_func = tirx.PrimFunc(params, tirx.SeqStmt(decls + [body]), func.ret_type, func.attrs)
    return new_func.with_attr(SCRATCH_ATTR, [[str(b.dtype), _buffer_bytes(b)] for b in taken])


@tvm.transform.module_pass(opt_level=0, name="tvm_ext.PlainCSignature")
def plain_c_signature(mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
    """The module pass form of `_plain_c_signature`, run after buffers are flattened."""
    return tvm.IRModule({gv: _plain_c_signature(f) for gv, f in mod.functions.items()}, attrs=mod.attrs)


def _lowering_passes() -> tvm.transform.Pass:
    """Scheduled PrimFuncs -> flat TIR with pointer parameters (the main pass of our TIR pipeline)."""
    return tvm.transform.Sequential(
        [
            s_tir.transform.CanonicalizeLoop(),
            s_tir.transform.LowerInitBlock(),
            s_tir.transform.PlanAndUpdateBufferAllocationLocation(),
            s_tir.transform.ConvertBlocksToOpaque(),
            s_tir.transform.CompactBufferAllocation(),
            s_tir.transform.LowerMatchBuffer(),
            s_tir.transform.LowerOpaqueBlock(),
            tirx.transform.FlattenBuffer(),
            tirx.transform.NarrowDataType(32),
            tirx.transform.StorageRewrite(),
            tirx.transform.UnrollLoop(),  # the loops the schedule marked unrolled (register tiles)
            plain_c_signature,
            tirx.transform.StmtSimplify(),  # also folds the zero offsets plain_c_signature binds
        ],
        name="tvm_ext.lower_to_plain_c",
    )


def _finalize() -> tvm.transform.Pass:
    return tvm.transform.Sequential([tirx.transform.LowerIntrin()])


def _plain_c_pipeline():
    return _lowering_passes(), _finalize, _finalize


def _codegen_only_pipeline():
    return tvm.transform.Sequential([]), _finalize, _finalize


# For users: tvm.tirx.build(mod, target="c", pipeline="tvm_ext_plain_c") gives our plain C kernels.
tvm.tirx.compilation_pipeline.register_tir_pipeline(PIPELINE_NAME, _plain_c_pipeline)
# For generate_c, which lowers first (to read the scratch parameters) and then only generates code.
tvm.tirx.compilation_pipeline.register_tir_pipeline(CODEGEN_ONLY_PIPELINE_NAME, _codegen_only_pipeline)


_TVM_BOILERPLATE = re.compile(
    r'^(// tvm target:.*|#define TVM_EXPORTS|#include "tvm/.*"|void\* __tvm_ffi__library_ctx = NULL;'
    r'|#ifdef __cplusplus|extern "C"|#endif)\n',
    re.MULTILINE,
)


_ZERO_OFFSET = re.compile(r"^\s*int(?:32|64)_t (elem_offset\w*) = \(int(?:32|64)_t\)0;\n", re.MULTILINE)


_DEFINITION = re.compile(r"^void \w+\(([^)\n]*)\) \{\n(.*?)^\}\n", re.MULTILINE | re.DOTALL)


def _without_unused_offsets(text: str) -> str:
    """The leftovers of the simplifier's folding, per kernel definition: drop the zero offsets
    plain_c_signature binds once every use of them is folded (several kernels each declare their own
    ``elem_offset``), and mark ``(void)p;`` each parameter the body no longer reads (a kernel folded to a
    constant, e.g. an int8 product its clamp makes constant, still takes its operands: -Wunused-parameter)."""

    def cleaned(definition: re.Match) -> str:
        whole, body = definition.group(0), definition.group(2)
        for match in list(_ZERO_OFFSET.finditer(body)):
            if len(re.findall(rf"\b{match.group(1)}\b", body)) == 1:
                body = body.replace(match.group(0), "", 1)
        parameters = [p.strip().split()[-1].lstrip("*") for p in definition.group(1).split(",") if p.strip()]
        unused = [p for p in parameters if not re.search(rf"\b{re.escape(p)}\b", body)]
        opening = whole[:definition.start(2) - definition.start(0)]
        return opening + "".join(f"  (void){p};\n" for p in unused) + body + "}\n"

    return _DEFINITION.sub(cleaned, text)


# TVM prints the int32 constant INT32_MIN as `-2147483648`: the negation of a literal too large for int,
# so C types it long (long long on ILP32) and -Wconversion flags the narrowing back to int32_t.
_BARE_INT32_MIN = re.compile(r"(?<!\(int64_t\))-2147483648\b")


def _clean_source(raw: str, signatures: dict[str, KernelSignature], helpers: tuple[str, ...]) -> str:
    """TVM's C text without its runtime boilerplate and its forward declarations, each kernel's definition
    opening with the signature's own prototype (`const` on its inputs), as the internal header declares it.

    TVM declares every extern function a kernel calls, once per kernel: the declarations of our `helpers`
    go, since the internal header defines them.
    """
    text = _without_unused_offsets(_TVM_BOILERPLATE.sub("", raw).replace("TVM_DLL ", ""))
    for helper in helpers:
        text = text.replace(f"int32_t {helper}(int32_t, int32_t, int32_t);\n", "")
    text = _BARE_INT32_MIN.sub("INT32_MIN", text)
    for sig in signatures.values():
        text = re.sub(rf"^void {re.escape(sig.name)}\(.*\);\n", "", text, flags=re.MULTILINE)
        text = re.sub(rf"^void {re.escape(sig.name)}\(.*\) {{$", f"{c_prototype(sig)} {{", text, flags=re.MULTILINE)
    return "#include <stdint.h>\n" + text.lstrip()


def _parameter(var: tirx.Var, read_only: bool) -> KernelParameter:
    """A lowered kernel's pointer parameter as data (every parameter is one after plain_c_signature)."""
    if not isinstance(var.ty, tvm.ir.PointerType):
        raise RuntimeError(f"kernel parameter {var.name} is not a pointer after plain_c_signature")
    return KernelParameter(var.name, str(var.ty.element_type.dtype), read_only)


def generate_c(kernels: dict[str, tirx.PrimFunc], target: tvm.target.Target, prefix: str = "tvm_ext") -> KernelSource:
    """C source for `kernels` (name -> PrimFunc carrying the NUM_OUTPUTS_ATTR attribute).

    Pure function of its arguments; the C function names are the dict's keys. Requantizations become calls
    of the helpers `<prefix>_requantize_<rounding>` (`packager.fixed_point_c`), which the C text does not
    define: `requantize_roundings` names the ones it calls.
    """
    mod = tvm.IRModule({name: f.with_attr("global_symbol", name) for name, f in kernels.items()})
    lowered = _lowering_passes()(tirx.transform.BindTarget(target)(mod))
    signatures = {}
    for gvar, func in lowered.functions.items():
        num_outputs = int(func.attrs[NUM_OUTPUTS_ATTR])
        scratch = tuple(ScratchBuffer(str(dtype), int(nbytes)) for dtype, nbytes in func.attrs[SCRATCH_ATTR])
        num_inputs = len(func.params) - num_outputs - len(scratch)
        parameters = tuple(_parameter(p, i < num_inputs) for i, p in enumerate(func.params))
        signatures[gvar.name_hint] = KernelSignature(gvar.name_hint, num_inputs, num_outputs, scratch, parameters,
                                                     stream_orders(func, num_inputs, num_outputs))
    with calls_to_c_helpers(prefix) as roundings:
        raw = tvm.tirx.build(lowered, target=target, pipeline=CODEGEN_ONLY_PIPELINE_NAME).inspect_source()
    used = tuple(sorted(r.value for r in roundings))
    helpers = tuple(requantize_helper_name(prefix, rounding) for rounding in used)
    return KernelSource(_clean_source(raw, signatures, helpers), signatures, used)
