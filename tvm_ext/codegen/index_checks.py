"""Kernels whose loads and stores go where tensor data says: indices checked before anything is written, or
the kernel refused.

A load or store is *data-dependent* when its position reads a value loaded from a buffer (through any
variable bound to such a value). Every data-dependent access of a lowered kernel (flat buffers, pointer
parameters) must be one of:

- positioned only by *guarded* parameters: indices of an index operator (`tvm_ext.transform.index_guards`
  records them on the kernel with their bounds, INDEX_GUARDS_ATTR, and the bounds are those of TVM's
  lowering of that operator: `tvm_ext.transform.index_operands`), or buffers the kernel fills only from
  them (not a buffer a call is handed: what the call writes there is not known). A guarded parameter whose
  value is not a compile-time constant is checked by the kernel itself (`check_guarded_indices`), before
  it writes anything;
- proved inside its buffer by TVM's integer analysis, with every loop variable in its range, every branch
  condition around it (also `if_then_else`, `?:`, `&&` and `||` inside an expression) assumed, a value
  loaded from a constant operand between its smallest and largest value (CONSTANT_RANGES_ATTR: int8
  RESIZE_NEAREST_NEIGHBOR's compile-time row and column tables), from a guarded parameter inside its bounds,
  and any other loaded value anywhere in its type's range (an int8 table index `x + 128`, an index clamped
  by min/max);
- a read of one of our own kernels' lookup tables (operand roles `TABLE_ROLES`): their index is computed
  by the kernel's author from values whose range the kernel's arithmetic bounds (int8 softmax's
  `row_max - x` is never negative since the row maximum is at least x), which the analysis cannot see.

`unchecked_accesses` lists the others; the compiler refuses a kernel with any (UncheckedIndexError names it;
the codegen stage turns it into one line naming the model's operator). A loop whose bounds read data is
refused too (tvm_ext.transform.refuse_data_dependent_loops refuses it earlier, naming the layer).

Every condition is assumed only where C evaluates what it guards: TVM prints `if_then_else` and Select as
`?:`, And and Or as `&&` and `||`. A part of an index that reads a buffer the kernel writes is a fresh
variable at each place (its value may change between a test and an access); a part that reads only inputs
is the same variable wherever it appears, so a bounds test on it bounds the access.
"""

from __future__ import annotations

import math

import numpy as np
import tvm_ffi
from tvm import ir, tirx
from tvm.ir.prim import expr as prim
from tvm.sym import Analyzer

from tvm_ext.tir import tir_walk
from tvm_ext.layers import CONSTANT_RANGES_ATTR, NUM_OUTPUTS_ATTR, OPERAND_ROLES_ATTR, SCRATCH_ATTR
from tvm_ext.transform.index_guards import guards_of

# The operand roles of our kernels' lookup tables (tvm_ext.kernels.int8_tables, softmax_int16; int8 DIV's
# reciprocals, indexed by the divisor's distance from its zero point, 0 to 256).
TABLE_ROLES = frozenset({"table", "exp_table", "exp_lut", "one_over_one_plus_x_lut", "reciprocals",
                         "reciprocal_shifts"})

CHECK_FAILED = 1  # what a kernel with run-time index checks returns for an index outside its bounds


class UncheckedIndexError(RuntimeError):
    """A kernel with a data-dependent access that is neither checked nor proved in bounds."""

    def __init__(self, kernel: str, problems: list[str]) -> None:
        super().__init__(f"{kernel}: {problems[0]}")
        self.kernel, self.problems = kernel, problems

    def __reduce__(self):
        return UncheckedIndexError, (self.kernel, self.problems)


def returns_status(func: tirx.PrimFunc) -> bool:
    """Whether the kernel checks indices at run time: it then returns int32_t, 0 or CHECK_FAILED."""
    return any(at_run_time for at_run_time, _ in guards_of(func).values())


