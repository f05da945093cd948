"""PrimFuncs -> plain C kernels with TVM's C code generator and a TIR pipeline of ours.

Each kernel becomes `void <name>(const T* in..., T* out..., T* scratch...)`: no TVM headers, no TVM-FFI
calling convention, no workspace allocation. Kernel-internal global buffers larger than
`LOCAL_BUFFER_MAX_BYTES` become scratch pointer parameters (the caller places them in the arena); smaller
ones (accumulators) and buffers declared "local" by a kernel's author (whatever their size) stay local arrays. `generate_c` is a pure function of (kernels, target): a worker process can run it.

No C text is edited: what TVM's printer would print badly is fixed in the TIR first (unread zero offsets,
INT32_MIN, float constants its 7 significant digits would round), and everything around the kernel bodies
is written from the KernelSignatures; `kernel_bodies` is the one step that reads TVM's text, and only cuts
the bodies out of it.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass

import tvm
from tvm import s_tir, tirx

import backends.schedules  # noqa: F401  every backend's helper ops registered before C is generated from them
from backends.backend import HelperLibrary
from memory_planner.plan import KernelParameter, KernelSignature, ScratchBuffer
from packager.c_types import c_prototype
from tvm_ext.codegen.exact_float_constants import exact_float_constants
from tvm_ext.tir.helper_calls import calls_to_helpers
from tvm_ext.codegen.index_checks import UncheckedIndexError, check_guarded_indices, returns_status, unchecked_accesses
from tvm_ext.kernels.fixed_point import INT32_MIN, calls_to_c_helpers
from tvm_ext.kernels.signal import calls_to_signal_helpers
from tvm_ext.codegen.fused_float_products import fused_float_products
from tvm_ext.codegen.padding_test_hoist import hoist_padding_tests
from tvm_ext.codegen.libm_lowering import register_libm_lowerings
from tvm_ext.layers import NUM_OUTPUTS_ATTR, OPERAND_ROLES_ATTR, SCRATCH_ATTR, rewritten_operands
from tvm_ext.codegen.reverse_outer_loop import reverse_outer_loop
from tvm_ext.codegen.stream_order import stream_orders
from tvm_ext.tir.tir_walk import map_child_stmts, map_leaves, vars_read, walk

PIPELINE_NAME = "tvm_ext_plain_c"
CODEGEN_ONLY_PIPELINE_NAME = "tvm_ext_plain_c_codegen"
LOCAL_BUFFER_MAX_BYTES = 64
# Those roles that name a C parameter of their own; every other input is `input<k>`.
# (`table`, `exp_table`: the lookup tables of kernels.int8_tables; `exp_lut`, `one_over_one_plus_x_lut`: the
# int16 softmax's TFLite tables, kernels.softmax_int16; `reciprocals`, `reciprocal_shifts`: int8 DIV's;
# `constants`: a kernel shared across its constants, tvm_ext.transform.share_constant_variants.)
ROLE_PARAMETER_NAMES = {"weight": "weights", "bias": "bias", "multiplier": "multiplier", "shift": "shift",
                        "table": "table", "exp_table": "exp_table", "exp_lut": "exp_lut",
                        "one_over_one_plus_x_lut": "one_over_one_plus_x_lut", "reciprocals": "reciprocals",
                        "reciprocal_shifts": "reciprocal_shifts", "constants": "constants"}


@dataclass(frozen=True)
class KernelSource:
    """The kernels' C: each kernel's definition by name (in the order kernels.c lists them), their signatures,
    and the bundle helpers they call."""

    definitions: dict[str, str]
    signatures: dict[str, KernelSignature]
    requantize_roundings: tuple[str, ...] = ()  # the `packager.fixed_point_c` helpers the kernels call
    helper_libraries: tuple[HelperLibrary, ...] = ()  # the backend helper libraries the kernels call
    signal_helpers: tuple[str, ...] = ()  # the `packager.signal_c` helpers the kernels call (C names)

    @property
    def c_text(self) -> str:
        """kernels.c: the C standard headers TVM's bodies use, then every definition."""
        return self.c_text_of(self.definitions)

    def c_text_of(self, names: Collection[str]) -> str:
        """A kernels file of the kernels `names` only (in this source's order): the headers, their definitions."""
        return "".join(f"#include <{header}>\n" for header in KERNELS_C_INCLUDES) + "\n".join(
            text for name, text in self.definitions.items() if name in names)


