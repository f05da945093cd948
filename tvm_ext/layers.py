"""Which model layer each binding of a Relax `main` implements, as data every pass carries forward; and the
keys of the `tvm_ext.*` attributes of `main` that hold it.

The frontend creates one LayerRecord per model operator. `main` then carries:
  LAYERS_ATTR          the records, in model order (a record is named by its position in this list);
  BINDING_LAYERS_ATTR  per binding of `main`, in binding order, the positions of the records it implements;
  CONSTANT_LAYERS_ATTR each Relax constant an operator reads -> the positions of the records of the operator
                       that reads it (a weight belongs to the layer that consumes it, not to a layer fused
                       after it).
A pass that rewrites `main` either sets these itself (the int8 pass, the frontend) or is wrapped with
`keeping_layers`, which carries them from the function before the pass to the function after it.

This module also owns every other `tvm_ext.*` attribute key: the model's own var names on `main`, and the
attributes the passes put on the kernels' PrimFuncs for code generation and the plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

import tvm
from tvm import relax
from tvm.ir.expr import Constant

LAYERS_ATTR = "tvm_ext.layers"
BINDING_LAYERS_ATTR = "tvm_ext.binding_layers"
CONSTANT_LAYERS_ATTR = "tvm_ext.constant_layers"
FALLBACK_ATTR = "tvm_ext.float_fallback_layers"  # the int8 pass: "<operator> <var>" per float-fallback binding
BINDING_SUBGRAPHS_ATTR = "tvm_ext.binding_subgraphs"  # per binding of main, its subgraph (PartitionSubgraphs)
ORIGINAL_VAR_NAMES_ATTR = "tvm_ext.original_var_names"  # generated var name -> the model's own (messages only)
# main's attribute set by the ONNX frontend on a quantized ONNX model: its quantize and dequantize are ONNX's
# QuantizeLinear and DequantizeLinear, computed as onnxruntime computes them (the int8 pass's ONNX mode).
ONNX_QUANTIZATION_ATTR = "tvm_ext.onnx_quantization"
# main's attribute set by the int8 pass on a model of fewer MACs than its backend's helpers pay for
# (`KernelSchedules.helper_min_macs`): its MAC kernels take no paired weights, and tvm_ext.lower schedules them as
# TVM's loop nests with one accumulator and no MAC helper.
PLAIN_MAC_KERNELS_ATTR = "tvm_ext.plain_mac_kernels"
# Attributes of the kernels' PrimFuncs:
NUM_OUTPUTS_ATTR = "tvm_ext.num_outputs"  # how many of the last parameters are outputs (extract_plan -> codegen)
OPERAND_ROLES_ATTR = "tvm_ext.operand_roles"  # per input operand, the TE kernel parameter it is (int8 emitter)
# A kernel elementwise in its data operand though it loads at positions read from it (a table lookup): FuseOps
# may fuse it after the kernel computing that operand (tvm_ext.transform.fuse_keeping_layers).
ELEMENTWISE_LOOKUP_ATTR = "tvm_ext.elementwise_lookup"
# A binary kernel of broadcast operands that reads their rescaled values from tables indexed by them (int8 ADD, SUB,
# SQUARED_DIFFERENCE: kernels.elementwise.rescaled_table_args): it keeps the op pattern (kBroadcast) it has without
# the tables, so FuseOps fuses it as it did (tvm_ext.transform.fuse_keeping_layers).
BROADCAST_LOOKUP_ATTR = "tvm_ext.broadcast_lookup"
# A kernel FuseOps leaves alone (tvm_ext.transform.fuse_keeping_layers): the concatenation of a layer's patches
# (tvm_ext.transform.patch_prefix), which fused into a pool after it gives C that GCC warns about.
UNFUSED_ATTR = "tvm_ext.unfused"
OPAQUE_PATTERN = 8  # TVM's OpPatternKind kOpaque: a kernel's "op_pattern" that FuseOps leaves alone
SCRATCH_ATTR = "tvm_ext.scratch_bytes"  # [dtype, bytes] of each internal buffer made a parameter (codegen)
STATE_OPERAND_ATTR = "tvm_ext.state_operand"  # the operand a kernel rewrites as the model's state (int8 SVDF)
# The parameters a kernel reads as indices, with their bounds (tvm_ext.transform.index_guards.guards_of):
INDEX_GUARDS_ATTR = "tvm_ext.index_guards"
# [parameter, smallest, largest] of each operand every call passes as an integer constant (unique_kernels):
CONSTANT_RANGES_ATTR = "tvm_ext.constant_ranges"
MACS_ATTR = "tvm_ext.macs"  # multiply-accumulates of one call, counted before scheduling (tvm_ext.plan.macs)
# The MACs of one call of a kernel whose helper calls do them (a TE extern stage: no reduction block to count), as its
# lowering declares them (tvm_ext.plan.macs takes this count).
DECLARED_MACS_ATTR = "tvm_ext.declared_macs"
LOWERED_FOR_ATTR = "tvm_ext.lowered_for"  # on a module tvm_ext.lower.pipeline lowered: its profile's name
LAYOUT_CHOICES_ATTR = "tvm_ext.layout_choices"  # on such a module: the layout chosen per subgraph (tvm_ext.lower)
# On a kernel of a quantized ONNX model (tvm_ext.lower.ScheduleKernels): its float multiply-accumulates round once
# per step, as onnxruntime's MLAS kernels; its value: the taps per block in which MLAS sums the kernel's float
# convolution, 0 for one block (tvm_ext.codegen.fused_float_products):
FUSED_FLOAT_PRODUCTS_ATTR = "tvm_ext.fused_float_products"
# The operands a kernel rewrites in place as the model's state besides computing its own output (int8 LSTM;
# read with `rewritten_operands`):
STATE_OPERANDS_ATTR = "tvm_ext.state_operands"


def rewritten_operands(kernel: tvm.ir.BaseFunc) -> frozenset[int]:
    """The indices of the operands the PrimFunc ``kernel`` rewrites in place besides its output (its
    STATE_OPERANDS_ATTR): the plan makes them state, the C signature leaves them without `const`."""
    attrs = kernel.attrs
    if attrs is None or STATE_OPERANDS_ATTR not in attrs:
        return frozenset()
    return frozenset(int(k) for k in attrs[STATE_OPERANDS_ATTR])


@dataclass(frozen=True)
class LayerRecord:
    """One operator of the model: its name in the model file (TFLite: its output tensor's name up to the first
    ';'; ONNX: the node name; may be empty), its kind (TFLite operator code such as "CONV_2D", ONNX op type
    such as "Conv"), and its index among the model's operators (TFLite operator index, ONNX node index;
    for a hand-written module without model records, the kernel call's index)."""

    name: str
    kind: str
    operator_index: int

    @property
    def label(self) -> str:
        """The layer as the bundle's comments name it: `conv1 (Conv)`, or `CONV_2D #3` without a name."""
        return f"{self.name} ({self.kind})" if self.name else f"{self.kind} #{self.operator_index}"

    def as_attr(self) -> dict:
        return {"name": self.name, "kind": self.kind, "operator_index": self.operator_index}

    @classmethod
    def from_attr(cls, value) -> "LayerRecord":
        return cls(str(value["name"]), str(value["kind"]), int(value["operator_index"]))


