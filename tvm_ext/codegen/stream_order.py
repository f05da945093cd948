"""Stream orders: in what order a lowered kernel reads each input while it writes each output, from its TIR.

The memory planner may let an output share bytes with an input that dies at the kernel's call if the
kernel's write front stays behind its read front (`memory_planner.api.StreamOrder`). This module derives
that order from the kernel as it is scheduled and lowered (flat buffers, pointer parameters), not from a
table of operator kinds:

- The kernel's body is a sequence of top-level statements. Each top-level loop is cut into at most
  `PASSES_PER_LOOP` passes of consecutive iterations in its own order (it must be a serial loop with a
  constant extent); while the loops nested directly in it (serial, constant extent) keep the number of
  passes within that cap, each of their iterations is a pass of its own too (a row loop over a pixel
  loop: one pass per pixel, so the write front follows the read front pixel by pixel). Any other
  top-level statement is one pass.
- In each pass, the bytes read of an input (written of an output) are bounded by TVM's integer analysis of
  every load (store) index, the pass's iterations and every inner loop bound to their ranges (an index with a
  `Select` in it simplified first, so a `Select` the pass decides is its branch). A branch
  whose condition the analysis proves false in this pass (a paired pixel's branch at an odd column, a
  border's branch on an interior row; read through a truth hint, `helper_access.register_truth_hint`) is left
  out; any other condition is ignored (a guarded load counts
  as a read): the bounds may be wider than the truth, never narrower, and a wider bound only asks for
  more distance between the two buffers.
- An address handed to a helper whose op has a `tvm_ext.tir.helper_access` record (the DSP MAC helpers) is an
  access too: the record gives the elements the call reaches from that address, its sizes read from the
  call's constant arguments, and the address's index is bounded like a load's. An argument may be a choice
  (nested or not) between such addresses (an op registered by `helper_access.register_address_choice`: TIR has
  no `Select` of pointers) or between constants (a `Select`): one call for an interior pixel and a border
  pixel, `c ? &x[i] : &window[0]` and `c ? 512 : 96`. The call is then read once per case, each a truth value of
  every distinct condition among its arguments (at most `SELECT_CONDITIONS`, else its pointers get no order),
  each argument taking the branch its case names; a case whose truth values this pass's analysis proves
  impossible is left out, as a branch that never runs is.
- A kernel that uses an input or output pointer in any other way (an address handed to a helper without a
  record, a vector of unknown extent) or whose bounds are not finite gets no stream order for that pointer.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Union

import tvm_ffi
from tvm import ir, tirx
from tvm.ir.prim import expr as prim
from tvm.sym import Analyzer

from memory_planner.api import Interval, StreamOrder
from memory_planner.plan import DTYPE_BYTES, ParameterStream
from tvm_ext.tir import tir_walk
from tvm_ext.tir.helper_access import PointerAccess, helper_access, is_address_choice, is_truth_hint

PASSES_PER_LOOP = 256
SELECT_CONDITIONS = 4
"""At most this many distinct conditions of choices among one helper call's arguments (2**4 cases to read)."""
_UNBOUNDED = 2**62  # const_int_bound reports an unknown bound as +-(2**63 - 1)


@dataclass(frozen=True)
class _Pass:
    """One pass: the statement it runs, with each enclosing loop of a top-level nest bound to the
    iterations (first, count) this pass runs of it."""

    body: tirx.Stmt
    loops: tuple[tuple[tirx.For, int, int], ...] = ()


def stream_orders(func: tirx.PrimFunc, num_inputs: int, num_outputs: int) -> tuple[ParameterStream, ...]:
    """Every (output, input) pair of the lowered kernel `func` whose order this module can derive."""
    params = list(func.params)
    inputs, outputs = params[:num_inputs], params[num_inputs:num_inputs + num_outputs]
    pointers = _Pointers(func.body, inputs + outputs)
    plain = [id(p) for p in pointers.plainly_accessed(func.body)]
    reads: dict[int, list[Interval]] = {i: [] for i, p in enumerate(inputs) if id(p) in plain}
    writes: dict[int, list[Interval]] = {o: [] for o, p in enumerate(outputs) if id(p) in plain}
    for passes in (_passes(stmt) for stmt in _top_level(func.body)):
        skeleton = _skeleton(passes[0].body, pointers)  # every pass of a statement runs the same body
        for accessed in (_bytes_accessed(one_pass, skeleton) for one_pass in passes):
            for index, param, found in [(i, inputs[i], reads) for i in reads] + [(o, outputs[o], writes)
                                                                                 for o in writes]:
                bounds = accessed.get(id(param), (0, 0))
                if bounds is None:
                    del found[index]
                else:
                    found[index].append(bounds)
    return tuple(ParameterStream(o, i, StreamOrder(tuple(reads[i]), tuple(writes[o])))
                 for o in writes for i in reads)


