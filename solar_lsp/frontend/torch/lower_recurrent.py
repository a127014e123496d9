"""Recurrent layers (``aten.lstm/gru/rnn_tanh/rnn_relu.input``), kept whole (docs/architecture.md
§2): per layer and direction, one contraction projects the inputs of all time steps; each step
adds ``h_{t-1} @ W_hh^T`` (one contraction) and applies the gates (elementwise kernels).
Multi-layer, bidirectional, batch_first, with or without biases, given or zero initial states,
and LSTM projections (``proj_size``).

The step is emitted once per layer and direction, as a loop body with ``repeat`` = T: its
kernels read the projection and write the output at the first step's time ``t0`` (0, or T-1
going backwards) and keep ``h_{t-1}`` and ``c_{t-1}`` in carry tensors updated in place. The
verifier replays it T times (verify/parts.py); ``UNROLLED`` emits one copy per time step
instead, with the same counts and bounds (tests/test_recurrent_repeat.py).

The layer is one framework op: what cuDNN launches as one RNN call reads the weights, inputs
and initial states once and writes the outputs once. The projections and loop bodies are its
*parts* (``Op.call = ("part", owner, ...)``, bounds/sol.py ``part_of``): ops with no inputs or
outputs of their own, whose counts and work the unfused bound adds to the owner's, and which
are verified with it. The owner op, the node's own, follows them and holds the ``h_n`` and
``c_n`` copies.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from solar_lsp.frontend import builders as B
from solar_lsp.frontend.errors import Unsupported
from solar_lsp.frontend.torch.context import Ctx, lowers
from solar_lsp.ir.core import Affine, Expr, Kernel, Load, Op, call
from solar_lsp.ir.validate import validate_kernel

GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
SeqIndex = Callable[[Affine, Affine, Affine], tuple[Affine, ...]]
#: True: one copy of the step's kernels per time step, all in the layer's op (the form before
#: loops; tests compare both forms' counts and bounds). False: each direction's step is a loop
#: body emitted once with ``repeat`` = T.
UNROLLED = False


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


@dataclass
class _At:
    """Where one step reads and writes: a time step of the unrolled form, or the loop body's
    carries and first time step."""
    gi: Callable[[Affine, Affine], Load]  # (b, g) -> the step's gate pre-activations
    h_prev: Callable[[Affine], Load]  # idx -> h_{t-1}[b, idx]
    c_prev: Load | None  # LSTM c_{t-1}[b, j]
    c_out: Load | None  # LSTM c_t[b, j]
    h_out: Callable[[Affine], Load]  # idx -> where h_t[b, idx] goes in the layer's output
    state_out: Load  # GRU: h_t[b, j] as the next step reads it


def time_axis(seq: SeqIndex) -> int:
    """The time axis of a sequence tensor indexed by ``seq``."""
    return [a.is_var() for a in seq(Affine.var("t"), Affine.var("b"), Affine.var("f"))].index("t")


def _sigmoid(e: Expr) -> Expr:
    return call("sigmoid", e)


class _Recurrent:
    """Emits the kernels (and parts) of one recurrent op."""

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
        self.sink: list[Kernel] = c.kernels  # where emit() puts kernels
        self.parts: list[Op] = []  # the loop bodies and projections (not UNROLLED)

    def name(self, tag: str) -> str:
        return self.c.name(tag)

    def emit(self, *ks: Kernel) -> None:
        self.sink.extend(ks)

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
        self.sink = self.c.kernels if UNROLLED else []
        gi = self.input_projection(ly, src, src_seq, feat)
        H, Hout, Bn, T = self.H, self.Hout, self.B, self.T
        if not UNROLLED:
            self.part(f"l{li}_d{d}_proj", 1, ("part", self.c.node.name, "projection"))
        state = [self.c.tmp((Bn, H), self.dt) for _ in range(2)]  # ping-pong c (LSTM) / h (GRU)
        hp = self.c.tmp((Bn, H), self.dt) if ly.w_hr is not None else None
        gh = self.c.tmp((Bn, self.G * H), self.dt) if self.cell == "gru" else None
        ntmp = self.c.tmp((Bn, H), self.dt) if self.cell == "gru" else None
        dr = _Direction(ly, slot, d, gi, dst, dst_seq, state, hp, gh, ntmp, cn)
        last_t = T - 1 if d == 0 else 0
        if UNROLLED:
            steps = range(T) if d == 0 else range(T - 1, -1, -1)
            prev_t: int | None = None
            for s, t in enumerate(steps):
                self.step(dr, self.unrolled_at(dr, s, t, prev_t, s == T - 1))
                prev_t = t
        else:
            self.loop(dr, li, 0 if d == 0 else T - 1)
        b, o = Affine.var("b"), Affine.var("o")
        self.sink = self.c.kernels
        if cn and not UNROLLED:  # the loop's last c (the unrolled form's last step writes it there)
            j = Affine.var("j")
            self.emit(Kernel(self.name("cn"), (("b", Bn), ("j", H)), Load(cn, (Affine.of(slot), b, j)),
                             "=", Load(state[0], (b, j))))
        self.emit(Kernel(self.name("hn"), (("b", Bn), ("o", Hout)), Load(hn_all, (Affine.of(slot), b, o)),
                         "=", Load(dst, dst_seq(Affine.of(last_t), b, Affine.of(d * Hout) + o))))

    def loop(self, dr: _Direction, li: int, t0: int) -> None:
        """The steps of one direction as one loop body run T times (``Op.repeat``): its kernels
        read ``gi`` and write the output at the first step's time ``t0``; ``h_{t-1}`` and
        ``c_{t-1}`` are carries, updated in place (the replay in verify/recurrent.py)."""
        Bn, Hout = self.B, self.Hout
        hc = self.c.tmp((Bn, Hout), self.dt)
        b, j = Affine.var("b"), Affine.var("j")
        c_at = None
        inits: list[tuple] = [(hc, self.h0, dr.slot)]
        if self.cell == "lstm":
            c_at = Load(dr.state[0], (b, j))
            inits.append((dr.state[0], self.c0, dr.slot))
        gi_at = lambda bb, gg: Load(dr.gi, (Affine.of(t0), bb, gg))  # noqa: E731
        if self.cell != "gru":  # the step's own copy: accumulating into gi would make the
            gs = self.c.tmp((Bn, self.G * self.H), self.dt)  # body write what the projection does
            g = Affine.var("g")
            self.emit(Kernel(self.name("gs"), (("b", Bn), ("g", self.G * self.H)), Load(gs, (b, g)),
                             "=", gi_at(b, g)))
            gi_at = lambda bb, gg: Load(gs, (bb, gg))  # noqa: E731
        at = _At(gi=gi_at,
                 h_prev=lambda idx: Load(hc, (b, idx)), c_prev=c_at, c_out=c_at,
                 h_out=lambda idx: Load(dr.dst, dr.dst_seq(Affine.of(t0), b, Affine.of(dr.d * Hout) + idx)),
                 state_out=Load(hc, (b, j)))
        self.step(dr, at)
        axis = time_axis(dr.dst_seq)
        carry = None if self.cell == "gru" else (hc, dr.dst, axis, dr.d * Hout)
        self.part(f"l{li}_d{dr.d}_step", self.T, ("part", self.c.node.name, "recurrent_step", self.T, t0,
                                                 ((dr.gi, 0), (dr.dst, axis)), tuple(inits), carry))

    def part(self, tag: str, repeat: int, call: tuple) -> None:
        """The kernels emitted since the last part, as an op of their own (program order)."""
        c = self.c
        self.parts.append(Op(id=f"{c.node.name}_{tag}", target=str(c.node.target),
                             line=c.lw.traced.lines.get(c.node.name), inputs=[], outputs=[],
                             kernels=self.sink, call=call, repeat=repeat,
                             phase=c.lw.traced.phases.get(c.node.name, "forward"),
                             note="part of the recurrent op: its traffic is counted on the op"))
        self.sink = []

    def unrolled_at(self, dr: _Direction, s: int, t: int, prev_t: int | None, last: bool) -> _At:
        """Where unrolled step ``s`` (time ``t``) reads and writes."""
        b, j = Affine.var("b"), Affine.var("j")
        tc, slot, d, Hout = Affine.of(t), Affine.of(dr.slot), dr.d, self.Hout

        def h_prev(idx: Affine) -> Load:
            if prev_t is None:
                return Load(self.h0, (slot, b, idx))
            if self.cell == "gru":
                return Load(dr.state[(s - 1) % 2], (b, idx))
            return Load(dr.dst, dr.dst_seq(Affine.of(prev_t), b, Affine.of(d * Hout) + idx))
        c_prev = c_out = None
        if self.cell == "lstm":
            c_prev = Load(self.c0, (slot, b, j)) if prev_t is None else Load(dr.state[(s - 1) % 2], (b, j))
            c_out = Load(dr.cn, (slot, b, j)) if (last and dr.cn) else Load(dr.state[s % 2], (b, j))
        return _At(gi=lambda bb, gg: Load(dr.gi, (tc, bb, gg)), h_prev=h_prev, c_prev=c_prev,
                   c_out=c_out, h_out=lambda idx: Load(dr.dst, dr.dst_seq(tc, b, Affine.of(d * Hout) + idx)),
                   state_out=Load(dr.state[s % 2], (b, j)))

    def gate(self, at: _At, q: int) -> Load:
        """Gate ``q``'s input projection at this step: ``gi[t, b, q*H + j]``."""
        return at.gi(Affine.var("b"), Affine.of(q * self.H) + Affine.var("j"))

    def step(self, dr: _Direction, at: _At) -> None:
        if self.cell == "gru":
            self.gru_step(dr, at)
        else:
            self.cell_step(dr, at)

    def gru_step(self, dr: _Direction, at: _At) -> None:
        """One GRU step: ``h W_hh^T + b_hh`` apart (r scales its n part), then r, z, n and h."""
        H, Bn, ly = self.H, self.B, dr.ly
        b, j, k = Affine.var("b"), Affine.var("j"), Affine.var("k")
        bh = (("b", Bn), ("j", H))
        binit = "identity"
        if ly.b_hh is not None:
            g = Affine.var("g")
            self.emit(Kernel(self.name("bhh"), (("b", Bn), ("g", 3 * H)), Load(dr.gh, (b, g)),
                             "=", Load(ly.b_hh, (g,))))
            binit = "keep"
        self.recurrent(dr.gh, ly.w_hh, at.h_prev(k), lambda bb, gg: (bb, gg), binit)
        r = _sigmoid(call("add", self.gate(at, 0), Load(dr.gh, (b, j))))
        z = _sigmoid(call("add", self.gate(at, 1), Load(dr.gh, (b, Affine.of(H) + j))))
        n = call("tanh", call("add", self.gate(at, 2), call("mul", r, Load(dr.gh, (b, Affine.of(2 * H) + j)))))
        self.emit(Kernel(self.name("n"), bh, Load(dr.ntmp, (b, j)), "=", n))  # read twice below
        nl = Load(dr.ntmp, (b, j))
        h = call("add", nl, call("mul", z, call("sub", at.h_prev(j), nl)))
        self.emit(Kernel(self.name("h"), bh, at.state_out, "=", h))
        self.emit(Kernel(self.name("y"), bh, at.h_out(j), "=", at.state_out))

    def cell_step(self, dr: _Direction, at: _At) -> None:
        """One LSTM or plain RNN step: ``gi[t] += h_{t-1} W_hh^T``, the gates, then h_t (through
        the projection W_hr when there is one)."""
        H, Hout, Bn, ly = self.H, self.Hout, self.B, dr.ly
        b, j, k = Affine.var("b"), Affine.var("j"), Affine.var("k")
        bh = (("b", Bn), ("j", H))
        acc = at.gi(b, Affine.var("g")).tensor  # gi[t] (the loop body: its copy of it)
        self.recurrent(acc, ly.w_hh, at.h_prev(k), lambda bb, gg: at.gi(bb, gg).index, "keep")
        if self.cell == "lstm":
            assert at.c_prev is not None and at.c_out is not None
            cval = call("add", call("mul", _sigmoid(self.gate(at, 1)), at.c_prev),
                        call("mul", _sigmoid(self.gate(at, 0)), call("tanh", self.gate(at, 2))))
            self.emit(Kernel(self.name("c"), bh, at.c_out, "=", cval))
            hval: Expr = call("mul", _sigmoid(self.gate(at, 3)), call("tanh", at.c_out))
        else:
            pre = self.gate(at, 0)
            hval = call("tanh", pre) if self.cell == "rnn_tanh" else call("max", pre, 0.0)
        if dr.hp is not None:
            self.emit(Kernel(self.name("hfull"), bh, Load(dr.hp, (b, j)), "=", hval))
            p = Affine.var("p")
            self.emit(B.contraction(self.name("proj"), dr.dst, ["b", "p"], dr.hp, (b, j), ly.w_hr,
                                    (p, j), {"b": Bn, "p": Hout, "j": H}, out_idx=at.h_out(p).index))
        else:
            self.emit(Kernel(self.name("h"), bh, at.h_out(j), "=", hval))

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
        tensors = c.lw.program.tensors
        for k in [k for op in self.parts for k in op.kernels] + c.kernels:
            validate_kernel(k, tensors)  # all before any part joins the program
        c.lw.program.ops.extend(self.parts)


def _lower(cell: str) -> Callable[[Ctx, tuple, dict], None]:
    def fn(c: Ctx, a: tuple, kw: dict) -> None:
        _Recurrent(c, cell, a).run()
    fn.__doc__ = f"aten.{cell}.input: projections, one loop body per layer and direction, h_n."
    return fn


for _cell in GATES:
    lowers(f"aten.{_cell}.input")(_lower(_cell))


@lowers("aten.lstm.data", "aten.gru.data", "aten.rnn_tanh.data", "aten.rnn_relu.data")
def _packed(c: Ctx, a: tuple, kw: dict) -> None:
    raise Unsupported("packed sequences (PackedSequence) have data-dependent lengths per step")
