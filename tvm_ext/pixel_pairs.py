"""The interior of a padded int8 convolution two pixels at a time: the two-pixel dual MAC there too.

An unpadded convolution takes two neighbouring pixels per dual-MAC call from its schedule
(``tvm_ext.schedule``); a padded one keeps one pixel per iteration, for ``tvm_ext.border_split`` to ask once
per pixel whether its window is inside the image. In the interior the two pixels' windows need no test
either, so the split pixel loop's body becomes

    if (interior row && x starts a pair)      { both pixels: one two-pixel call per channel tile }
    else if (interior row && x ends a pair)   { nothing: done with the pair }
    else                                      { the pixel as before: interior or border }

where the pairs tile the interior columns [lo, lo + 2n) from lo. Each pixel's accumulators are initialised
and requantized as before, once per pixel; each sum keeps its order: bit-exact.
"""

from __future__ import annotations

from typing import Optional

from tvm import s_tir, tirx

from tvm_ext.dual_mac import DUAL_MAC_PIXELS, dual_mac_replacement
from tvm_ext.index_expr import substitute_index


def paired_pixel_body(pixel_body: tirx.Stmt, realize: s_tir.SBlockRealize, loops: list, first_reduction: int,
                      pixel: tirx.Var) -> Optional[tirx.Stmt]:
    """The statements computing pixels ``pixel`` and ``pixel + 1`` of an interior row: ``pixel_body`` (one
    pixel's statements: the loops ``loops`` below the pixel loop, the unguarded update block ``realize``,
    the reduction ``loops[first_reduction:]`` with the channel tile innermost) with the reduction as one
    two-pixel dual-MAC call and every other statement beside it (initialisation, epilogue) once per pixel.
    None where the reduction's statements do not have that form or the call does not fit."""
    pixel_loop = tirx.For(tirx.Var("pixel_pair", pixel.ty.dtype), tirx.const(0, pixel.ty.dtype),
                          tirx.const(DUAL_MAC_PIXELS, pixel.ty.dtype), tirx.ForKind.SERIAL, tirx.Evaluate(0))
    try:
        shifted = _realize_at(realize, {pixel: pixel + pixel_loop.loop_var})
    except KeyError:
        return None
    call = dual_mac_replacement(shifted, [*loops[first_reduction:-1], pixel_loop, loops[-1]])
    if call is None:
        return None
    try:
        return _pair_around(pixel_body, loops[first_reduction], call, pixel)
    except KeyError:
        return None


def pair_tests(pixel: tirx.Var, low: int, pairs: int) -> tuple[tirx.Expr, tirx.Expr]:
    """(``pixel`` starts one of the ``pairs`` pairs tiling the columns from ``low``, ``pixel`` ends one)."""
    dtype = pixel.ty.dtype
    parity = tirx.EQ(tirx.FloorMod(pixel, tirx.const(2, dtype)), tirx.const(low % 2, dtype))
    end = tirx.const(low + 2 * pairs, dtype)
    starts = tirx.And(tirx.And(tirx.LE(tirx.const(low, dtype), pixel), tirx.LT(pixel, end)), parity)
    ends = tirx.And(tirx.And(tirx.LT(tirx.const(low, dtype), pixel), tirx.LT(pixel, end)), tirx.Not(parity))
    return starts, ends


def _realize_at(realize: s_tir.SBlockRealize, mapping: dict) -> s_tir.SBlockRealize:
    """``realize`` with the variables of ``mapping`` replaced in its bindings (KeyError: a form we do not
    rewrite)."""
    values = [substitute_index(value, mapping) for value in realize.iter_values]
    if not isinstance(realize.predicate, tirx.IntImm):
        raise KeyError("a predicated block")
    return s_tir.SBlockRealize(values, realize.predicate, realize.block)


def _pair_around(stmt: tirx.Stmt, reduction: tirx.For, call: s_tir.SBlockRealize, pixel: tirx.Var) -> tirx.Stmt:
    """``stmt`` with ``reduction`` replaced by ``call`` and each statement of the sequence holding it
    repeated for ``pixel`` and ``pixel + 1``; the loops above that sequence kept (KeyError: another form)."""
    if isinstance(stmt, tirx.For):
        return tirx.For(stmt.loop_var, stmt.min, stmt.extent, stmt.kind,
                        _pair_around(stmt.body, reduction, call, pixel), stmt.thread_binding, stmt.annotations,
                        stmt.step)
    if not isinstance(stmt, tirx.SeqStmt) or not any(child.same_as(reduction) for child in stmt.seq):
        raise KeyError(type(stmt).__name__)
    first, second = [], []
    for child in stmt.seq:
        if child.same_as(reduction):
            first.append(call)
        else:
            first.append(child)
            second.append(_at_pixel(child, {pixel: pixel + 1}))
    # Each pixel's initialisation before the call, each one's epilogue after it.
    at = next(i for i, child in enumerate(stmt.seq) if child.same_as(reduction))
    return tirx.SeqStmt([*first[:at], *second[:at], call, *first[at + 1:], *second[at:]])


def _at_pixel(stmt: tirx.Stmt, mapping: dict) -> tirx.Stmt:
    """``stmt`` (loops around blocks) with the variables of ``mapping`` replaced in the blocks' bindings
    (KeyError: another statement kind, or a loop bound that reads them)."""
    if isinstance(stmt, s_tir.SBlockRealize):
        if not stmt.block.iter_vars:
            raise KeyError("an opaque block")
        return _realize_at(stmt, mapping)
    if isinstance(stmt, tirx.For):
        return tirx.For(stmt.loop_var, stmt.min, stmt.extent, stmt.kind, _at_pixel(stmt.body, mapping),
                        stmt.thread_binding, stmt.annotations, stmt.step)
    if isinstance(stmt, tirx.SeqStmt):
        return tirx.SeqStmt([_at_pixel(child, mapping) for child in stmt.seq])
    raise KeyError(type(stmt).__name__)