def _buffer_bytes(buf) -> int:
    return math.prod(int(d) for d in buf.shape) * tvm.DataType(buf.dtype).bits // 8


def stack_array_bytes(func: tirx.PrimFunc) -> int:
    """The bytes of the local arrays the C function of the lowered `func` declares (every allocation left after
    `plain_c_signature`: small accumulators and the "local" buffers a schedule keeps on the stack, such as a
    depthwise kernel's band), all counted as live at once: an upper bound on what they add to the kernel's frame
    (GCC may overlap arrays of disjoint scopes), alignment padding aside."""
    return sum(_buffer_bytes(node.buffer) for node in walk(func.body) if isinstance(node, tirx.AllocBuffer))


def _without_allocs(stmt: tirx.Stmt, taken: list) -> tirx.Stmt | None:
    """`stmt` with every scratch-sized AllocBuffer removed (appended to `taken`); None if nothing is left.
    Every statement kind is rewritten through `tir_walk.map_child_stmts` (an unknown kind raises)."""
    if isinstance(stmt, tirx.AllocBuffer):
        if stmt.buffer.scope() in ("", "global") and _buffer_bytes(stmt.buffer) > LOCAL_BUFFER_MAX_BYTES:
            taken.append(stmt.buffer)
            return None
        if stmt.buffer.scope() == "local":
            return _on_stack(stmt.buffer)
        return stmt
    return map_child_stmts(stmt, lambda child: _without_allocs(child, taken))


def _on_stack(buf: tirx.Buffer) -> tirx.Stmt:
    """The allocation of a "local" buffer (the kernel author's choice: a local array of the C function, on the
    stack whatever its size, never an arena scratch): TVM's C printer prints only global allocations (a "local" one
    fails its check), so a global array of as many bytes, ``buf`` declared over it."""
    array = tirx.decl_buffer(buf.shape, buf.dtype, name=buf.name)
    return tirx.SeqStmt([tirx.AllocBuffer(array), tirx.DeclBuffer(buf, data=array.data)])


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


def _handle(buffer: tirx.Buffer) -> tirx.Expr:
    """The variable that names ``buffer``'s storage (its data pointer, or the array its ``buffer_data`` reads)."""
    data = buffer.data
    if isinstance(data, tvm.ir.Call) and isinstance(data.op, tvm.ir.Op) and data.op.name == "tirx.buffer_data":
        return data.args[0]
    return data


def _without_unread_constant_binds(stmt: tirx.Stmt, read: set, unread_arrays: set) -> tirx.Stmt | None:
    """`stmt` without the `Bind`s of a constant that nothing in `read` reads, nor the allocations of the local
    arrays `unread_arrays` (their data pointers) and the buffers declared over them (None if nothing is left)."""
    if isinstance(stmt, tirx.Bind) and isinstance(stmt.value, tirx.IntImm) and stmt.var not in read:
        return None
    if isinstance(stmt, (tirx.AllocBuffer, tirx.DeclBuffer)) and _handle(stmt.buffer) in unread_arrays:
        return None
    return map_child_stmts(stmt, lambda child: _without_unread_constant_binds(child, read, unread_arrays))


