"""Lowerings of contractions: matmul in all its torch forms (mm, bmm, mv, dot, addmm,
linear), einsum in opt_einsum's pairwise order, and convolutions."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from solar_lsp.frontend import builders as B
from solar_lsp.frontend.errors import Unsupported
from solar_lsp.frontend.torch.context import Ctx, Shape, lowers, node_for
from solar_lsp.ir.core import Affine, Guard, Kernel, Load, call


@lowers("aten.mm.default", "aten.bmm.default", "aten.matmul.default", "aten.mv.default",
        "aten.dot.default")
def _matmul(c: Ctx, a: tuple, kw: dict) -> None:
    x, y = c.t(a[0]), c.t(a[1])
    matmul_into(c, x, c.shape(x), y, c.shape(y), c.out, c.out_shape, "identity")


def matmul_into(c: Ctx, x: str, xs: Shape, y: str, ys: Shape, out: str, os_: Shape, init: str) -> None:
    """torch.matmul semantics: 1-D promotion and broadcast batch dims."""
    xr, yr = len(xs), len(ys)
    ext: dict[str, int] = {"k": xs[-1]}
    if xr == 1 and yr == 1:
        c.emit(dataclasses.replace(B.contraction(c.name("dot"), out, [], x, [Affine.var("k")], y,
                                                 [Affine.var("k")], ext, init=init, out_idx=()),
                                   unit="vector"))
        return
    nb = max(max(xr, yr) - 2, 0)  # broadcast batch dims of the output
    bv = [f"b{d}" for d in range(nb)]
    for v, s in zip(bv, os_[:nb]):
        ext[v] = s
    out_vars = list(bv)
    xi: list[Affine] = []
    yi: list[Affine] = []
    if xr >= 2:
        ext["m"] = xs[-2]
        xb = xs[:-2]
        xi = list(B.broadcast_index(xb, tuple(os_[:nb]), bv)) + [Affine.var("m"), Affine.var("k")]
        out_vars.append("m")
    else:
        xi = [Affine.var("k")]
    if yr >= 2:
        ext["n"] = ys[-1]
        yb = ys[:-2]
        yi = list(B.broadcast_index(yb, tuple(os_[:nb]), bv)) + [Affine.var("k"), Affine.var("n")]
        out_vars.append("n")
    else:
        yi = [Affine.var("k")]
    k = B.contraction(c.name("mm"), out, out_vars, x, xi, y, yi, ext, init=init)
    if yr == 1 or (xr == 1 and yr == 2):
        # torch runs these as mv (GEMV): CUDA cores, not tensor cores (nor FlopCounterMode)
        k = dataclasses.replace(k, unit="vector")
    c.emit(k)


@lowers("aten.addmm.default", "aten.baddbmm.default", "aten.addmv.default")
def _addmm(c: Ctx, a: tuple, kw: dict) -> None:
    bias, x, y = c.t(a[0]), c.t(a[1]), c.t(a[2])
    beta = float(kw.get("beta", 1))
    alpha = float(kw.get("alpha", 1))
    out = c.out
    if alpha == 1:
        c.ew(lambda b: b if beta == 1 else call("mul", b, beta), a[0])
        matmul_into(c, x, c.shape(x), y, c.shape(y), out, c.out_shape, "keep")
    else:
        tmp = c.tmp(c.out_shape)
        matmul_into(c, x, c.shape(x), y, c.shape(y), tmp, c.out_shape, "identity")
        c.ew(lambda b, t: call("add", call("mul", b, beta), call("mul", t, alpha)), a[0], node_for(c, tmp))
    del bias


@lowers("aten.linear.default")
def _linear(c: Ctx, a: tuple, kw: dict) -> None:
    x, w = c.t(a[0]), c.t(a[1])
    xs, ws = c.shape(x), c.shape(w)
    bias = a[2] if len(a) > 2 else kw.get("bias")
    init = "identity"
    if bias is not None:
        c.ew(lambda b: b, bias)
        init = "keep"
    lead = B.ivars(len(xs) - 1, "b")
    ext = dict(zip(lead, xs[:-1])) | {"k": xs[-1]}
    if len(ws) == 2:
        ext["n"] = ws[0]
        c.emit(B.contraction(c.name("mm"), c.out, lead + ["n"], x, B.plain(lead) + (Affine.var("k"),),
                             w, (Affine.var("n"), Affine.var("k")), ext, init=init))
    else:
        c.emit(B.contraction(c.name("mm"), c.out, lead, x, B.plain(lead) + (Affine.var("k"),),
                             w, (Affine.var("k"),), ext, init=init))


@lowers("aten.einsum.default")
def _einsum(c: Ctx, a: tuple, kw: dict) -> None:
    eq = a[0].replace(" ", "")
    ops = [c.t(o) for o in a[1]]
    shapes = [c.shape(o) for o in ops]
    terms, rhs = _einsum_terms(eq, shapes)
    ext = _einsum_extents(terms, shapes)

    def idx(t: str, s: Shape) -> tuple[Affine, ...]:
        return tuple(Affine.of(0) if (n == 1 and ext[ch] != 1) else Affine.var(ch) for ch, n in zip(t, s))

    cur, cur_t, cur_s = ops[0], terms[0], shapes[0]
    if len(ops) == 1:
        loops = tuple((ch, ext[ch]) for ch in dict.fromkeys(rhs + cur_t))
        c.emit(Kernel(c.name("ein"), loops, Load(c.out, B.plain(list(rhs))), "+=" if set(cur_t) - set(rhs) else "=",
                      Load(cur, idx(cur_t, cur_s))))
        return
    # torch.einsum contracts in opt_einsum's order (strategy "auto"); follow it so the count
    # is what torch runs
    import opt_einsum
    path, _ = opt_einsum.contract_path(",".join(terms) + "->" + rhs, *shapes, shapes=True, optimize="auto")
    live = list(zip(ops, terms, shapes))
    for step, pos in enumerate(path):
        picked = [live[i] for i in pos]
        for i in sorted(pos, reverse=True):
            live.pop(i)
        last = step == len(path) - 1
        later = set("".join(t for _, t, _ in live)) | set(rhs)
        union = "".join(dict.fromkeys("".join(t for _, t, _ in picked)))
        out_t = rhs if last else "".join(ch for ch in union if ch in later)
        out_s = tuple(ext[ch] for ch in out_t)
        out = c.out if last else c.tmp(out_s, c.dtype(c.out))
        _einsum_step(c, picked, out, out_t, later, ext, idx)
        live.append((out, out_t, out_s))


def _einsum_terms(eq: str, shapes: list[Shape]) -> tuple[list[str], str]:
    """The operands' index letters and the output's, with any ellipsis spelled out."""
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    # expand ellipsis
    letters = set(eq) - set(",->.")
    free = [ch for ch in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if ch not in letters]
    ell_rank = max((len(s) - len(t.replace("...", "")) for t, s in zip(terms, shapes) if "..." in t), default=0)
    ell = "".join(free[:ell_rank])
    terms = [t.replace("...", ell[ell_rank - (len(s) - len(t.replace("...", ""))):]) for t, s in zip(terms, shapes)]
    if not arrow:
        counts = {ch: "".join(terms).count(ch) for ch in set("".join(terms))}
        rhs = ell + "".join(sorted(ch for ch, n in counts.items() if n == 1 and ch not in ell))
    else:
        rhs = rhs.replace("...", ell)
    return terms, rhs


def _einsum_extents(terms: list[str], shapes: list[Shape]) -> dict[str, int]:
    """Each index letter's extent (a size-1 dim broadcasts against a larger one)."""
    ext: dict[str, int] = {}
    for t, s in zip(terms, shapes):
        for ch, n in zip(t, s):
            if n != 1 or ch not in ext:
                ext[ch] = max(ext.get(ch, 1), n)
    return ext


