"""mcDNN training ops (MetaX, seed 004): activation, softmax and dropout backward (SPEC 6.5, 6.13,
6.10). Tensors are 4-D or 5-D (N, C, spatial...); results blend into the output as
`dst = alpha * result + beta * prior_dst` (SPEC 5), and with beta = 0 the prior is never used."""

import tilegrad.dsl as tg

MCDNN_SHAPES = ("N C H W", "N C D H W")
ACTIVATION_MODES = ("sigmoid", "relu", "tanh", "clipped_relu", "elu", "swish", "identity")
NEEDS_Y = {"sigmoid", "tanh", "elu"}
NEEDS_X = {"relu", "clipped_relu", "elu", "swish"}


def blend(output: str, result, alpha, beta):
    """alpha * result + beta * prior value of the output (the prior only where beta != 0)."""
    prior = tg.output(output)

    def element(*index):
        value = result(*index)
        return tg.where(beta.eq(0.0), alpha * value, alpha * value + beta * prior[index])

    return element


@tg.op(
    outputs={"dx": tg.like("dy")},
    in_place={"dx": "dy"},
    rules=[
        tg.rule(lambda s, a: a["mode"] not in NEEDS_Y or "y" in s, "is required by this mode", "y"),
        tg.rule(lambda s, a: a["mode"] not in NEEDS_X or "x" in s, "is required by this mode", "x"),
    ],
)
def activation_backward(
    y=tg.tensor(*MCDNN_SHAPES, dtype="dy", optional=True),
    dy=tg.tensor(*MCDNN_SHAPES),
    x=tg.tensor(*MCDNN_SHAPES, dtype="dy", optional=True),
    mode=tg.attr("relu", ACTIVATION_MODES),
    coef=tg.attr(1.0, runtime=True, special=(1.0,)),
    alpha=tg.attr(1.0, runtime=True, special=(1.0,)),
    beta=tg.attr(0.0, runtime=True, special=(0.0,)),
):
    """The gradient of mcdnnActivationForward, dx = alpha * g + beta * dx_prior with g by mode:
    sigmoid dy*y*(1-y); relu dy*[x > 0]; tanh dy*(1-y²); clipped_relu dy*[0 < x < coef];
    elu dy if x > 0 else dy*(y + coef); swish, s = sigmoid(coef*x): dy*(s + coef*x*s*(1-s));
    identity dy. coef is the clip ceiling / elu alpha / swish beta; a NaN x passes dy (torch)."""

    def result(*i):
        g = dy[i]
        if mode == "sigmoid":
            return g * y[i] * (1.0 - y[i])
        # masks test the zero side, so a NaN x passes dy through as torch's backward ops do
        if mode == "relu":
            return tg.where(x[i] <= 0.0, 0.0, g)
        if mode == "tanh":
            return g * (1.0 - y[i] * y[i])
        if mode == "clipped_relu":
            return tg.where((x[i] <= 0.0) | (x[i] >= coef), 0.0, g)
        if mode == "elu":
            return tg.where(x[i] <= 0.0, g * (y[i] + coef), g)
        if mode == "swish":
            s = 1.0 / (1.0 + tg.exp(-(coef * x[i])))
            return g * (s + coef * x[i] * s * (1.0 - s))
        return g

    return blend("dx", result, alpha, beta)


def _softmax_rows(shape, attrs):
    """What a softmax sums over, as the last axis: a whole sample [N, C*H*W] (instance) or the
    channels of each position [N, C, H*W] (channel). A free view of contiguous data. With one
    position (N x C x 1 x 1, a classifier's softmax) the channels of a position are its sample:
    as [N, C, 1] every sum would walk a column one element wide (32768 x 1024: 222 ms, 34 as rows)."""
    spatial = tuple(range(2, len(shape)))
    if attrs["mode"] == "instance" or all(shape[a] == 1 for a in spatial):
        return ((0,), (1, *spatial))
    return ((0,), (1,), spatial)