def _check(values: tirx.Buffer, bounds: tuple[tuple[int, int], ...]) -> tirx.Stmt:
    """A loop over every element of the flat buffer `values` that returns CHECK_FAILED at the first one
    outside its coordinate's bounds (element i is coordinate i % len(bounds)); a test the element type
    cannot fail is left out (-Wtype-limits). (Measured: one unsigned comparison in place of the two saves
    no instruction under arm-none-eabi-gcc -O2, which makes it itself.)"""
    dtype = str(values.dtype)
    info = np.iinfo(dtype)
    rows = tirx.Var("i", "int32")
    tests = []
    for column, (low, high) in enumerate(bounds):
        value = tirx.BufferLoad(values, [rows * len(bounds) + column])
        outside = []
        if low > info.min:
            outside.append(tirx.LT(value, tirx.const(low, dtype)))
        if high <= info.max:
            outside.append(tirx.GE(value, tirx.const(high, dtype)))
        if outside:
            test = outside[0] if len(outside) == 1 else tirx.Or(outside[0], outside[1])
            tests.append(tirx.IfThenElse(test, tirx.Return(tirx.IntImm("int32", CHECK_FAILED)), None))
    count = int(values.shape[0]) // len(bounds)
    if not tests or count == 0:
        return tirx.Evaluate(0)
    body = tests[0] if len(tests) == 1 else tirx.SeqStmt(tests)
    return tirx.For(rows, tirx.IntImm("int32", 0), tirx.IntImm("int32", count), tirx.ForKind.SERIAL, body)


def _flat_elements(body: tirx.Stmt, pointer: ir.Var) -> int:
    """The elements of the parameter `pointer`: those of a buffer the kernel declares over it."""
    for node in tir_walk.walk(body):
        if isinstance(node, tirx.DeclBuffer) and node.data is not None and node.data.same_as(pointer):
            return math.prod(int(d) for d in node.buffer.shape)
    raise RuntimeError(f"the kernel declares no buffer over its parameter {pointer.name}")


def _with_checks(func: tirx.PrimFunc) -> tirx.PrimFunc:
    guards = {param: bounds for param, (at_run_time, bounds) in guards_of(func).items() if at_run_time}
    if not guards:
        return func
    checks = []
    for param, bounds in sorted(guards.items()):
        pointer = func.params[param]
        element = pointer.ty.element_type.dtype
        values = tirx.decl_buffer((_flat_elements(func.body, pointer),), str(element), "indices", data=pointer)
        checks += [tirx.DeclBuffer(values, data=pointer), _check(values, bounds)]
    body = tirx.SeqStmt([*checks, func.body, tirx.Return(tirx.IntImm("int32", 0))])
    return tirx.PrimFunc(func.params, body, ir.PrimType("int32"), func.attrs)


@tirx.transform.prim_func_pass(opt_level=0, name="tvm_ext.CheckGuardedIndices")
def check_guarded_indices(func: tirx.PrimFunc, _mod, _ctx) -> tirx.PrimFunc:
    """A kernel with parameters guarded at run time: first a loop per such parameter that returns
    CHECK_FAILED at a value outside its bounds, then its body, then `return 0` (it returns int32_t). Runs on
    pointer parameters (after codegen_c's plain_c_signature). Other kernels are unchanged."""
    return _with_checks(func)


# ---------------------------------------------------------------------------------------------------------
# The verification.


# What the integer analysis reasons about; any other part of an index is a variable to it (opaque_loads).
_ARITHMETIC = (prim.Add, prim.Sub, prim.Mul, prim.Div, prim.Mod, prim.FloorDiv, prim.FloorMod, prim.Min, prim.Max,
               prim.EQ, prim.NE, prim.LT, prim.LE, prim.GT, prim.GE, prim.And, prim.Or, prim.Not, prim.Select,
               prim.IntImm, prim.FloatImm, ir.Var)
_INTEGER_CODES = frozenset({0, 1, 6})  # DLPack's int, uint and bool type codes