@tirx.transform.prim_func_pass(opt_level=0, name="tvm_ext.DropUnreadConstantBinds")
def drop_unread_constant_binds(func: tirx.PrimFunc, _mod, _ctx) -> tirx.PrimFunc:
    """`func` without the zero offsets plain_c_signature binds once the simplifier has folded every use of
    them, and without the local arrays whose every use it has removed (a padded convolution's window buffer where
    pixel pairs cover its border: a TRANSPOSE_CONV phase padded on one side); TVM's printer would declare each as
    an unused local."""
    read = vars_read(func.body)
    # the arrays loaded, stored or declared over (their handles), which vars_read does not list
    accessed = read | {_handle(getattr(node, role)) for node in walk(func.body) for role in ("buffer", "source")
                       if not isinstance(node, tirx.AllocBuffer) and isinstance(getattr(node, role, None), tirx.Buffer)}
    unread_arrays = {_handle(node.buffer) for node in walk(func.body)
                     if isinstance(node, tirx.AllocBuffer) and _handle(node.buffer) not in accessed}
    body = _without_unread_constant_binds(func.body, read, unread_arrays) or tirx.Evaluate(0)
    return tirx.PrimFunc(func.params, body, func.ret_type, func.attrs)


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
            hoist_padding_tests,  # float convolutions: the border's bounds test out of the MAC loop
            fused_float_products,  # a quantized ONNX model's float MACs rounded once, as onnxruntime's
            plain_c_signature,
            tirx.transform.StmtSimplify(),  # also folds the zero offsets plain_c_signature binds
            drop_unread_constant_binds,
            check_guarded_indices,  # an index operator's indices checked before its kernel writes anything
            reverse_outer_loop,  # only the kernels the memory plan asks to run backwards (reverse_outer_loop.py)
        ],
        name="tvm_ext.lower_to_plain_c",
    )


def _spelled_int32_min(leaf):
    """INT32_MIN as `(-2147483647 - 1)` (how <stdint.h> spells it), any other leaf as it is.

    TVM prints an int32 constant as its decimal value: `-2147483648` is the negation of a literal too large
    for int, so C types it long (long long on ILP32) and -Wconversion flags its narrowing back to int32_t.
    """
    if isinstance(leaf, tirx.IntImm) and str(leaf.ty.dtype) == "int32" and int(leaf) == INT32_MIN:
        return tirx.Sub(tirx.IntImm("int32", INT32_MIN + 1), tirx.IntImm("int32", 1))
    return leaf


@tirx.transform.prim_func_pass(opt_level=0, name="tvm_ext.SpellInt32Min")
def spell_int32_min(func: tirx.PrimFunc, _mod, _ctx) -> tirx.PrimFunc:
    """`func` with every int32 constant INT32_MIN an expression TVM's C printer writes as C can type it.
    Runs last (a simplifier would fold the expression back into the constant)."""
    return tirx.PrimFunc(func.params, map_leaves(func.body, _spelled_int32_min), func.ret_type, func.attrs)


def _finalize() -> tvm.transform.Pass:
    """The passes right before code generation: what TVM's C printer would print wrongly, spelled in the TIR."""
    return tvm.transform.Sequential([tirx.transform.LowerIntrin(), spell_int32_min, exact_float_constants])


def _plain_c_pipeline():
    return _lowering_passes(), _finalize, _finalize


def _codegen_only_pipeline():
    return tvm.transform.Sequential([]), _finalize, _finalize


register_libm_lowerings()  # before any of our pipelines lowers an intrinsic
# For users: tvm.tirx.build(mod, target="c", pipeline="tvm_ext_plain_c") gives our plain C kernels.
tvm.tirx.compilation_pipeline.register_tir_pipeline(PIPELINE_NAME, _plain_c_pipeline)
# For generate_c, which lowers first (to read the scratch parameters) and then only generates code.
tvm.tirx.compilation_pipeline.register_tir_pipeline(CODEGEN_ONLY_PIPELINE_NAME, _codegen_only_pipeline)


# TVM's C host code generator (`target.build.c`, TVM's src/target/source/codegen_c_host.cc) cannot be told to
# leave out its runtime prologue (TVM headers, `__tvm_ffi__library_ctx`), the forward declaration of every
# function and of every extern function a kernel calls (our requantize helpers, `expf`), nor its
# `extern "C" TVM_DLL` prefix, and it cannot print `const` on a parameter. So we take only each kernel's
# body from its text and write everything around the bodies ourselves, from the KernelSignatures.
_DEFINITION_OPENINGS = ("TVM_DLL void ", "TVM_DLL int32_t ")  # a kernel that checks indices returns int32_t
_DEFINITION_CLOSING = "}"
KERNELS_C_INCLUDES = ("stdint.h", "math.h", "stdbool.h")  # what TVM's kernel bodies use: intN_t, expf, bool