@tg.op(outputs={"dx": tg.like("y")}, in_place={"dx": "dy"})
def softmax_backward(
    y=tg.tensor(*MCDNN_SHAPES, view=_softmax_rows),
    dy=tg.tensor(*MCDNN_SHAPES, dtype="y", view=_softmax_rows),
    algorithm=tg.attr("accurate", ("fast", "accurate", "log")),
    mode=tg.attr("channel", ("instance", "channel")),
    alpha=tg.attr(1.0, runtime=True, special=(1.0,)),
    beta=tg.attr(0.0, runtime=True, special=(0.0,)),
):
    """dx = y * (dy - Σ dy*y), or for log softmax dx = dy - exp(y) * Σ dy; the sum runs over
    C, H, W per n (instance: y seen as [N, C*H*W]) or over C per (n, h, w) (channel: y seen as
    [N, C, H*W]). fast and accurate agree here."""
    log = algorithm == "log"

    def summand(*i):
        return dy[i] if log else dy[i] * y[i]

    if y.rank == 2:  # instance, or channel with one position (_softmax_rows)
        samples, size = y.shape
        total = tg.temp("total", (samples,))
        total.assign(lambda n: tg.reduce_sum(size, lambda k: summand(n, k)))
        picked = lambda n, k: total[n]  # noqa: E731
    else:
        samples, channels, positions = y.shape
        total = tg.temp("total", (samples, positions))
        total.assign(lambda n, p: tg.reduce_sum(channels, lambda c: summand(n, c, p)))
        picked = lambda n, c, p: total[n, p]  # noqa: E731

    def result(*i):
        if log:
            return dy[i] - tg.exp(y[i]) * picked(*i)
        return y[i] * (dy[i] - picked(*i))

    return blend("dx", result, alpha, beta)


@tg.op(
    outputs={"dx": tg.like("dy")},
    dtypes=("float32", "float16", "bfloat16", "float64"),
    rules=[tg.rule(lambda s, a: _numel(s["reserve_space"]) >= _numel(s["dy"]),
                   "is smaller than dropout_reserve_space_size(dy.shape)", "reserve_space"),
           tg.rule(lambda s, a: 0.0 <= a["dropout"] <= 1.0, "dropout must be in [0, 1]", "dropout")],
)
def dropout_backward(
    dy=tg.tensor("*S"),
    reserve_space=tg.tensor("*S", "R", dtype=("uint8",)),
    dropout=tg.attr(0.5, runtime=True),
):
    """dx = dy * mask / (1 - p), zeros when p = 1; the reserve space holds one mask byte per
    element (row-major), as dy's shape or as a flat byte buffer."""
    scale = tg.where(dropout < 1.0, 1.0 / (1.0 - dropout), 0.0)

    def mask(*i):
        if reserve_space.rank == len(i) and len(i) != 1 or reserve_space.rank == 1 and len(i) == 1:
            return reserve_space[i]
        flat = i[0] if i else 0
        for axis in range(1, len(i)):
            flat = flat * dy.shape[axis] + i[axis]
        return reserve_space[flat]

    return lambda *i: tg.where(mask(*i).ne(0), dy[i] * scale, 0.0)


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


POOL_MODES = ("max", "avg_include_padding", "avg_exclude_padding", "max_deterministic")


