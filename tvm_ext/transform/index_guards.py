"""Every index operand of `main` checked: constants at compile time, anything else by its kernel at run time.

Two passes around TVM's folding, legalization and fusion:

- `GuardIndexOperands` (before any folding) puts each index operand (`tvm_ext.transform.index_operands`)
  behind a guard: a `call_pure_packed` of `tvm_ext.index_guard` that returns the operand unchanged and
  carries its bounds. FoldConstant folds no guard (it folds only call_tir and legalizable operators), so an
  index operator never runs on the host (FoldConstant would run TVM's lowering, which reads and writes
  outside its tensors for a bad index, in the compiler's process), and a guard's operand still folds to the
  constant it is.
- `ResolveIndexGuards` (after FuseTIR) removes each guard: the kernel call reading it reads the operand
  itself, and the kernel's PrimFunc records the guard (INDEX_GUARDS_ATTR: the parameter and its bounds). A
  constant operand is checked here (IndexOutOfRangeError naming the layer: exit 2); any other is checked by
  the kernel before it writes anything (`tvm_ext.codegen.index_checks`: the kernel returns a status the entry
  function turns into `<MODEL>_ERROR_INDEX_OUT_OF_RANGE`).
"""

from __future__ import annotations

from dataclasses import dataclass

import tvm
import tvm_ffi
from tvm import relax, tirx
from tvm.ir.expr import Constant

from tvm_ext.layers import INDEX_GUARDS_ATTR, LayerRecord, Layers, bindings_of, operator_phrase
from tvm_ext.transform.index_operands import Bounds, UnknownShapeError, bounds_violation, index_operand

GUARD_FUNCTION = "tvm_ext.index_guard"
_CALL_PURE_PACKED = tvm.ir.Op.get("relax.call_pure_packed")
_CALL_TIR = tvm.ir.Op.get("relax.call_tir")
_SHAPE_OF = tvm.ir.Op.get("relax.shape_of")


@tvm_ffi.register_error
class IndexOutOfRangeError(RuntimeError):
    """A model's constant index lies outside its axis, or an index operator's indices cannot be checked.
    The passes run behind TVM's FFI, which re-creates the exception from its one-line message (model,
    operator, layer, what is wrong)."""


def _guard(operand: relax.Expr, bounds: Bounds) -> relax.Call:
    limits = [relax.prim_value(tirx.IntImm("int64", v)) for pair in bounds for v in pair]
    return relax.op.call_pure_packed(GUARD_FUNCTION, operand, *limits, ty_args=operand.ty)


def _guarded(value: relax.Expr) -> tuple[relax.Expr, Bounds] | None:
    """The operand and bounds of a guard call, or None when `value` is not one."""
    if not (isinstance(value, relax.Call) and value.op.same_as(_CALL_PURE_PACKED)):
        return None
    callee = value.args[0]
    if not (isinstance(callee, relax.ExternFunc) and str(callee.global_symbol) == GUARD_FUNCTION):
        return None
    limits = [int(v.value) for v in value.args[2:]]
    return value.args[1], tuple(zip(limits[0::2], limits[1::2]))


def _where(model: str, records: tuple[LayerRecord, ...]) -> str:
    return f"{model}: {operator_phrase(records) if records else 'an index operator'}"


@relax.expr_functor.mutator
class _Guarder(relax.PyExprMutator):
    def __init__(self, mod: tvm.IRModule, model: str, main: relax.Function) -> None:
        super().__init__(mod)
        layers = Layers.of(main)
        self.model = model
        self.records = {b.var: layers.of_binding(i) for i, b in enumerate(bindings_of(main))}
        self.binding: relax.Var | None = None  # the var of the binding being visited

    def visit_var_binding_(self, binding: relax.VarBinding) -> None:
        self.binding = binding.var
        super().visit_var_binding_(binding)

    def visit_call_(self, call: relax.Call) -> relax.Expr:
        call = super().visit_call_(call)
        try:
            operand = index_operand(call)
        except UnknownShapeError as err:
            raise IndexOutOfRangeError(f"{_where(self.model, self.records.get(self.binding, ()))}: its "
                                       f"indices cannot be checked: {err}") from err
        if operand is None:
            return call
        args = list(call.args)
        args[operand.position] = self.builder_.emit(_guard(args[operand.position], operand.bounds))
        return relax.Call(call.op, args, call.attrs, call.ty_args)