def _einsum_step(c: Ctx, picked: list[tuple[str, str, Shape]], out: str, out_t: str, later: set[str],
                 ext: dict[str, int], idx: Callable[[str, Shape], tuple[Affine, ...]]) -> None:
    """One step of the contraction path: a pairwise contraction (or outer product), or a sum
    over one operand."""
    if len(picked) == 2:
        (a_, at, as_), (b_, bt, bs) = picked
        # torch.einsum first sums out the indices only one operand has (sumproduct_pair)
        a_, at, as_ = _einsum_presum(c, a_, at, as_, set(bt) | later, idx)
        b_, bt, bs = _einsum_presum(c, b_, bt, bs, set(at) | later, idx)
        if (set(at) & set(bt)) - set(out_t):
            c.emit(B.contraction(c.name("ein"), out, list(out_t), a_, idx(at, as_), b_, idx(bt, bs), ext))
        else:  # nothing to contract: an elementwise (outer) product, which torch runs as mul
            loops = tuple((ch, ext[ch]) for ch in out_t)
            c.emit(Kernel(c.name("ein"), loops, Load(out, B.plain(list(out_t))), "=",
                          call("mul", Load(a_, idx(at, as_)), Load(b_, idx(bt, bs)))))
    else:
        (a_, at, as_), = picked
        loops = tuple((ch, ext[ch]) for ch in dict.fromkeys(out_t + at))
        c.emit(Kernel(c.name("ein"), loops, Load(out, B.plain(list(out_t))),
                      "+=" if set(at) - set(out_t) else "=", Load(a_, idx(at, as_))))