@tg.op(
    outputs={"dx": tg.like("x")},
    rules=[
        tg.rule(lambda s, a: len(a["window"]) == len(s["x"]) - 2, "needs one size per spatial dim", "window"),
        tg.rule(lambda s, a: len(a["padding"]) in (0, len(s["x"]) - 2), "needs one size per spatial dim", "padding"),
        tg.rule(lambda s, a: len(a["stride"]) in (0, len(s["x"]) - 2), "needs one size per spatial dim", "stride"),
        tg.rule(lambda s, a: all(w > 0 for w in a["window"]) and all(s_ > 0 for s_ in a["stride"]),
                "window and stride must be positive", "window"),
        tg.rule(lambda s, a: all(2 * p <= w for p, w in zip(a["padding"], a["window"])),
                "padding must be at most half the window", "padding"),
        tg.rule(lambda s, a: tuple(s["dy"][2:]) == _pooled(s["x"][2:], a), "must have the pooled shape of x", "dy"),
        tg.rule(lambda s, a: len(s["y"]) == len(s["dy"]), "must have as many dims as dy", "y"),
        tg.rule(lambda s, a: not a["mode"].startswith("max") or _numel(a["window"]) <= 1 << 24,
                "may hold at most 2^24 cells in max mode (it numbers them in float32)", "window"),
    ],
)
def pooling_backward(
    y=tg.tensor(*MCDNN_SHAPES),
    dy=tg.tensor(*MCDNN_SHAPES, dtype="y"),
    x=tg.tensor("N C IH IW", "N C ID IH IW", dtype="y"),
    mode=tg.attr("max", POOL_MODES),
    window=tg.attr(tuple),
    padding=tg.attr(()),
    stride=tg.attr(()),
    alpha=tg.attr(1.0, runtime=True, special=(1.0,)),
    beta=tg.attr(0.0, runtime=True, special=(0.0,)),
):
    """Max: each window's dy goes to its first cell equal to its maximum y in row-major window order,
    or to its last NaN if y is NaN (torch's rule: NaN is the maximum). One stage finds each window's
    cell (its row-major index, -1 if no cell matches y: that window routes nothing).
    Average: a window's dy / area goes to each of its cells (area counts padding or not).
    Both then gather: each input element sums what the windows that cover it route to it,
    visiting only the windows that can cover it (ceil(window / stride) per dim) in increasing
    window order, so the sum is a serial scatter's, bit for bit, with no zero fill and no
    read-modify-write of dx."""
    spatial = x.rank - 2
    pad = padding or (0,) * spatial
    step = stride or window
    size_in, size_out = x.shape[2:], dy.shape[2:]
    cells = 1
    for w in window:
        cells *= w

    def window_origin(o, d):
        return o * step[d] - pad[d]

    def offsets(k):  # the window offset of row-major cell k, per spatial dim
        out, rest = [], k
        for d in reversed(range(spatial)):
            out.append(rest % window[d])
            rest = rest // window[d]
        return tuple(reversed(out))

    def covering(p, js):
        """The windows that may cover input point p, one per js (js[d] < ceil(window / stride)):
        per dim, whether the window exists and covers p there; its index o and p's row-major cell in it."""
        o, inside, cell = [], [], 0
        for d in range(spatial):
            top = p[d] + pad[d]
            od = top // step[d] - (-(-window[d] // step[d]) - 1) + js[d]
            inside.append((od >= 0) & (od < size_out[d]) & (top - od * step[d] < window[d]))
            o.append(od)
            cell = cell * window[d] + (top - od * step[d])
        return inside, tuple(o), cell

    reach = tuple(-(-w // s) for w, s in zip(window, step))

    if mode.startswith("max"):
        # float32 cell numbers (exact up to 2^24, a rule): the select chains stay in the 32-bit
        # lanes of the f32 compares (an int16 cell number made LLVM pack every compare mask to 16
        # bits), and the gather compares what it loads with no conversion (an int32 `chosen` cost
        # a vcvtdq2ps per compare: 6.9 -> 6.2 ms at 32x64x56x56)
        chosen = tg.temp("chosen", dy.shape, "float32")
        columns = window[-1]

        def choose(n, c, *o):
            """The first cell (row-major k) equal to y; where y is NaN, the last NaN cell (torch's
            rule: NaN is the maximum, and its index is the last NaN's); -1: no cell. Two chains of
            selects over the window's cells (two instructions a cell, no branch on y), straight-line
            code that vectorizes over o. Only padded dims test whether a cell lies inside x: the
            last dim's test joins each cell's match; the outer dims' tests are the same for a whole
            window row, so the equality chain compares a row outside x with NaN (equal to nothing)
            and the NaN chain picks between a row's chain and what came before it, one select a row
            (each the faster form for its chain, measured). The NaN chain is needed only in a plane
            of y that holds a NaN: the choice between them tests the plane's flag, the same for the
            whole plane, which unswitch-invariant-selects turns into two copies of the scan."""
            top = y[(n, c, *o)]

            def position(k):
                return [window_origin(o[d], d) + offsets(k)[d] for d in range(spatial)]

            def value(k):
                return x[(n, c, *position(k))]

            def inside(k, dims):
                at = position(k)
                return [(at[d] >= 0) & (at[d] < size_in[d]) for d in dims if pad[d]]

            def row_cells(row):
                return range(row * columns, (row + 1) * columns)

            def row_tests(row):
                return inside(row * columns, range(spatial - 1))

            first_equal = -1.0
            for row in reversed(range(cells // columns)):
                row_top = top + tg.where(_all(row_tests(row)), 0.0, float("nan")) if row_tests(row) else top
                for k in reversed(row_cells(row)):
                    first_equal = tg.where(_all(inside(k, [spatial - 1]) + [value(k).eq(row_top)]), float(k),
                                           first_equal)
            last_nan = -1.0
            for row in range(cells // columns):
                row_result = last_nan
                for k in row_cells(row):
                    row_result = tg.where(_all(inside(k, [spatial - 1]) + [value(k).ne(value(k))]), float(k),
                                          row_result)
                last_nan = tg.where(_all(row_tests(row)), row_result, last_nan) if row_tests(row) else row_result
            chosen_nan = tg.where(top.ne(top), last_nan, first_equal)
            return tg.where(y_plane_finite[n, c].eq(0.0), first_equal, chosen_nan)

        # a plane of y with no NaN (nor inf) sums y - y to 0: there the NaN chain is not needed
        y_plane_finite = tg.temp("y_plane_finite", dy.shape[:2], "float32")
        y_plane_finite.assign(lambda n, c: tg.reduce_sum_over(size_out, lambda *o: y[(n, c, *o)] - y[(n, c, *o)]))
        chosen.assign(choose)

        def routed(n, c, o, cell, inside):
            """A window's dy reaches only the cell it chose. The cell numbers are compared as
            float32 (exact for them; `chosen` holds them so): one 8-lane compare where 64-bit index compares take four,
            and a compare LLVM selects on without a branch in the loops it leaves scalar. A window
            that does not cover p along the outer dims (a test the same for a whole row of p) is
            given cell -2, which no window chose: one select a row, where a select per element on
            a row-wide test became a branch in LLVM's code."""
            cell = tg.cast(cell, "f")
            if inside[:-1]:
                cell = tg.where(_all(inside[:-1]), cell, -2.0)
            chose = chosen[(n, c, *o)].eq(cell)
            return tg.where(inside[-1], tg.where(chose, dy[(n, c, *o)], 0.0), 0.0)
    else:
        def routed(n, c, o, cell, inside):
            return tg.where(_all(inside), dy[(n, c, *o)] / area(o), 0.0)

    def area(o):
        if mode == "avg_include_padding":
            return float(cells)
        total = 1.0
        for d in range(spatial):
            start = window_origin(o[d], d)
            end = tg.minimum(start + window[d], size_in[d])
            total = total * tg.cast(end - tg.maximum(start, 0), "f")
        return total

    def gathered(n, c, *p):
        def term(*js):
            inside, o, cell = covering(p, js)
            return routed(n, c, o, cell, inside)

        return tg.reduce_sum_over(reach, term)

    return blend("dx", gathered, alpha, beta)


def _reader(temp):
    """A temp as a term function: (n, c, *p) -> temp[n, c, *p]."""
    return lambda *index: temp[index]


def _all(conditions):
    result = conditions[0]
    for condition in conditions[1:]:
        result = result & condition
    return result


def _pooled(size_in, attrs) -> tuple:
    spatial = len(size_in)
    pad = attrs["padding"] or (0,) * spatial
    step = attrs["stride"] or attrs["window"]
    return tuple((size_in[d] + 2 * pad[d] - attrs["window"][d]) // step[d] + 1 for d in range(spatial))


@tg.op(
    outputs={"dx": tg.like("x")},
    rules=[tg.rule(lambda s, a: a["lrn_n"] >= 1, "must be at least 1", "lrn_n")],
)
def lrn_cross_channel_backward(
    y=tg.tensor(*MCDNN_SHAPES),
    dy=tg.tensor(*MCDNN_SHAPES, dtype="y"),
    x=tg.tensor(*MCDNN_SHAPES, dtype="y"),
    lrn_n=tg.attr(5),
    lrn_alpha=tg.attr(1e-4, runtime=True),
    lrn_beta=tg.attr(0.75, runtime=True),
    lrn_k=tg.attr(2.0, runtime=True),
    alpha=tg.attr(1.0, runtime=True, special=(1.0,)),
    beta=tg.attr(0.0, runtime=True, special=(0.0,)),
):
    """y_c = x_c * S_c^-beta with S_c = k + alpha/n * Σ_{j in window(c)} x_j^2, window(c) =
    [c - (n-1)//2, c + n-1 - (n-1)//2]; dx_c = dy_c S_c^-beta - 2 alpha beta / n * x_c *
    Σ_{j: c in window(j)} dy_j x_j S_j^(-beta-1)."""
    channels = x.shape[1]
    behind, ahead = (lrn_n - 1) // 2, lrn_n - 1 - (lrn_n - 1) // 2

    def around(c, first, count, term):  # Σ over channels first..first+count-1 that exist
        return tg.reduce_sum(count, lambda k: tg.where((c + first + k >= 0) & (c + first + k < channels),
                                                       term(c + first + k), 0.0))

    scale = tg.temp("scale", x.shape)
    scale.assign(lambda n, c, *p: lrn_k + lrn_alpha / lrn_n * around(c, -behind, lrn_n,
                                                                     lambda j: x[(n, j, *p)] * x[(n, j, *p)]))
    carried = tg.temp("carried", x.shape)
    carried.assign(lambda n, c, *p: dy[(n, c, *p)] * x[(n, c, *p)]
                   * tg.power(scale[(n, c, *p)], -lrn_beta - 1.0, positive_base=True))

    def result(n, c, *p):
        spread = around(c, -ahead, lrn_n, lambda j: carried[(n, j, *p)])
        return (dy[(n, c, *p)] * tg.power(scale[(n, c, *p)], -lrn_beta, positive_base=True)
                - 2.0 * lrn_alpha * lrn_beta / lrn_n * x[(n, c, *p)] * spread)

    return blend("dx", result, alpha, beta)


@tg.op(
    outputs={"dx": tg.like("x"), "d_means": tg.like("x")},
    rules=[tg.rule(lambda s, a: 1 <= a["lrn_n"] <= 16, "must be in 1..16", "lrn_n")],
)
def divisive_normalization_backward(
    x=tg.tensor(*MCDNN_SHAPES),
    means=tg.tensor(*MCDNN_SHAPES, dtype="x", optional=True),
    dy=tg.tensor(*MCDNN_SHAPES, dtype="x"),
    lrn_n=tg.attr(5),
    lrn_alpha=tg.attr(1e-4, runtime=True),
    lrn_beta=tg.attr(0.75, runtime=True),
    lrn_k=tg.attr(2.0, runtime=True),
    alpha=tg.attr(1.0, runtime=True, special=(1.0,)),
    beta=tg.attr(0.0, runtime=True, special=(0.0,)),
):
    """The forward differentiated (inferred from mcDNN's description, SPEC 6.9): d = x - m,
    S = k + alpha / n^s * Σ_{n x n spatial window} d^2 (s spatial dims, window [p - (n-1)//2,
    p + n-1 - (n-1)//2] per dim, zero outside), y = x * S^-beta. With R_q = Σ_{p whose window
    holds q} dy_p x_p S_p^(-beta-1): dx = dy S^-beta - 2 alpha beta / n^s * d R, d_means = 2 alpha
    beta / n^s * d R."""
    spatial = x.rank - 2
    extents = x.shape[2:]
    behind = (lrn_n - 1) // 2
    cells = float(lrn_n ** spatial)

    def centred(n, c, *p):
        return x[(n, c, *p)] - means[(n, c, *p)] if means is not None else x[(n, c, *p)]

    def along(axis, first, term):
        """Σ_k term at p + first + k along one spatial axis (k < lrn_n), zero outside x."""
        def total(n, c, *p):
            def cell(k):
                at = list(p)
                at[axis] = p[axis] + first + k
                return tg.where((at[axis] >= 0) & (at[axis] < extents[axis]), term(n, c, *at), 0.0)

            return tg.reduce_sum_over((lrn_n,), cell)

        return total

    def window_sum(name, first, term):
        """Σ over the lrn_n^s window at p + first + k, zero outside x: a box is the product of its
        sides, so one sum per spatial axis, the last first (each axis but the first into a temp):
        2 lrn_n terms a point where the whole window took lrn_n^2, each term computed once."""
        for axis in reversed(range(1, spatial)):
            partial = tg.temp(f"{name}_{axis}", x.shape)
            partial.assign(along(axis, first, term))
            term = _reader(partial)
        return along(0, first, term)

    squares = window_sum("squares", -behind, lambda *q: centred(*q) * centred(*q))
    scale = tg.temp("scale", x.shape)
    scale.assign(lambda *p: lrn_k + lrn_alpha / cells * squares(*p))
    carried = tg.temp("carried", x.shape)
    carried.assign(lambda *q: dy[q] * x[q] * tg.power(scale[q], -lrn_beta - 1.0, positive_base=True))
    ahead = lrn_n - 1 - behind
    carried_sums = window_sum("carried_sums", -ahead, lambda *q: carried[q])
    spread = tg.temp("spread", x.shape)  # 2 alpha beta / n^s * d * R
    spread.assign(lambda n, c, *p: 2.0 * lrn_alpha * lrn_beta / cells * centred(n, c, *p) * carried_sums(n, c, *p))
    dx = blend("dx", lambda *q: dy[q] * tg.power(scale[q], -lrn_beta, positive_base=True) - spread[q], alpha, beta)
    d_means = blend("d_means", lambda *q: spread[q], alpha, beta)
    return dx, d_means