def kernel_bodies(tvm_c_text: str, names: set[str]) -> dict[str, str]:
    """The body of each kernel definition in TVM's C text (its lines between the definition's opening line
    and its closing `}` at the start of a line), by kernel name: the one step that reads TVM's printed C.

    A definition opens with a line `TVM_DLL void <name>(...) {` (`int32_t` for a kernel that checks
    indices). RuntimeError when a kernel of `names`
    has no definition (TVM's printer changed), so a change never passes silently.
    """
    bodies: dict[str, str] = {}
    body: list[str] | None = None  # the lines of the definition being read
    for line in tvm_c_text.splitlines(keepends=True):
        if body is not None:
            if line.rstrip("\n") == _DEFINITION_CLOSING:
                bodies[name] = "".join(body)
                body = None
            else:
                body.append(line)
        elif line.startswith(_DEFINITION_OPENINGS) and line.rstrip("\n").endswith(") {"):
            name = line[line.index(" ", len("TVM_DLL ")) + 1:line.index("(")]
            body = [] if name in names else None
    missing = sorted(names - set(bodies))
    if missing:
        raise RuntimeError(f"TVM's C text has no definition of the kernels {', '.join(missing)}")
    return bodies


def _unused_parameters(func: tirx.PrimFunc) -> list[str]:
    """The names of `func`'s pointer parameters its lowered body never reads or writes (a kernel folded to a
    constant, e.g. an int8 product its clamp makes constant, still takes its operands)."""
    declared = {}  # a buffer var -> the parameter it is the buffer of
    for node in walk(func.body):
        if isinstance(node, tirx.DeclBuffer) and node.data is not None:
            declared[node.buffer] = node.data
    used = vars_read(func.body)
    used |= {declared[var] for var in used if var in declared}
    return [p.name for p in func.params if p not in used]


def kernel_definitions(bodies: dict[str, str], signatures: dict[str, KernelSignature],
                       unused: dict[str, list[str]]) -> dict[str, str]:
    """Each kernel's C definition, by name in name order: its signature's own prototype (`const` on its inputs,
    as the internal header declares it), `(void)p;` for each of its `unused` parameters (-Wunused-parameter),
    and its body."""
    return {
        name: f"{c_prototype(signatures[name])} {{\n" + "".join(f"  (void){p};\n" for p in unused[name])
        + bodies[name] + f"{_DEFINITION_CLOSING}\n"
        for name in sorted(signatures)
    }


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
        problems = unchecked_accesses(func)
        if problems:
            raise UncheckedIndexError(gvar.name_hint, problems)
        num_outputs = int(func.attrs[NUM_OUTPUTS_ATTR])
        scratch = tuple(ScratchBuffer(str(dtype), int(nbytes)) for dtype, nbytes in func.attrs[SCRATCH_ATTR])
        num_inputs = len(func.params) - num_outputs - len(scratch)
        rewritten = rewritten_operands(func)  # the state a kernel updates in place is an input, not const
        parameters = tuple(_parameter(p, i < num_inputs and i not in rewritten) for i, p in enumerate(func.params))
        signatures[gvar.name_hint] = KernelSignature(gvar.name_hint, num_inputs, num_outputs, scratch, parameters,
                                                     stream_orders(func, num_inputs, num_outputs),
                                                     returns_status(func), stack_array_bytes(func))
    with calls_to_c_helpers(prefix) as roundings, calls_to_helpers(prefix) as helpers, \
            calls_to_signal_helpers() as signal_helpers:
        raw = tvm.tirx.build(lowered, target=target, pipeline=CODEGEN_ONLY_PIPELINE_NAME).inspect_source()
    unused = {gvar.name_hint: _unused_parameters(func) for gvar, func in lowered.functions.items()}
    definitions = kernel_definitions(kernel_bodies(raw, set(signatures)), signatures, unused)
    library_roundings = {rounding for library in helpers.used() for rounding in library.roundings}
    return KernelSource(definitions, signatures, tuple(sorted(roundings | library_roundings)), helpers.used(),
                        tuple(sorted(signal_helpers)))