@tvm.transform.module_pass(opt_level=0, name="GuardIndexOperands")
class GuardIndexOperands:
    """`main` with each index operand behind a guard (see the module docstring). Wrap it with
    `keeping_layers`: a guard's binding takes the records of the operator that reads it. `model_name` only
    labels errors (an index operator whose shapes are not static: IndexOutOfRangeError)."""

    def __init__(self, model_name: str = "model") -> None:
        self.model_name = model_name

    def transform_module(self, mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        guarder = _Guarder(mod, self.model_name, mod["main"])
        gvar = mod.get_global_var("main")
        guarder.builder_.update_func(gvar, guarder.visit_expr(mod["main"]))
        return guarder.builder_.get()


def index_input_limits(main: relax.Function) -> dict[int, int]:
    """For each input of `main` (by position) whose values reach an index operand, the smallest upper bound of
    those operands' bounds: the self-test draws such an input below it (and from 0), so that the reference
    runtime accepts the indices. An operand reaches back to an input through any calls whose only
    non-constant operands come from that one input (ONNX's `where(i < 0, i + size, i)`, a cast, a reshape;
    a tensor's shape is a constant)."""
    value_of = {binding.var: binding.value for binding in bindings_of(main)}
    position = {param: k for k, param in enumerate(main.params)}
    reached: dict = {}  # a var -> the inputs its value comes from (None: something else than a call)

    def inputs_reached(expr: relax.Expr) -> set:
        if not isinstance(expr, relax.Var):
            return set()  # a constant, a shape, a prim value
        if expr in position:
            return {expr}
        if expr not in reached:
            value = value_of.get(expr)
            if isinstance(value, relax.Call) and value.op.same_as(_SHAPE_OF):
                reached[expr] = set()
            elif isinstance(value, relax.Call):
                reached[expr] = {found for arg in value.args for found in inputs_reached(arg)}
            else:
                reached[expr] = {None}
        return reached[expr]

    limits: dict[int, int] = {}
    for value in value_of.values():
        if not isinstance(value, relax.Call):
            continue
        try:
            operand = index_operand(value)
        except UnknownShapeError:
            continue
        if operand is None:
            continue
        sources = inputs_reached(value.args[operand.position])
        if len(sources) == 1 and None not in sources:
            k, high = position[next(iter(sources))], operand_high(operand.bounds)
            limits[k] = min(limits.get(k, high), high)
    return limits


def operand_high(bounds: Bounds) -> int:
    """The smallest upper bound of `bounds` (every coordinate takes the values in [0, it) when all lows are
    at most 0)."""
    return min(high for _, high in bounds)


@dataclass(frozen=True)
class _Guard:
    """A guard binding of `main`: its operand, bounds and the records of the operator it guards."""

    operand: relax.Expr
    bounds: Bounds
    records: tuple[LayerRecord, ...]


def _guards(main: relax.Function) -> dict[relax.Var, _Guard]:
    layers, found = Layers.of(main), {}
    for position, binding in enumerate(bindings_of(main)):
        guarded = _guarded(binding.value)
        if guarded is not None:
            found[binding.var] = _Guard(*guarded, layers.of_binding(position))
    return found


def guard_attr(guards: tuple[tuple[int, bool, Bounds], ...]) -> list[list[int]]:
    """INDEX_GUARDS_ATTR's value: per guarded parameter [parameter index, 1 if checked at run time else 0,
    low0, high0, low1, high1, ...]."""
    return [[param, int(at_run_time), *(v for pair in bounds for v in pair)] for param, at_run_time, bounds in guards]


def guards_of(func: tirx.PrimFunc) -> dict[int, tuple[bool, Bounds]]:
    """A kernel's guarded parameters (INDEX_GUARDS_ATTR): parameter index -> (checked at run time, bounds)."""
    found = {}
    for entry in (func.attrs or {}).get(INDEX_GUARDS_ATTR, []):
        values = [int(v) for v in entry]
        found[values[0]] = (bool(values[1]), tuple(zip(values[2::2], values[3::2])))
    return found


@relax.expr_functor.mutator
class _Resolver(relax.PyExprMutator):
    """main without its guards; each call_tir that read a guard reads its operand, and calls a PrimFunc
    that records the guard (a copy of the PrimFunc when other calls of it read other guards or none)."""

    def __init__(self, mod: tvm.IRModule, model: str, guards: dict[relax.Var, _Guard]) -> None:
        super().__init__(mod)
        self.mod, self.model, self.guards = mod, model, guards
        self.claimed: dict[tvm.ir.GlobalVar, dict[tuple, tvm.ir.GlobalVar]] = {}

    def visit_var_binding_(self, binding: relax.VarBinding) -> None:
        if binding.var not in self.guards:
            super().visit_var_binding_(binding)

    def visit_var_(self, var: relax.Var) -> relax.Expr:
        if var in self.guards:  # read by anything but a kernel call's argument list
            raise IndexOutOfRangeError(f"{_where(self.model, self.guards[var].records)}: its indices cannot be "
                                       "checked (they do not reach its kernel as a parameter)")
        return super().visit_var_(var)

    def visit_call_(self, call: relax.Call) -> relax.Expr:
        if not call.op.same_as(_CALL_TIR):
            return super().visit_call_(call)
        args, guards = [], []
        for param, arg in enumerate(call.args[1].fields):
            guard = self.guards.get(arg)
            if guard is None:
                args.append(self.visit_expr(arg))
                continue
            constant = isinstance(guard.operand, Constant)
            if constant:
                problem = bounds_violation(guard.operand.value.numpy(), guard.bounds)
                if problem:
                    raise IndexOutOfRangeError(f"{_where(self.model, guard.records)}: {problem} (a constant index)")
            args.append(guard.operand if constant else self.visit_expr(guard.operand))
            guards.append((param, not constant, guard.bounds))
        gvar = self._kernel(call.args[0], tuple(guards))
        return relax.Call(call.op, [gvar, relax.Tuple(args), *call.args[2:]], call.attrs, call.ty_args)

    def _kernel(self, gvar: tvm.ir.GlobalVar, guards: tuple) -> tvm.ir.GlobalVar:
        """The PrimFunc to call for `gvar` read with `guards`: gvar itself for the first guard set it meets."""
        by_guards = self.claimed.setdefault(gvar, {})
        if guards not in by_guards:
            func = self.mod[gvar]
            if guards:
                func = func.with_attr(INDEX_GUARDS_ATTR, guard_attr(guards))
            if by_guards:
                by_guards[guards] = self.builder_.add_func(func, gvar.name_hint)
            else:
                by_guards[guards] = gvar
                self.builder_.update_func(gvar, func)
        return by_guards[guards]


@tvm.transform.module_pass(opt_level=0, name="ResolveIndexGuards")
class ResolveIndexGuards:
    """`main` without guards, each guard recorded on the kernel that reads it (see the module docstring).
    Wrap it with `keeping_layers`. `model_name` only labels errors: IndexOutOfRangeError for a constant index
    outside its bounds, or a guard that reaches no kernel call."""

    def __init__(self, model_name: str = "model") -> None:
        self.model_name = model_name

    def transform_module(self, mod: tvm.IRModule, _ctx: tvm.transform.PassContext) -> tvm.IRModule:
        guards = _guards(mod["main"])
        if not guards:
            return mod
        resolver = _Resolver(mod, self.model_name, guards)
        gvar = mod.get_global_var("main")
        resolver.builder_.update_func(gvar, resolver.visit_expr(mod["main"]))
        return resolver.builder_.get()