Indices = tuple[int, ...]


@dataclass(frozen=True)
class Layers:
    """The layer data of one function: its records, each binding's record positions, each constant's."""

    records: tuple[LayerRecord, ...]
    bindings: tuple[Indices, ...]
    constants: dict  # Constant -> Indices

    @classmethod
    def of(cls, func: relax.Function) -> "Layers":
        """The layer data `func` carries (empty when it carries none, e.g. a module a user built by hand)."""
        attrs = func.attrs or {}
        records = tuple(LayerRecord.from_attr(r) for r in attrs.get(LAYERS_ATTR, []))
        bindings = tuple(tuple(int(i) for i in b) for b in attrs.get(BINDING_LAYERS_ATTR, []))
        constants = {c: tuple(int(i) for i in v) for c, v in attrs.get(CONSTANT_LAYERS_ATTR, {}).items()}
        return cls(records, bindings, constants)

    def of_binding(self, position: int) -> tuple[LayerRecord, ...]:
        """The records of the binding at `position` of the function's bindings (none beyond the list)."""
        return tuple(self.records[i] for i in self.bindings[position]) if position < len(self.bindings) else ()

    def of_constant(self, constant: Constant) -> tuple[LayerRecord, ...]:
        """The records of the operators that read `constant` (none when no record names it)."""
        return tuple(self.records[i] for i in self.constants.get(constant, ()))