def _einsum_presum(c: Ctx, x: str, t: str, s: Shape, keep: set[str],
                   idx: Callable[[str, Shape], tuple[Affine, ...]]) -> tuple[str, str, Shape]:
    """Sum out of one einsum operand the indices no other operand nor the output has."""
    sizes = dict(zip(t, s))
    kept = "".join(ch for ch in dict.fromkeys(t) if ch in keep)
    if len(kept) == len(set(t)):
        return x, t, s
    ks = tuple(sizes[ch] for ch in kept)
    out = c.tmp(ks, c.dtype(x))
    loops = tuple((ch, sizes[ch]) for ch in dict.fromkeys(kept + t))
    c.emit(Kernel(c.name("ein_sum"), loops, Load(out, B.plain(list(kept))), "+=", Load(x, idx(t, s))))
    return out, kept, ks


@lowers("aten.convolution.default", "aten._convolution.default", "aten.conv1d.default",
        "aten.conv2d.default", "aten.conv3d.default", "aten.conv_transpose1d.default",
        "aten.conv_transpose2d.input", "aten.conv_transpose3d.input")
def _conv(c: Ctx, a: tuple, kw: dict) -> None:
    t = str(c.node.target)
    x, w = c.t(a[0]), c.t(a[1])
    xs, ws = c.shape(x), c.shape(w)
    nd = len(xs) - 2
    bias = a[2] if len(a) > 2 else None

    def tup(v: Any, default: int) -> list[int]:
        if v is None:
            return [default] * nd
        if isinstance(v, int):
            return [v] * nd
        v = list(v)
        return v * nd if len(v) == 1 else v
    if "convolution" in t:
        stride, padding, dilation = tup(a[3], 1), tup(a[4], 0), tup(a[5], 1)
        transposed, groups = bool(a[6]), int(a[8])
    elif "transpose" in t:
        stride, padding = tup(a[3] if len(a) > 3 else 1, 1), tup(a[4] if len(a) > 4 else 0, 0)
        groups = int(a[6]) if len(a) > 6 else 1
        dilation = tup(a[7] if len(a) > 7 else 1, 1)
        transposed = True
    else:
        stride, padding = tup(a[3] if len(a) > 3 else 1, 1), a[4] if len(a) > 4 else 0
        if isinstance(padding, str):
            raise Unsupported(f"string padding {padding!r}")
        padding = tup(padding, 0)
        dilation = tup(a[5] if len(a) > 5 else 1, 1)
        groups = int(a[6]) if len(a) > 6 else 1
        transposed = False
    b = c.t(bias) if bias is not None else None
    c.emit(*B.conv(c.name("conv"), x, xs, w, ws, c.out, c.out_shape, stride, padding, dilation,
                   groups, transposed, b))