def _buffer_of(access) -> ir.Var:
    return access.source if isinstance(access, ir.TensorLoad) else access.buffer


_UNKNOWN = "values the kernel does not store itself"  # a source no guard covers (a helper's writes)


def _handed_buffers(call: ir.Call, buffers) -> list:
    """The buffers (or pointers) `call` receives as arguments, by address (`address_of(b[i])`) or themselves
    (a var of `buffers`, or a pointer): what it may write. A value loaded from a buffer is no such argument."""
    handed = []
    for arg in call.args:
        if isinstance(arg, ir.Call) and isinstance(arg.op, ir.Op) and arg.op.name == "tirx.address_of":
            handed += [load.source for load in arg.args if isinstance(load, ir.TensorLoad)]
        elif isinstance(arg, ir.Var) and (arg in buffers or isinstance(arg.ty, ir.PointerType)):
            handed.append(arg)
    return handed


class _Kernel:
    """What the verification knows of one lowered kernel: each buffer's root (the pointer parameter it lies
    over, or itself for a local buffer), the variables bound to values, which roots are guarded, lookup
    tables or written, what is known of the values of some parameters (`ranges`: smallest, largest), and
    which roots' values reach each root (`sources`: an input's are its own; an output's, a scratch or local
    buffer's those the kernel stores into it, or _UNKNOWN when a call may write it)."""

    def __init__(self, func: tirx.PrimFunc) -> None:
        params, attrs = list(func.params), func.attrs or {}
        self.roots: dict = {}
        self.bound: dict = {}
        stores, calls = [], []
        for node in tir_walk.walk(func.body):
            if isinstance(node, tirx.DeclBuffer) and node.data is not None:
                data = node.data
                if isinstance(data, ir.Call) and data.op.name == "tirx.buffer_data":
                    data = self.roots.get(data.args[0], data.args[0])
                self.roots[node.buffer] = data
            elif isinstance(node, tirx.AllocBuffer):
                self.roots[node.buffer] = node.buffer
            elif isinstance(node, (tirx.Bind, prim.Let)):
                self.bound[node.var] = node.value
            elif isinstance(node, tirx.BufferStore):
                stores.append(node)
            elif isinstance(node, ir.Call) and node.op.name != "tirx.buffer_data":
                calls.append(node)
        guards = guards_of(func)
        self.guarded = {params[p] for p in guards}
        roles = [str(r) for r in attrs.get(OPERAND_ROLES_ATTR, [])]
        self.tables = {params[i] for i, role in enumerate(roles) if role in TABLE_ROLES and i < len(params)}
        self.ranges = {params[p]: (min(low for low, _ in bounds), max(high for _, high in bounds) - 1)
                       for p, (_, bounds) in guards.items()}
        for entry in attrs.get(CONSTANT_RANGES_ATTR, []):
            self.ranges[params[int(entry[0])]] = (int(entry[1]), int(entry[2]))
        num_inputs = len(params) - int(attrs.get(NUM_OUTPUTS_ATTR, 0)) - len(attrs.get(SCRATCH_ATTR, []))
        self.sources: dict = {p: {p} for p in params[:num_inputs]}
        for call in calls:  # a buffer handed to a call (its address, or itself) may hold anything after it
            for buffer in _handed_buffers(call, self.roots):
                self.sources.setdefault(self.root(buffer), set()).add(_UNKNOWN)
        self.written = {self.root(store.buffer) for store in stores}
        self._spread_sources(stores)

    def root(self, buffer: ir.Var) -> ir.Var:
        return self.roots.get(buffer, buffer)

    def loads(self, expr: ir.Expr) -> list:
        """The loads `expr` reads, also through the variables it reads that are bound to values."""
        found, stack, seen = [], [expr], set()
        while stack:
            for node in tir_walk.walk(stack.pop()):
                if isinstance(node, ir.TensorLoad):
                    found.append(node)
                elif isinstance(node, ir.Var) and node in self.bound and node not in seen:
                    seen.add(node)
                    stack.append(self.bound[node])
        return found

    def _spread_sources(self, stores: list) -> None:
        """`sources` of every root the kernel stores into, to a fixed point."""
        for store in stores:
            self.sources.setdefault(self.root(store.buffer), set())
        changed = True
        while changed:
            changed = False
            for store in stores:
                target = self.sources.setdefault(self.root(store.buffer), set())
                for load in self.loads(store.value):
                    new = self.sources.get(self.root(load.source), {_UNKNOWN}) - target
                    if new:
                        target |= new
                        changed = True

    def index_sources(self, index: ir.Expr) -> set:
        """The roots whose values position an access at `index` (_UNKNOWN among them when some are unknown)."""
        return {source for load in self.loads(index)
                for source in self.sources.get(self.root(load.source), {_UNKNOWN})}


