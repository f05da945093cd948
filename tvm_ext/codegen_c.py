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

PIPELINE_NAME = "tvm_ext_plain_c"
CODEGEN_ONLY_PIPELINE_NAME = "tvm_ext_plain_c_codegen"
LOCAL_BUFFER_MAX_BYTES = 64
NUM_OUTPUTS_ATTR = "tvm_ext.num_outputs"
SCRATCH_ATTR = "tvm_ext.scratch_bytes"


@dataclass(frozen=True)
class ScratchBuffer:
    """A kernel-internal buffer passed as a pointer parameter: its element type and its bytes."""

    dtype: str
    nbytes: int


@dataclass(frozen=True)
class KernelSignature:
    """A generated kernel's C parameters: inputs, then outputs, then scratch buffers."""

    name: str
    num_inputs: int
    num_outputs: int
    scratch: tuple[ScratchBuffer, ...]


@dataclass(frozen=True)
class KernelSource:
    """The C text of all kernels (no includes beyond the C standard library) and their signatures."""

    c_text: str
    signatures: dict[str, KernelSignature]


def _buffer_bytes(buf) -> int:
    return math.prod(int(d) for d in buf.shape) * tvm.DataType(buf.dtype).bits // 8


def _without_allocs(stmt: tirx.Stmt, taken: list) -> tirx.Stmt | None:
    """`stmt` with every scratch-sized AllocBuffer removed (appended to `taken`); None if nothing is left."""
    if isinstance(stmt, tirx.AllocBuffer):
        # A "local" buffer is the kernel author's explicit choice of a few registers' worth of temporaries.
        if stmt.buffer.scope() in ("", "global") and _buffer_bytes(stmt.buffer) > LOCAL_BUFFER_MAX_BYTES:
            taken.append(stmt.buffer)
            return None
        return stmt
    if isinstance(stmt, tirx.SeqStmt):
        kept = [s for s in (_without_allocs(s, taken) for s in stmt.seq) if s is not None]
        if not kept:
            return None
        return kept[0] if len(kept) == 1 else tirx.SeqStmt(kept)
    if isinstance(stmt, tirx.For):
        body = _without_allocs(stmt.body, taken) or tirx.Evaluate(0)
        return tirx.For(
            stmt.loop_var, stmt.min, stmt.extent, stmt.kind, body, stmt.thread_binding, stmt.annotations, stmt.step
        )
    if isinstance(stmt, tirx.IfThenElse):
        then_case = _without_allocs(stmt.then_case, taken) or tirx.Evaluate(0)
        else_case = _without_allocs(stmt.else_case, taken) if stmt.else_case is not None else None
        return tirx.IfThenElse(stmt.condition, then_case, else_case)
    if isinstance(stmt, tirx.AttrStmt):
        body = _without_allocs(stmt.body, taken) or tirx.Evaluate(0)
        return tirx.AttrStmt(stmt.node, stmt.attr_key, stmt.value, body)
    if isinstance(stmt, tirx.While):
        return tirx.While(stmt.condition, _without_allocs(stmt.body, taken) or tirx.Evaluate(0))
    return stmt


def _parameter_names(func: tirx.PrimFunc, num_scratch: int) -> list[str]:
    """C names for `func`'s parameters then its `num_scratch` scratch buffers, by role and index only.

    TVM names a kernel's parameters after the Relax vars it was legalized from, and those can carry a
    model's tensor names: our C never takes a parameter name from anywhere but here.
    """
    if NUM_OUTPUTS_ATTR not in (func.attrs or {}):  # a user's PrimFunc through the registered pipeline
        return [f"arg{i}" for i in range(len(func.params))] + [f"scratch{k}" for k in range(num_scratch)]
    num_outputs = int(func.attrs[NUM_OUTPUTS_ATTR])
    num_inputs = len(func.params) - num_outputs
    return ([f"input{i}" for i in range(num_inputs)] + [f"output{j}" for j in range(num_outputs)]
            + [f"scratch{k}" for k in range(num_scratch)])


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


def _clean_source(raw: str, signatures: dict[str, KernelSignature]) -> str:
    """TVM's C text without its runtime boilerplate, with `const` on every kernel's input pointers."""
    text = _without_unused_offsets(_TVM_BOILERPLATE.sub("", raw).replace("TVM_DLL ", ""))
    text = _BARE_INT32_MIN.sub("INT32_MIN", text)
    for sig in signatures.values():
        pattern = re.compile(rf"^void {re.escape(sig.name)}\((.*)\)", re.MULTILINE)

        def add_const(match: re.Match, sig: KernelSignature = sig) -> str:
            params = [p.strip() for p in match.group(1).split(",")]
            params = [f"const {p}" if i < sig.num_inputs else p for i, p in enumerate(params)]
            return f"void {sig.name}({', '.join(params)})"

        text = pattern.sub(add_const, text)
    return "#include <stdint.h>\n" + text.lstrip()


def generate_c(kernels: dict[str, tirx.PrimFunc], target: tvm.target.Target) -> KernelSource:
    """C source for `kernels` (name -> PrimFunc carrying the NUM_OUTPUTS_ATTR attribute).

    Pure function of its arguments; the C function names are the dict's keys.
    """
    mod = tvm.IRModule({name: f.with_attr("global_symbol", name) for name, f in kernels.items()})
    lowered = _lowering_passes()(tirx.transform.BindTarget(target)(mod))
    signatures = {}
    for gvar, func in lowered.functions.items():
        num_outputs = int(func.attrs[NUM_OUTPUTS_ATTR])
        scratch = tuple(ScratchBuffer(str(dtype), int(nbytes)) for dtype, nbytes in func.attrs[SCRATCH_ATTR])
        num_inputs = len(func.params) - num_outputs - len(scratch)
        signatures[gvar.name_hint] = KernelSignature(gvar.name_hint, num_inputs, num_outputs, scratch)
    raw = tvm.tirx.build(lowered, target=target, pipeline=CODEGEN_ONLY_PIPELINE_NAME).inspect_source()
    return KernelSource(_clean_source(raw, signatures), signatures)