def operator_phrase(records: Sequence[LayerRecord]) -> str:
    """`operator Gather at layer g (Gather)`: the model operators `records` name, for one-line messages."""
    kinds = ", ".join(dict.fromkeys(r.kind for r in records))
    return f"operator {kinds} at layer {'; '.join(r.label for r in records)}"


def bindings_of(func: relax.Function) -> list[relax.Binding]:
    """`func`'s bindings in order, over all its blocks."""
    return [b for block in func.body.blocks for b in block.bindings]


def with_layers(func: relax.Function, records: Sequence[LayerRecord], binding_records: Sequence[Iterable[int]],
                constants: Optional[dict] = None) -> relax.Function:
    """`func` carrying `records`, one list of record positions per binding (in order), and the records of each
    constant; constants not given are attributed to the first binding that reads them. Raises ValueError (our
    bug) when the lists are not one per binding: every later record would name the wrong layer."""
    binding_records = [sorted(set(indices)) for indices in binding_records]
    if len(binding_records) != len(bindings_of(func)):
        raise ValueError(f"layer records for {len(binding_records)} bindings of {len(bindings_of(func))}")
    constant_records = dict(constants or {})
    for binding, indices in zip(bindings_of(func), binding_records):
        for constant in _constants_read(binding.value):
            constant_records.setdefault(constant, tuple(indices))
    return (func.with_attr(LAYERS_ATTR, [r.as_attr() for r in records])
            .with_attr(BINDING_LAYERS_ATTR, binding_records)
            .with_attr(CONSTANT_LAYERS_ATTR, {c: list(v) for c, v in constant_records.items()}))


def _constants_read(value: relax.Expr) -> list[Constant]:
    """The constants `value` reads directly: call arguments, also inside a tuple argument."""
    return [leaf for leaf in _leaves(value) if isinstance(leaf, Constant)]


def vars_read(value: relax.Expr) -> list[relax.Var]:
    """The vars `value` reads directly (call arguments, tuple fields, an alias)."""
    if isinstance(value, relax.Var):
        return [value]
    if isinstance(value, relax.Call):
        return [v for arg in value.args for v in vars_read(arg)]
    if isinstance(value, relax.Tuple):
        return [v for field in value.fields for v in vars_read(field)]
    if isinstance(value, relax.TupleGetItem):
        return vars_read(value.tuple_value)
    return []


