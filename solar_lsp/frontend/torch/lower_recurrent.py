"""Recurrent layers (``aten.lstm/gru/rnn_tanh/rnn_relu.input``), kept whole and unrolled
over time (docs/architecture.md §2): per layer and direction, one contraction projects the inputs of all
time steps; each step adds ``h_{t-1} @ W_hh^T`` (one contraction) and applies the gates
(elementwise kernels). Multi-layer, bidirectional, batch_first, with or without biases,
given or zero initial states, and LSTM projections (``proj_size``).

All kernels of one layer call belong to one op: what cuDNN launches as one RNN call reads
the weights, inputs and initial states once and writes the outputs once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from solar_lsp.frontend import builders as B
from solar_lsp.frontend.errors import Unsupported
from solar_lsp.frontend.torch.context import Ctx, lowers
from solar_lsp.ir.core import Affine, Expr, Kernel, Load, call

GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
SeqIndex = Callable[[Affine, Affine, Affine], tuple[Affine, ...]]


def _seq(batch_first: bool) -> SeqIndex:
    """Index of a [T, B, F] (or batch-first [B, T, F]) sequence tensor."""
    if batch_first:
        return lambda t, b, f: (b, t, f)
    return lambda t, b, f: (t, b, f)


@dataclass
class _Layer:
    w_ih: str
    w_hh: str
    b_ih: str | None
    b_hh: str | None
    w_hr: str | None


@dataclass
class _Direction:
    """One layer's pass in one direction: its weights, where it reads and writes, its temporaries."""
    ly: _Layer
    slot: int  # (layer, direction) position in h_0, h_n and c_n
    d: int
    gi: str  # the input projection of every step
    dst: str
    dst_seq: SeqIndex
    state: list[str]  # ping-pong c (LSTM) / h (GRU)
    hp: str | None  # the unprojected h (LSTM with proj_size)
    gh: str | None  # GRU: h W_hh^T + b_hh
    ntmp: str | None  # GRU: the candidate n
    cn: str | None  # LSTM c_n, written at the last step


def _sigmoid(e: Expr) -> Expr:
    return call("sigmoid", e)