class _Verifier:
    """Walks a kernel's statements with its loop ranges and branch conditions, listing the data-dependent
    accesses that are not allowed (see the module docstring)."""

    def __init__(self, func: tirx.PrimFunc) -> None:
        self.kernel = _Kernel(func)
        self.names = {param: param.name for param in func.params}
        self.analyzer = Analyzer()
        self.opaque: list[tuple[ir.TensorLoad, ir.Var]] = []  # each distinct load and the variable for it
        self.problems: list[str] = []

    def statement(self, stmt: tirx.Stmt) -> None:
        if isinstance(stmt, tirx.For):
            for bound in (stmt.min, stmt.extent):
                if self.kernel.loads(bound):
                    self.problems.append("its kernel has a loop whose bounds are read from data")
            self.analyzer.bind(stmt.loop_var, ir.Range.from_min_extent(stmt.min, stmt.extent))
            self.statement(stmt.body)
        elif isinstance(stmt, tirx.IfThenElse):
            self.expression(stmt.condition)
            self.branches(stmt.condition, stmt.then_case, stmt.else_case, self.statement)
        elif isinstance(stmt, tirx.While):
            if self.kernel.loads(stmt.condition):
                self.problems.append("its kernel has a while loop whose condition is read from data")
            self.expression(stmt.condition)
            self.statement(stmt.body)
        elif isinstance(stmt, tirx.BufferStore):
            self.expression(stmt.value)
            for index in stmt.indices:
                self.expression(index)
            self.access(stmt)
        elif isinstance(stmt, (tirx.SeqStmt, tirx.AttrStmt)):
            for child in tir_walk.children(stmt):
                if isinstance(child, tirx.Stmt):
                    self.statement(child)
        else:  # Bind, Evaluate, Return, AssertStmt, DeclBuffer, AllocBuffer, Break, Continue
            for child in tir_walk.children(stmt):
                if isinstance(child, ir.Expr) and not isinstance(child, ir.Var):
                    self.expression(child)

    def branches(self, condition: ir.Expr, then_case, else_case, visit) -> None:
        """`visit(then_case)` assuming `condition`, `visit(else_case)` (if any) assuming its negation."""
        assumed = self.opaque_loads(condition)
        with self.analyzer.constraint_scope(assumed):
            visit(then_case)
        if else_case is not None:
            with self.analyzer.constraint_scope(tirx.Not(assumed)):
                visit(else_case)

    def expression(self, expr: ir.Expr) -> None:
        """Every access inside `expr`, each under the conditions C evaluates it under."""
        if isinstance(expr, prim.Select):
            self.expression(expr.condition)
            self.branches(expr.condition, expr.true_value, expr.false_value, self.expression)
        elif isinstance(expr, ir.Call) and isinstance(expr.op, ir.Op) and expr.op.name == "prim.if_then_else":
            self.expression(expr.args[0])
            self.branches(expr.args[0], expr.args[1], expr.args[2], self.expression)
        elif isinstance(expr, (prim.And, prim.Or)):
            self.expression(expr.a)
            first = expr.a if isinstance(expr, prim.And) else tirx.Not(expr.a)
            self.branches(first, expr.b, None, self.expression)
        else:
            if isinstance(expr, ir.TensorLoad):
                self.access(expr)
            for child in tir_walk.children(expr):
                if isinstance(child, ir.Expr) and not isinstance(child, ir.Var):
                    self.expression(child)

    def access(self, access) -> None:
        """Records a problem unless the load or store `access` is allowed (module docstring)."""
        buffer = _buffer_of(access)
        root = self.kernel.root(buffer)
        for index in access.indices:
            if not self.kernel.loads(index):
                continue
            sources = self.kernel.index_sources(index)
            guarded = bool(sources) and sources <= self.kernel.guarded
            if guarded or root in self.kernel.tables or self.proved(index, buffer):
                continue
            name = self.names.get(root, buffer.name)
            readers = ", ".join(sorted(s if s is _UNKNOWN else self.names.get(s, s.name)
                                       for s in sources - self.kernel.guarded))
            verb = "writes" if isinstance(access, tirx.BufferStore) else "reads"
            self.problems.append(f"its kernel {verb} {name} at positions read from {readers or 'data'}, which "
                                 "nothing checks")

    def proved(self, index: ir.Expr, buffer: ir.Var) -> bool:
        """Whether the analysis proves `index` inside the flat `buffer`."""
        if len(buffer.shape) != 1:
            return False
        value = self.opaque_loads(self.expanded(index))
        return (self.analyzer.can_prove(value >= tirx.const(0, value.ty.dtype))
                and self.analyzer.can_prove(value < tirx.const(int(buffer.shape[0]), value.ty.dtype)))

    def expanded(self, expr: ir.Expr) -> ir.Expr:
        """`expr` with every variable bound to a value replaced by that value."""
        def expand(node):
            if isinstance(node, ir.Var) and node in self.kernel.bound:
                return self.expanded(self.kernel.bound[node])
            if isinstance(node, prim.Let):  # its variable is bound: the body with it replaced is its value
                return self.expanded(node.body)
            return None
        return tir_walk.map_nodes(expr, expand)

    def opaque_loads(self, expr: ir.Expr) -> ir.Expr:
        """`expr` as integer arithmetic over variables: each load, and each other part that is not integer
        arithmetic (a float rounded to an integer, a call), replaced by a variable of its type, the same
        variable for equal parts. A load's variable lies in the range known of the parameter it is loaded
        from, any other in its type's range: what the analysis knows of them (and the conditions around an
        access, which name the same parts, bound them further)."""
        def replace(node):
            if isinstance(node, _ARITHMETIC) or not isinstance(node, ir.Expr):
                return None
            if isinstance(node, prim.Cast) and node.value.ty.dtype.type_code in _INTEGER_CODES:
                return None
            # A part reading a buffer the kernel writes may change between two places: no shared variable.
            stable = not any(self.kernel.root(load.source) in self.kernel.written for load in self.kernel.loads(node))
            for part, var in self.opaque if stable else ():
                if tvm_ffi.structural_equal(part, node):
                    return var
            var = tirx.Var(f"part{len(self.opaque)}", node.ty.dtype)
            self.opaque.append((node, var))
            known = self.kernel.ranges.get(self.kernel.root(node.source)) if isinstance(node, ir.TensorLoad) else None
            if known is not None:
                self.analyzer.bind(var, ir.Range.from_min_extent(known[0], known[1] - known[0] + 1))
            return var
        return tir_walk.map_nodes(self.expanded(expr), replace)


def unchecked_accesses(func: tirx.PrimFunc) -> list[str]:
    """The data-dependent accesses of the lowered kernel `func` that are neither checked nor proved (module
    docstring), one line each; empty when the kernel may run on any data."""
    verifier = _Verifier(func)
    verifier.statement(func.body)
    return list(dict.fromkeys(verifier.problems))