def carry_layers(before: relax.Function, after: relax.Function,
                 module: Optional[tvm.IRModule] = None) -> relax.Function:
    """`after` (what a pass made of `before`) carrying `before`'s layer data.

    Where `after` reads a new var at the place (same reader, same argument) where `before` read a var it no
    longer binds, the new var replaces the old one. A new var bound to a call of a relax function of `module`
    (the module `after` is `main` of: FuseOps' fused groups) replaces the var of `before` that the function's
    result computes, found by matching the function's bindings to those of `before` (`_fused_results`): so a
    group only other fused groups read is its own layers, not every layer of the chain. A binding keeps the
    records of the binding of `before` whose var it has or replaces, plus those of every binding of `before`
    that `after` no longer has and whose value it needed (through other such bindings, not through a replaced
    var): the operators fused into the group, the constant-only steps FoldConstant computed away. Any other binding with a new var takes the records of the first later binding
    that reads it (LegalizeOps emits an operator's inner steps before its result). Constants keep their
    records; a new constant is attributed to its first reader.
    """
    layers = Layers.of(before)
    if not layers.records:
        return after
    old = bindings_of(before)
    records_of = {b.var: layers.bindings[i] if i < len(layers.bindings) else () for i, b in enumerate(old)}
    value_of = {b.var: b.value for b in old}
    old_reads_of: dict[relax.Var, list[relax.Var]] = {}  # vars_read of a binding of `before`, asked once

    def old_reads(var: relax.Var) -> list[relax.Var]:
        if var not in old_reads_of:
            old_reads_of[var] = vars_read(value_of[var])
        return old_reads_of[var]

    new = bindings_of(after)
    new_reads = [vars_read(b.value) for b in new]
    kept = {b.var for b in new if b.var in value_of}
    replaced: dict[relax.Var, relax.Var] = {}  # a new var of `after` -> the var of `before` it replaces
    readers = [(value_of[b.var], b.value, old_reads(b.var), reads)
               for b, reads in zip(new, new_reads) if b.var in value_of]
    body_reads = (vars_read(before.body.body), vars_read(after.body.body))
    for old_value, new_value, old_var_reads, new_var_reads in readers + [(before.body.body, after.body.body,
                                                                          *body_reads)]:
        if isinstance(old_value, relax.Var) and not isinstance(new_value, relax.Var):
            continue  # an alias now bound to the computation itself (FuseTIR): it replaces nothing it reads
        if len(old_var_reads) == len(new_var_reads):
            for old_var, new_var in zip(old_var_reads, new_var_reads):
                if old_var in value_of and old_var not in kept and new_var not in value_of:
                    replaced.setdefault(new_var, old_var)
    if module is not None:
        for new_var, old_var in _fused_results(old, kept, replaced, new, module).items():
            replaced.setdefault(new_var, old_var)
    replacing = set(replaced.values())

    def with_dropped_ancestry(var: relax.Var) -> set[int]:
        found, stack, seen = set(records_of[var]), [var], {var}
        while stack:
            for source in old_reads(stack.pop()):
                if source in value_of and source not in kept and source not in replacing and source not in seen:
                    seen.add(source)
                    found |= set(records_of[source])
                    stack.append(source)
        return found

    per_binding: list[set[int]] = []
    for binding in new:
        origin = binding.var if binding.var in value_of else replaced.get(binding.var)
        per_binding.append(with_dropped_ancestry(origin) if origin is not None else set())
    first_reader: dict[relax.Var, int] = {}
    for position, reads in enumerate(new_reads):
        for source in reads:
            first_reader.setdefault(source, position)
    for position in reversed(range(len(new))):
        if not per_binding[position] and new[position].var in first_reader:
            per_binding[position] = set(per_binding[first_reader[new[position].var]])
    return with_layers(after, layers.records, per_binding, layers.constants)


def _fused_results(old: list[relax.Binding], kept: set[relax.Var], replaced: dict[relax.Var, relax.Var],
                   new: list[relax.Binding], module: tvm.IRModule) -> dict[relax.Var, relax.Var]:
    """Each new var of `new` bound to a call of a relax function of `module` (a fused group) -> the var of `old`
    (the bindings before the pass) that the function's result computes; `kept` are the vars both have,
    `replaced` the new vars already known (new var -> old var). Matched in binding order: the function's
    parameters stand for the call's arguments (a new var for the old var it replaces), and each of its bindings
    for the not yet matched binding of `old` with the same operator and the same vars and constants read.
    A group any binding of which matches nothing (or whose result is not one of its vars) is left out."""
    readers: dict[relax.Var, list[relax.Binding]] = {}  # an old var -> the dropped old bindings reading it
    for binding in old:
        if binding.var not in kept:
            for source in vars_read(binding.value):
                readers.setdefault(source, []).append(binding)
    known, found, taken = dict(replaced), {}, set()
    for binding in new:
        value = binding.value
        if binding.var in kept or not isinstance(value, relax.Call) or not isinstance(value.op, tvm.ir.GlobalVar):
            continue
        func = module.functions.get(value.op)
        if not isinstance(func, relax.Function) or len(func.params) != len(value.args):
            continue
        env: dict[relax.Var, relax.Expr] = {param: known.get(arg, arg)
                                            for param, arg in zip(func.params, value.args)}
        for inner in bindings_of(func):
            origin = _matching_binding(inner.value, env, readers, taken)
            if origin is None:
                break
            env[inner.var] = origin.var
            taken.add(origin.var)
        else:
            result = func.body.body
            if isinstance(result, relax.Var) and result in env and isinstance(env[result], relax.Var):
                found[binding.var] = known[binding.var] = env[result]
    return found