class _Unroll:
    """Emits the kernels of one recurrent op."""

    def __init__(self, c: Ctx, cell: str, a: tuple):
        self.c = c
        self.cell = cell
        self.x = c.t(a[0])
        xs = c.shape(self.x)
        hx = a[1] if isinstance(a[1], (list, tuple)) else [a[1]]
        self.h0 = c.t(hx[0])
        self.c0 = c.t(hx[1]) if cell == "lstm" else None
        params = [c.t(p) for p in a[2]]
        self.has_b, self.layers_n = bool(a[3]), int(a[4])
        dropout, train, self.bidir, self.bf = float(a[5]), bool(a[6]), bool(a[7]), bool(a[8])
        if train and dropout > 0 and self.layers_n > 1:
            raise Unsupported("dropout between recurrent layers in training mode is random")
        self.T, self.B = (xs[1], xs[0]) if self.bf else (xs[0], xs[1])
        self.D = 2 if self.bidir else 1
        G = GATES[cell]
        per = 2 + 2 * self.has_b
        proj = len(params) == self.layers_n * self.D * (per + 1)
        if not proj and len(params) != self.layers_n * self.D * per:
            raise Unsupported(f"{len(params)} weights for {self.layers_n} layer(s) x {self.D} "
                              "direction(s) do not match the layout torch uses")
        per += proj
        self.H = c.shape(params[0])[0] // G
        self.Hout = c.shape(params[1])[1]  # proj_size when projecting, else H
        self.G = G
        self.layers: list[_Layer] = []
        for i in range(self.layers_n * self.D):
            p = params[i * per:(i + 1) * per]
            self.layers.append(_Layer(p[0], p[1], p[2] if self.has_b else None,
                                      p[3] if self.has_b else None, p[-1] if proj else None))
        self.dt = c.dtype(self.x)

    def name(self, tag: str) -> str:
        return self.c.name(tag)

    def emit(self, *ks: Kernel) -> None:
        self.c.emit(*ks)

    # ---------------------------------------------------------------- one layer, one direction

    def input_projection(self, ly: _Layer, src: str, src_seq: SeqIndex, feat: int) -> str:
        """``gi[t, b, g] = b_ih[g] (+ b_hh[g]) + sum_k x[t, b, k] * W_ih[g, k]`` for all t."""
        T, Bn, GH = self.T, self.B, self.G * self.H
        gi = self.c.tmp((T, Bn, GH), self.dt)
        t, b, g, k = (Affine.var(v) for v in "tbgk")
        loops = (("t", T), ("b", Bn), ("g", GH))
        init = "identity"
        if ly.b_ih is not None:
            bias: Expr = Load(ly.b_ih, (g,))
            if self.cell != "gru":  # GRU keeps b_hh apart: it sits inside r * (W_hn h + b_hn)
                bias = call("add", bias, Load(ly.b_hh, (g,)))
            self.emit(Kernel(self.name("bias"), loops, Load(gi, (t, b, g)), "=", bias))
            init = "keep"
        self.emit(B.contraction(self.name("xw"), gi, ["t", "b", "g"], src, src_seq(t, b, k),
                                ly.w_ih, (g, k), dict(loops) | {"k": feat}, init=init))
        return gi

    def recurrent(self, out: str, w_hh: str, h_prev: Load, h_idx: Callable, init: str) -> None:
        """``out[b, g] += sum_k h_{t-1}[b, k] * W_hh[g, k]`` (out indexed by ``h_idx``)."""
        b, g, k = (Affine.var(v) for v in "bgk")
        ext = {"b": self.B, "g": self.G * self.H, "k": self.Hout}
        self.emit(B.contraction(self.name("hw"), out, ["b", "g"], h_prev.tensor,
                                h_prev.index, w_hh, (g, k), ext, init=init, out_idx=h_idx(b, g)))

    def run_direction(self, li: int, d: int, src: str, src_seq: SeqIndex, feat: int, dst: str,
                      dst_seq: SeqIndex, hn_all: str, cn: str | None) -> None:
        """One layer in one direction: project all inputs, step through time, keep h_n."""
        ly = self.layers[li * self.D + d]
        slot = li * self.D + d
        gi = self.input_projection(ly, src, src_seq, feat)
        H, Hout, Bn, T = self.H, self.Hout, self.B, self.T
        steps = range(T) if d == 0 else range(T - 1, -1, -1)
        state = [self.c.tmp((Bn, H), self.dt) for _ in range(2)]  # ping-pong c (LSTM) / h (GRU)
        hp = self.c.tmp((Bn, H), self.dt) if ly.w_hr is not None else None
        gh = self.c.tmp((Bn, self.G * H), self.dt) if self.cell == "gru" else None
        ntmp = self.c.tmp((Bn, H), self.dt) if self.cell == "gru" else None
        dr = _Direction(ly, slot, d, gi, dst, dst_seq, state, hp, gh, ntmp, cn)
        prev_t: int | None = None
        for s, t in enumerate(steps):
            if self.cell == "gru":
                self.gru_step(dr, s, t, prev_t)
            else:
                self.cell_step(dr, s, t, prev_t, s == T - 1)
            prev_t = t
        b, o = Affine.var("b"), Affine.var("o")
        self.emit(Kernel(self.name("hn"), (("b", Bn), ("o", Hout)), Load(hn_all, (Affine.of(slot), b, o)),
                         "=", Load(dst, dst_seq(Affine.of(prev_t), b, Affine.of(d * Hout) + o))))

    def hprev(self, dr: _Direction, s: int, prev_t: int | None, idx: Affine) -> Load:
        """``h_{t-1}[b, idx]``: h_0 at the first step, else the previous output (GRU: its state)."""
        b = Affine.var("b")
        if prev_t is None:
            return Load(self.h0, (Affine.of(dr.slot), b, idx))
        if self.cell == "gru":
            return Load(dr.state[(s - 1) % 2], (b, idx))
        return Load(dr.dst, dr.dst_seq(Affine.of(prev_t), b, Affine.of(dr.d * self.Hout) + idx))

    def gate(self, dr: _Direction, t: int, q: int) -> Load:
        """Gate ``q``'s input projection at step ``t``: ``gi[t, b, q*H + j]``."""
        return Load(dr.gi, (Affine.of(t), Affine.var("b"), Affine.of(q * self.H) + Affine.var("j")))

    def gru_step(self, dr: _Direction, s: int, t: int, prev_t: int | None) -> None:
        """One GRU step: ``h W_hh^T + b_hh`` apart (r scales its n part), then r, z, n and h."""
        H, Bn, ly, d = self.H, self.B, dr.ly, dr.d
        b, j, k = Affine.var("b"), Affine.var("j"), Affine.var("k")
        bh = (("b", Bn), ("j", H))
        binit = "identity"
        if ly.b_hh is not None:
            g = Affine.var("g")
            self.emit(Kernel(self.name("bhh"), (("b", Bn), ("g", 3 * H)), Load(dr.gh, (b, g)),
                             "=", Load(ly.b_hh, (g,))))
            binit = "keep"
        self.recurrent(dr.gh, ly.w_hh, self.hprev(dr, s, prev_t, k), lambda bb, gg: (bb, gg), binit)
        r = _sigmoid(call("add", self.gate(dr, t, 0), Load(dr.gh, (b, j))))
        z = _sigmoid(call("add", self.gate(dr, t, 1), Load(dr.gh, (b, Affine.of(H) + j))))
        n = call("tanh", call("add", self.gate(dr, t, 2), call("mul", r, Load(dr.gh, (b, Affine.of(2 * H) + j)))))
        self.emit(Kernel(self.name("n"), bh, Load(dr.ntmp, (b, j)), "=", n))  # read twice below
        nl = Load(dr.ntmp, (b, j))
        h = call("add", nl, call("mul", z, call("sub", self.hprev(dr, s, prev_t, j), nl)))
        self.emit(Kernel(self.name("h"), bh, Load(dr.state[s % 2], (b, j)), "=", h))
        self.emit(Kernel(self.name("y"), bh, Load(dr.dst, dr.dst_seq(Affine.of(t), b, Affine.of(d * H) + j)), "=",
                         Load(dr.state[s % 2], (b, j))))

    def cell_step(self, dr: _Direction, s: int, t: int, prev_t: int | None, last: bool) -> None:
        """One LSTM or plain RNN step: ``gi[t] += h_{t-1} W_hh^T``, the gates, then h_t (through
        the projection W_hr when there is one)."""
        H, Hout, Bn, ly, d, cn = self.H, self.Hout, self.B, dr.ly, dr.d, dr.cn
        b, j, k = Affine.var("b"), Affine.var("j"), Affine.var("k")
        bh = (("b", Bn), ("j", H))
        tc = Affine.of(t)
        self.recurrent(dr.gi, ly.w_hh, self.hprev(dr, s, prev_t, k), lambda bb, gg, t_=tc: (t_, bb, gg), "keep")
        if self.cell == "lstm":
            c_prev = Load(self.c0, (Affine.of(dr.slot), b, j)) if prev_t is None else \
                Load(dr.state[(s - 1) % 2], (b, j))
            c_out = Load(cn, (Affine.of(dr.slot), b, j)) if (last and cn) else Load(dr.state[s % 2], (b, j))
            cval = call("add", call("mul", _sigmoid(self.gate(dr, t, 1)), c_prev),
                        call("mul", _sigmoid(self.gate(dr, t, 0)), call("tanh", self.gate(dr, t, 2))))
            self.emit(Kernel(self.name("c"), bh, c_out, "=", cval))
            hval: Expr = call("mul", _sigmoid(self.gate(dr, t, 3)), call("tanh", c_out))
        else:
            pre = self.gate(dr, t, 0)
            hval = call("tanh", pre) if self.cell == "rnn_tanh" else call("max", pre, 0.0)
        if dr.hp is not None:
            self.emit(Kernel(self.name("hfull"), bh, Load(dr.hp, (b, j)), "=", hval))
            p = Affine.var("p")
            self.emit(B.contraction(self.name("proj"), dr.dst, ["b", "p"], dr.hp, (b, j), ly.w_hr,
                                    (p, j), {"b": Bn, "p": Hout, "j": H},
                                    out_idx=dr.dst_seq(tc, b, Affine.of(d * Hout) + p)))
        else:
            self.emit(Kernel(self.name("h"), bh, Load(dr.dst, dr.dst_seq(tc, b, Affine.of(d * H) + j)),
                             "=", hval))

    # ---------------------------------------------------------------- the whole op

    def run(self) -> None:
        c = self.c
        outs = c.lw.out_names(c.node)
        out = c.out_n(0)
        cn = c.out_n(2) if self.cell == "lstm" and len(outs) > 2 and outs[2] is not None else None
        hn_all = c.tmp((self.layers_n * self.D, self.B, self.Hout), self.dt)
        src, src_seq, feat = self.x, _seq(self.bf), c.shape(self.x)[2]
        for li in range(self.layers_n):
            last = li == self.layers_n - 1
            dst = out if last else c.tmp((self.T, self.B, self.D * self.Hout), self.dt)
            dst_seq = _seq(self.bf) if last else _seq(False)
            for d in range(self.D):
                self.run_direction(li, d, src, src_seq, feat, dst, dst_seq, hn_all, cn)
            src, src_seq, feat = dst, dst_seq, self.D * self.Hout
        if len(outs) > 1 and outs[1] is not None:  # one copy: verification checks all of h_n
            hn = c.out_n(1)
            vs = B.ivars(3)
            c.emit(Kernel(c.name("hn"), tuple(zip(vs, c.shape(hn))), Load(hn, B.plain(vs)), "=",
                          Load(hn_all, B.plain(vs))))


def _lower(cell: str) -> Callable[[Ctx, tuple, dict], None]:
    def fn(c: Ctx, a: tuple, kw: dict) -> None:
        _Unroll(c, cell, a).run()
    fn.__doc__ = f"aten.{cell}.input, unrolled over time."
    return fn


for _cell in GATES:
    lowers(f"aten.{_cell}.input")(_lower(_cell))


@lowers("aten.lstm.data", "aten.gru.data", "aten.rnn_tanh.data", "aten.rnn_relu.data")
def _packed(c: Ctx, a: tuple, kw: dict) -> None:
    raise Unsupported("packed sequences (PackedSequence) have data-dependent lengths per step")
