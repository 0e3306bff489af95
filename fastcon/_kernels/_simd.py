r"""Explicit 4-wide vector operations for loops whose width is only known at run time.

Numba compiles without LLVM's SLP vectoriser, so a loop ``for l in range(C)`` over a run-time
width is vectorised by the loop vectoriser alone: a main body of 16 lanes (4 x 4) and a scalar
remainder. With :math:`C = 20` classes that remainder is 4 scalar lanes, which cost as many
instructions as the 16 vector lanes. :func:`add_tree8_4` (eight entries of a sparse row) and
:func:`add_scaled_4` (one entry) do one 4-lane block in LLVM vector IR instead (``<4 x double>``; LLVM splits it into two 2-lane operations on SSE2-only or NEON
targets), so callers loop over ``C // 4`` blocks and only ``C % 4`` lanes stay scalar.

Arithmetic is the scalar code's, lane by lane: the same products and the same fixed summation
tree, no fused multiply-add (no contraction without fastmath), so results are bit-identical to
the scalar loop it replaces.
"""
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["add_tree8_4", "add_scaled_4"]

_V4 = ir.VectorType(ir.DoubleType(), 4)


def _block_pointer(context, builder, array, array_type, row, row_type, col, col_type):
    """Pointer to ``array[row, col:col + 4]`` as ``<4 x double>*`` (C-contiguous 2-D float64 ``array``)."""
    arr = context.make_array(array_type)(context, builder, array)
    n_cols = cgutils.unpack_tuple(builder, arr.shape, 2)[1]
    row = context.cast(builder, row, row_type, types.intp)
    col = context.cast(builder, col, col_type, types.intp)
    item = builder.gep(arr.data, [builder.add(builder.mul(row, n_cols), col)])
    return builder.bitcast(item, _V4.as_pointer())


def _broadcast(builder, x):
    v = ir.Constant(_V4, ir.Undefined)
    for q in range(4):
        v = builder.insert_element(v, x, ir.Constant(ir.IntType(32), q))
    return v


def _eight(t, kind):
    """Whether the numba type ``t`` is a tuple of eight ``kind`` (a homogeneous or mixed tuple)."""
    return isinstance(t, types.BaseTuple) and len(t) == 8 and all(isinstance(e, kind) for e in t)


@intrinsic
def add_tree8_4(typingctx, S, r, M, l, cols, vals):
    r"""``S[r, l:l+4] += ((v0 M[c0] + v1 M[c1]) + (v2 M[c2] + v3 M[c3])) + ((v4 M[c4] + v5 M[c5]) + (v6 M[c6] + v7 M[c7]))``.

    ``cols = (c0, ..., c7)`` are integers and ``vals = (v0, ..., v7)`` numbers (tuples of eight,
    built in registers at the call site); every ``M[c]`` is ``M[c, l:l+4]``. ``S`` and ``M`` are
    C-contiguous 2-D float64 arrays; the caller guarantees ``l + 4 <=`` the width of both (no
    bounds checks). Lane by lane the summation tree is the one the scalar kernels use, so the bits
    are the same.
    """
    if not all(isinstance(a, types.Array) and a.ndim == 2 and a.layout == "C" and a.dtype == types.float64
               for a in (S, M)):
        return None
    if not (_eight(cols, types.Integer) and _eight(vals, types.Number)):
        return None
    sig = types.void(S, r, M, l, cols, vals)

    def codegen(context, builder, signature, args):
        S_ty, r_ty, M_ty, l_ty, cols_ty, vals_ty = signature.args
        S_val, r_val, M_val, l_val, cols_val, vals_val = args
        terms = []
        for q in range(8):
            c = builder.extract_value(cols_val, q)
            m = builder.load(_block_pointer(context, builder, M_val, M_ty, c, cols_ty[q], l_val, l_ty), align=8)
            v = context.cast(builder, builder.extract_value(vals_val, q), vals_ty[q], types.float64)
            terms.append(builder.fmul(_broadcast(builder, v), m))
        t01 = builder.fadd(terms[0], terms[1])
        t23 = builder.fadd(terms[2], terms[3])
        t45 = builder.fadd(terms[4], terms[5])
        t67 = builder.fadd(terms[6], terms[7])
        tree = builder.fadd(builder.fadd(t01, t23), builder.fadd(t45, t67))
        target = _block_pointer(context, builder, S_val, S_ty, r_val, r_ty, l_val, l_ty)
        builder.store(builder.fadd(builder.load(target, align=8), tree), target, align=8)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def add_scaled_4(typingctx, S, r, M, l, c, v):
    r"""``S[r, l:l+4] += v * M[c, l:l+4]`` (one entry of a sparse row; same bits as the scalar loop).

    ``S`` and ``M`` are C-contiguous 2-D float64 arrays; the caller guarantees ``l + 4 <=`` the
    width of both (no bounds checks).
    """
    if not all(isinstance(a, types.Array) and a.ndim == 2 and a.layout == "C" and a.dtype == types.float64
               for a in (S, M)):
        return None
    sig = types.void(S, r, M, l, c, v)

    def codegen(context, builder, signature, args):
        S_ty, r_ty, M_ty, l_ty, c_ty, v_ty = signature.args
        S_val, r_val, M_val, l_val, c_val, v_val = args
        m = builder.load(_block_pointer(context, builder, M_val, M_ty, c_val, c_ty, l_val, l_ty), align=8)
        term = builder.fmul(_broadcast(builder, context.cast(builder, v_val, v_ty, types.float64)), m)
        target = _block_pointer(context, builder, S_val, S_ty, r_val, r_ty, l_val, l_ty)
        builder.store(builder.fadd(builder.load(target, align=8), term), target, align=8)
        return context.get_dummy_value()

    return sig, codegen