def _matching_binding(value: relax.Expr, env: dict, readers: dict[relax.Var, list[relax.Binding]],
                      taken: set[relax.Var]) -> Optional[relax.Binding]:
    """The first binding of `readers` (old var -> the old bindings reading it) not in `taken` whose value is
    `value` (a fused function's binding) with its vars put through `env`: the same operator and callee, the same
    vars and constants read in the same order. None when there is none (or `value` reads no var)."""
    if not isinstance(value, relax.Call):
        return None
    leaves = [env.get(leaf, leaf) if isinstance(leaf, relax.Var) else leaf for leaf in _leaves(value)]
    first = next((leaf for leaf in leaves if isinstance(leaf, relax.Var)), None)
    for candidate in readers.get(first, []) if first is not None else []:
        other = candidate.value
        if (candidate.var not in taken and isinstance(other, relax.Call) and other.op.same_as(value.op)
                and _callee(other).same_as(_callee(value))
                and _same_leaves(_leaves(other), leaves)):
            return candidate
    return None


def _callee(call: relax.Call) -> relax.Expr:
    """The GlobalVar a call_tir-like call names as its first argument, else its operator."""
    return call.args[0] if call.args and isinstance(call.args[0], tvm.ir.GlobalVar) else call.op


def _leaves(value: relax.Expr) -> list[relax.Expr]:
    """The vars and constants `value` reads directly, in order: call arguments, also inside a tuple argument."""
    if isinstance(value, relax.Call):
        return [leaf for arg in value.args for leaf in _leaves(arg)]
    if isinstance(value, relax.Tuple):
        return [leaf for field in value.fields for leaf in _leaves(field)]
    return [value] if isinstance(value, (relax.Var, Constant)) else []


def _same_leaves(first: list[relax.Expr], second: list[relax.Expr]) -> bool:
    """Whether two lists of `_leaves` read the same vars (the same objects) and equal constants."""
    return len(first) == len(second) and all(
        a.same_as(b) or (isinstance(a, Constant) and isinstance(b, Constant) and tvm.ir.structural_equal(a, b))
        for a, b in zip(first, second))


def keeping_layers(inner: tvm.transform.Pass) -> tvm.transform.Pass:
    """`inner` (a pass rewriting `main`), followed by `carry_layers` from `main` before it to `main` after."""

    @tvm.transform.module_pass(opt_level=0, name=f"KeepingLayers({inner.info.name})")
    def run(mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        before = mod["main"]
        result = inner(mod)
        result["main"] = carry_layers(before, result["main"], result)
        return result

    return run


def constant_bytes(main: relax.Function) -> int:
    """Bytes of the distinct tensor constants main's calls read (not scalars), constants of the same dtype, shape
    and bytes once, as the bundle stores them (`tvm_ext.plan.constant_pool`, whose `content_of` keys them the same
    way; not imported: the plan package reads this module). Each Constant object is copied to the host and its
    bytes keyed once, however many calls read it."""
    constants = {arg for binding in bindings_of(main) if isinstance(binding.value, relax.Call)
                 for arg in binding.value.args if isinstance(arg, Constant) and hasattr(arg.value, "numpy")}
    nbytes: dict[tuple[str, tuple[int, ...], bytes], int] = {}
    for constant in constants:
        values = constant.value.numpy()
        nbytes[(values.dtype.str, tuple(values.shape), values.tobytes())] = values.nbytes
    return sum(nbytes.values())