@lowers("aten.convolution_backward.default")
def _conv_backward(c: Ctx, a: tuple, kw: dict) -> None:
    """The gradients of a convolution: the input's as the transposed convolution of the
    output's gradient with the weight, the weight's as the contraction of that gradient with
    the (padded) input over batch and output positions, the bias's as a sum; each of the two
    contractions does the forward's MACs. Only those ``output_mask`` asks for are emitted. A
    transposed convolution's are the same with the roles of its input and output swapped."""
    gy, x, w = c.t(a[0]), c.t(a[1]), c.t(a[2])
    gys, xs, ws = c.shape(gy), c.shape(x), c.shape(w)
    nd = len(xs) - 2
    stride, padding, dilation = (list(v) * (nd if len(v) == 1 else 1) for v in (a[4], a[5], a[6]))
    transposed, groups, mask = bool(a[7]), int(a[9]), list(a[10])
    outs = c.lw.out_names(c.node)
    if mask[0] and outs[0] is not None:  # a transposed convolution's dX is a plain one
        c.emit(*B.conv(c.name("dx"), gy, gys, w, ws, c.out_n(0), c.shape(outs[0]), stride,
                       padding, dilation, groups, not transposed, None))
    if mask[1] and outs[1] is not None:
        if transposed:  # dW[c, o, k] += X[n, c, s] · dY[n, o, s·stride + k·dilation - pad]
            c.emit(_conv_weight_grad(c.name("dw"), x, xs, gy, gys, c.out_n(1), ws, stride,
                                     padding, dilation, groups))
        else:
            c.emit(_conv_weight_grad(c.name("dw"), gy, gys, x, xs, c.out_n(1), ws, stride,
                                     padding, dilation, groups))
    if len(mask) > 2 and mask[2] and len(outs) > 2 and outs[2] is not None:
        c.emit(B.reduce(c.name("db"), gy, gys, [0] + list(range(2, len(gys))), False,
                        c.out_n(2), "+="))


def _conv_weight_grad(name: str, gy: str, gys: Shape, x: str, xs: Shape, out: str, ws: Shape,
                      stride: list[int], padding: list[int], dilation: list[int],
                      groups: int) -> Kernel:
    """dW[g·O+o, c, k] += dY[n, g·O+o, s] · X[n, g·C+c, s·stride + k·dilation - pad] (for a
    transposed convolution, called with its input as ``gy`` and its output's gradient as
    ``x``: the weight's layout [in, out/groups, k...] is the same)."""
    nd = len(xs) - 2
    cg_in, cg_out = xs[1] // groups, gys[1] // groups
    ks, sp = [f"k{d}" for d in range(nd)], [f"s{d}" for d in range(nd)]
    ext = {"n": xs[0], "g": groups, "o": cg_out, "c": cg_in}
    xi = [Affine.var("n"), Affine.var("g", cg_in) + Affine.var("c")]
    guards = []
    for d in range(nd):
        ext[ks[d]], ext[sp[d]] = ws[2 + d], gys[2 + d]
        e = B.window_index(sp[d], ks[d], stride[d], dilation[d], padding[d])
        xi.append(e)
        lo, hi = e.bounds(ext)
        if lo < 0 or hi >= xs[2 + d]:
            guards.append(Guard(e, 0, xs[2 + d]))
    yi = [Affine.var("n"), Affine.var("g", cg_out) + Affine.var("o")] + [Affine.var(s) for s in sp]
    wi = [Affine.var("g", cg_out) + Affine.var("o"), Affine.var("c")] + [Affine.var(k) for k in ks]
    return B.contraction(name, out, ["g", "o", "c"] + ks, gy, yi, x, xi, ext, guards=guards,
                         out_idx=wi)