def _top_level(stmt: tirx.Stmt) -> Iterator[tirx.Stmt]:
    """The statements the kernel runs one after the other (buffer declarations left out, attributes opened)."""
    if isinstance(stmt, tirx.SeqStmt):
        for child in stmt.seq:
            yield from _top_level(child)
    elif isinstance(stmt, tirx.AttrStmt):
        yield from _top_level(stmt.body)
    elif not isinstance(stmt, (tirx.DeclBuffer, tirx.AllocBuffer)):
        yield stmt


def _is_serial_constant_loop(stmt: tirx.Stmt) -> bool:
    return (isinstance(stmt, tirx.For) and stmt.kind == tirx.ForKind.SERIAL
            and isinstance(stmt.min, prim.IntImm) and isinstance(stmt.extent, prim.IntImm))


def _passes(stmt: tirx.Stmt) -> list[_Pass]:
    """`stmt` cut into passes (module docstring), in the order the kernel runs them."""
    if not _is_serial_constant_loop(stmt):
        return [_Pass(stmt)]
    nest, count = [stmt], int(stmt.extent)
    while _is_serial_constant_loop(nest[-1].body) and count * int(nest[-1].body.extent) <= PASSES_PER_LOOP:
        nest.append(nest[-1].body)
        count *= int(nest[-1].extent)
    if len(nest) > 1:  # every iteration of the nest is a pass
        ranges = [range(int(loop.min), int(loop.min) + int(loop.extent)) for loop in nest]
        return [_Pass(nest[-1].body, tuple((loop, i, 1) for loop, i in zip(nest, point)))
                for point in itertools.product(*ranges)]
    start, extent = int(stmt.min), int(stmt.extent)
    chunk = -(-extent // PASSES_PER_LOOP)
    return [_Pass(stmt.body, ((stmt, first, min(chunk, start + extent - first)),))
            for first in range(start, start + extent, chunk)]


class _Pointers:
    """The kernel's pointer parameters and the buffers declared over them (directly, or over the data of a
    buffer declared over them: TVM 0.27 spells a buffer's pointer `tirx.buffer_data(buffer)`)."""

    def __init__(self, body: tirx.Stmt, params: list[ir.Var]) -> None:
        self.params = params
        self._buffers: list[tuple[ir.Var, ir.Var]] = []  # (a buffer, the parameter it lies over)
        for node in tir_walk.walk(body):
            if isinstance(node, tirx.DeclBuffer) and node.data is not None:
                param = self._param_of_pointer(node.data)
                if param is not None:
                    self._buffers.append((node.buffer, param))

    def _param_of_pointer(self, pointer: ir.Expr) -> ir.Var | None:
        if isinstance(pointer, ir.Call) and pointer.op.name == "tirx.buffer_data":
            return self.param_of(pointer.args[0])
        return next((param for param in self.params if pointer.same_as(param)), None)

    def param_of(self, buffer: ir.Expr) -> ir.Var | None:
        """The parameter whose bytes `buffer` lies over, if it is one of ours."""
        return next((param for known, param in self._buffers if buffer.same_as(known)), None)

    def _owner(self, var: ir.Var) -> ir.Var | None:
        """The parameter `var` is, or whose bytes the buffer `var` lies over."""
        param = next((param for param in self.params if var.same_as(param)), None)
        return param if param is not None else self.param_of(var)

    def plainly_accessed(self, body: tirx.Stmt) -> list[ir.Var]:
        """The parameters whose every use in `body` is a buffer declared over them, loaded or stored scalar by
        scalar: then the loads' and stores' indices are all their accesses. Not so: a pointer or buffer named
        anywhere else (its data handed to a call, bound to another name), a vector load or store, a load
        whose address is taken (`address_of`, for a helper that reads from there on)."""
        named = {id(p): 0 for p in self.params}  # the parameter and its buffers, wherever they appear
        expected = {id(p): 0 for p in self.params}  # ... where a plain use puts them
        not_plain: set[int] = set()
        described = [address for call, access in _helper_calls(body) for address, _ in _addresses(call, access)]
        for node in tir_walk.walk(body):
            if isinstance(node, ir.Var) and (param := self._owner(node)) is not None:
                named[id(param)] += 1
            elif isinstance(node, tirx.DeclBuffer) and (param := self.param_of(node.buffer)) is not None:
                expected[id(param)] += 2  # the buffer, and the pointer (or buffer) its data names
            elif isinstance(node, (ir.TensorLoad, tirx.BufferStore)) \
                    and (param := self.param_of(_buffer_of(node))) is not None:
                expected[id(param)] += 1
                if _is_vector(node.indices):
                    not_plain.add(id(param))
            elif isinstance(node, ir.Call) and node.op.name == "tirx.address_of" \
                    and not any(node.same_as(address) for address in described):
                not_plain.update(id(param) for arg in node.args if isinstance(arg, ir.TensorLoad)
                                 and (param := self.param_of(arg.source)) is not None)
        return [p for p in self.params if named[id(p)] == expected[id(p)] and id(p) not in not_plain]


def _buffer_of(access) -> ir.Var:
    """The buffer a load or store goes through."""
    return access.source if isinstance(access, ir.TensorLoad) else access.buffer


def _helper_calls(body: tirx.Stmt) -> Iterator[tuple[ir.Call, list[PointerAccess]]]:
    """The calls in `body` of ops with a helper access record, each with the record's pointer accesses."""
    for node in tir_walk.walk(body):
        if isinstance(node, ir.Call) and isinstance(node.op, ir.Op) \
                and (access := helper_access(node.op.name)) is not None:
            yield node, list(access.pointers)


def _addresses(call: ir.Call, accesses: list[PointerAccess]) -> Iterator[tuple[ir.Call, PointerAccess]]:
    """Each pointer argument of `call` that its record describes and that is the address of a load
    (``address_of(buffer[index])``), or each such address among the branches of a `Select` there, with its
    access."""
    for access in accesses:
        argument = call.args[access.argument] if access.argument < len(call.args) else None
        for address in _choices(argument):
            if isinstance(address, ir.Call) and address.op.name == "tirx.address_of" \
                    and len(address.args) == 1 and isinstance(address.args[0], ir.TensorLoad):
                yield address, access


def _choice(expr: ir.Expr | None) -> tuple[ir.Expr, ir.Expr, ir.Expr] | None:
    """(condition, value where it holds, value where not) of a choice: a `Select`, or a call of an op registered as
    a choice between two addresses (`tvm_ext.tir.helper_access.register_address_choice`); None for anything else."""
    if isinstance(expr, prim.Select):
        return expr.condition, expr.true_value, expr.false_value
    if isinstance(expr, ir.Call) and isinstance(expr.op, ir.Op) and is_address_choice(expr.op.name) \
            and len(expr.args) == 3:
        return expr.args[0], expr.args[1], expr.args[2]
    return None


def _choices(expr: ir.Expr | None) -> Iterator[ir.Expr | None]:
    """The values `expr` may take through its choices (`_choice`; the branches of nested ones), `expr` itself where
    it is no choice."""
    choice = _choice(expr)
    if choice is None:
        yield expr
    else:
        yield from _choices(choice[1])
        yield from _choices(choice[2])


def _conditions(call: ir.Call) -> list[ir.Expr]:
    """The distinct conditions (structurally) of the choices (`_choice`) at the roots of the arguments of `call`,
    outermost first."""
    found: list[ir.Expr] = []
    stack = list(reversed(call.args))
    while stack:
        choice = _choice(stack.pop())
        if choice is not None:
            if not any(tvm_ffi.structural_equal(choice[0], known) for known in found):
                found.append(choice[0])
            stack += [choice[2], choice[1]]
    return found


def _chosen(expr: ir.Expr, conditions: list[ir.Expr], truths: tuple[bool, ...]) -> ir.Expr:
    """`expr` with each choice (`_choice`) at its root replaced by the branch its condition's truth value (`truths[i]`
    of `conditions[i]`) takes."""
    while (choice := _choice(expr)) is not None:
        truth = next(t for c, t in zip(conditions, truths) if tvm_ffi.structural_equal(choice[0], c))
        expr = choice[1] if truth else choice[2]
    return expr


@dataclass(frozen=True)
class _CallReach:
    """What one helper call reaches through the parameters (`_bytes_accessed` reads it once per pass; it is
    computed once per kernel, from the call alone). `cases`: per case (module docstring), the conditions any of
    which, proved, makes it impossible in a pass, and its reaches in order: (parameter id, the flat index of an
    element reached (`_marked`), its bytes), the index None where the call's reach through that parameter has no bound.
    `unbounded`: the parameters (ids, in order) the call may reach when its arguments choose by more than
    SELECT_CONDITIONS distinct conditions (then `cases` is empty: none of its pointers gets a bound)."""

    cases: tuple[tuple[tuple[ir.Expr, ...], tuple[tuple[int, ir.Expr | _SelectIndex | None, int], ...]], ...]
    unbounded: tuple[int, ...] | None = None


def _call_reach(call: ir.Call, pointers: _Pointers) -> _CallReach:
    """`call`'s `_CallReach`: its arguments' choices (`_choice`) resolved once per case, the elements each case
    reaches through each address its record describes (the address's index plus the lowest and the highest
    offset of the record's span, from the call's constant arguments)."""
    accesses = list(helper_access(call.op.name).pointers)
    conditions = _conditions(call)
    if len(conditions) > SELECT_CONDITIONS:
        return _CallReach((), tuple(id(param) for address, _ in _addresses(call, accesses)
                                    if (param := pointers.param_of(address.args[0].source)) is not None))
    cases = []
    for truths in itertools.product((True, False), repeat=len(conditions)):
        case = ir.Call(call.op, [_chosen(arg, conditions, truths) for arg in call.args], ret_ty=call.ty) \
            if conditions else call
        refuted_by = tuple(tirx.Not(c) if t else c for c, t in zip(conditions, truths))
        cases.append((refuted_by, tuple(_case_reaches(case, accesses, pointers))))
    return _CallReach(tuple(cases))


def _case_reaches(call: ir.Call, accesses: list[PointerAccess],
                  pointers: _Pointers) -> Iterator[tuple[int, ir.Expr | _SelectIndex | None, int]]:
    """The reaches (`_CallReach.cases`) of a helper `call` without choices among its arguments."""
    arguments = [int(arg.value) if isinstance(arg, prim.IntImm) else None for arg in call.args]
    for address, access in _addresses(call, accesses):
        load = address.args[0]
        param = pointers.param_of(load.source)
        if param is None:
            continue
        span = access.span(arguments)
        if span is None or len(load.indices) != 1:
            yield id(param), None, 0
        elif span[0] <= span[1]:
            itemsize = DTYPE_BYTES[str(load.source.dtype)]
            yield id(param), _marked(load.indices[0] + span[0]), itemsize
            yield id(param), _marked(load.indices[0] + span[1]), itemsize


def _is_vector(indices) -> bool:
    return any(isinstance(i, (prim.Ramp, prim.Broadcast)) for i in indices)


def _bytes_accessed(one_pass: _Pass, skeleton: list[_Item]) -> dict[int, Interval | None]:
    """Byte bounds [start, end) of the accesses through each parameter (by id) in one pass (loads of an input
    are its reads, stores to an output its writes), its body given as its `_skeleton`; None: not finite."""
    analyzer = Analyzer()
    for loop, first, count in one_pass.loops:  # the bounds in the loop variable's type (an int64 argmax loop)
        dtype = loop.loop_var.ty.dtype
        analyzer.bind(loop.loop_var, ir.Range.from_min_extent(tirx.const(first, dtype), tirx.const(count, dtype)))
    bounds: dict[int, Interval | None] = {}
    for node in _reachable(skeleton, analyzer):
        if isinstance(node, tirx.For):
            analyzer.bind(node.loop_var, ir.Range.from_min_extent(node.min, node.extent))
        elif isinstance(node, (tirx.Bind, prim.Let)):
            # One variable may be bound by several lets of one body, each over its own scope, with values equal
            # but not written alike: an expression read twice (a QDQ hard-swish reads its input's rounded value
            # twice) keeps its lets' variables in both copies, and a pass may rewrite one copy only. In pre-order
            # the latest binding is the one in scope.
            analyzer.bind(node.var, node.value, allow_override=True)
        elif isinstance(node, _Access):
            _widen(bounds, node.param, node.indices, node.itemsize, analyzer)
        elif isinstance(node, _CallReach):
            _widen_by_call(bounds, node, analyzer)
    return bounds


@dataclass(frozen=True)
class _Access:
    """A load or store through a parameter's buffer: the parameter (by id), the indices (`_marked`), the element's
    bytes."""

    param: int
    indices: list
    itemsize: int


# A skeleton item: what _bytes_accessed acts on by itself (a load or store through a parameter, a helper
# call with an access record as its `_CallReach`, a Bind statement), or a scope with the skeleton of what lies inside it:
# (a For or a Let, [inside]), (an IfThenElse, [its condition's, its then branch's, its else branch's]).
_Item = Union[ir.Node, tuple[ir.Node, list[list["_Item"]]]]


def _skeleton(body: tirx.Stmt, pointers: _Pointers) -> list[_Item]:
    """The nodes of `body` that `_bytes_accessed` acts on, in pre-order, inside the loops, lets and branches
    around them; what cannot matter to it (arithmetic, a load of a local buffer, a loop or branch without
    accesses) left out. Built once per statement and read once per pass: the passes of a loop run the same
    body."""
    root = _SkeletonFrame(body, pointers)
    stack = [root]
    while stack:
        child = stack[-1].next_child()
        if child is not None:
            stack.append(_SkeletonFrame(child, pointers))
        else:
            done = stack.pop()
            if stack:
                stack[-1].collected[stack[-1].part].extend(done.items())
    return root.items()


class _SkeletonFrame:
    """A node being reduced to its skeleton (`_skeleton`, which walks without recursion: an unrolled sum
    nests deeper than Python's stack): its children in parts (an IfThenElse: condition, then, else; any
    other node: one part) and the skeleton collected of each part so far."""

    def __init__(self, node: ir.Node, pointers: _Pointers) -> None:
        self.node = node
        self._pointers = pointers
        if isinstance(node, tirx.IfThenElse):
            self.parts = [[node.condition], [node.then_case], [node.else_case] if node.else_case is not None else []]
        else:
            self.parts = [tir_walk.children(node)]
        self.collected: list[list[_Item]] = [[] for _ in self.parts]
        self.part, self._next = 0, 0

    def next_child(self) -> ir.Node | None:
        """The next child to reduce (its skeleton then goes to `collected[part]`), None when all were."""
        while self.part < len(self.parts):
            if self._next < len(self.parts[self.part]):
                self._next += 1
                return self.parts[self.part][self._next - 1]
            self.part, self._next = self.part + 1, 0
        return None

    def items(self) -> list[_Item]:
        """This node's skeleton, once every child's was collected."""
        node, inside = self.node, self.collected
        if isinstance(node, tirx.IfThenElse):
            return [(node, inside)] if any(inside) else []
        if isinstance(node, (tirx.For, prim.Let)):
            return [(node, inside)] if inside[0] else []
        if isinstance(node, (ir.TensorLoad, tirx.BufferStore)):
            param = self._pointers.param_of(_buffer_of(node))
            if param is None:
                return inside[0]
            dtype = node.source.dtype if isinstance(node, ir.TensorLoad) else node.buffer.dtype
            return [_Access(id(param), [_marked(i) for i in node.indices], DTYPE_BYTES[str(dtype)]), *inside[0]]
        if isinstance(node, ir.Call) and isinstance(node.op, ir.Op) and helper_access(node.op.name) is not None:
            return [_call_reach(node, self._pointers), *inside[0]]
        return [node, *inside[0]] if isinstance(node, tirx.Bind) else inside[0]


def _reachable(skeleton: list[_Item], analyzer: Analyzer) -> Iterator[ir.Node]:
    """The nodes of `skeleton` in pre-order, without the branch of an `IfThenElse` whose condition `analyzer`
    proves false (true, for the else branch) with what the caller has bound by then: this pass's iterations,
    the loops and bindings around the branch. Only a branch that never runs in this pass is left out, so the
    bounds stay at least as wide as the truth."""
    stack: list[_Item] = list(reversed(skeleton))
    while stack:
        item = stack.pop()
        if not isinstance(item, tuple):
            yield item
            continue
        node, inside = item
        if isinstance(node, tirx.IfThenElse):
            condition, then_case, else_case = inside
            reached = list(condition)
            test = _through_hints(node.condition)
            if not analyzer.can_prove(tirx.Not(test)):
                reached += then_case
            if node.else_case is not None and not analyzer.can_prove(test):
                reached += else_case
        else:
            yield node  # the caller binds a loop's variable or a let's before what lies inside is reached
            reached = inside[0]
        stack.extend(reversed(reached))


def _through_hints(condition: ir.Expr) -> ir.Expr:
    """`condition` with each call of a truth hint (`tvm_ext.tir.helper_access.register_truth_hint`: the DSP
    depthwise kernels' ``likely`` around the test that leads to the interior) replaced by its argument, which it
    is: the analysis can then decide the test in a pass (a border pixel's pass reaches the border call alone, not
    also the interior tile's window, a row and a column past the image's last)."""
    return tir_walk.map_nodes(condition, lambda node: node.args[0] if isinstance(node, ir.Call)
                              and isinstance(node.op, ir.Op) and is_truth_hint(node.op.name) else None)


def _widen_by_call(bounds: dict[int, Interval | None], reach: _CallReach, analyzer: Analyzer) -> None:
    """Widen `bounds` by the elements a helper call (its `_CallReach`) reaches in each of its cases the analysis
    leaves possible."""
    if reach.unbounded is not None:  # too many cases to read: no bound for any parameter the call may reach
        for key in reach.unbounded:
            bounds[key] = None
        return
    for refuted_by, reaches in reach.cases:
        if any(analyzer.can_prove(condition) for condition in refuted_by):
            continue
        for key, index, itemsize in reaches:
            if index is None:
                bounds[key] = None
            else:
                _widen(bounds, key, [index], itemsize, analyzer)


@dataclass(frozen=True)
class _SelectIndex:
    """An index with a `Select` in it, which `_widen` simplifies in each pass with what the pass has bound, so a
    `Select` whose condition the pass decides is read as the branch it takes: the integer bound of a `Select` is
    both branches' (a border pixel's address, ``(y < 1 ? y : y - 1) * row``, a row wider than either), which asked
    the planner for a row more distance between a kernel's input and output than any pass reads (ds_cnn_w44_49x10
    on cortex-m4f: a depthwise kernel run backwards, 748 B above its input where 704 B do). Marked once, when the
    kernel's skeleton is built (`_marked`)."""

    expr: ir.Expr


def _marked(index: ir.Expr) -> Union[ir.Expr, _SelectIndex]:
    """`index`, as a `_SelectIndex` where a `Select` lies in it."""
    return _SelectIndex(index) if any(isinstance(node, prim.Select) for node in tir_walk.walk(index)) else index


def _widen(bounds: dict[int, Interval | None], key: int, indices, itemsize: int, analyzer: Analyzer) -> None:
    """Widen `bounds[key]` by one flat access at `indices` of `itemsize`-byte elements."""
    if key in bounds and bounds[key] is None:
        return
    index = indices[0] if len(indices) == 1 else None
    if isinstance(index, _SelectIndex):
        index = analyzer.simplify(index.expr)
    element = analyzer.const_int_bound(index) if index is not None else None
    if element is None or element.min_value <= -_UNBOUNDED or element.max_value >= _UNBOUNDED:
        bounds[key] = None
        return
    # a guarded load may compute an index below 0 (a padded border) that it never reads: no byte lies there
    start, end = max(element.min_value, 0) * itemsize, max(element.max_value + 1, 0) * itemsize
    if key in bounds:
        start, end = min(start, bounds[key][0]), max(end, bounds[key][1])
    bounds[key] = (start, end)
