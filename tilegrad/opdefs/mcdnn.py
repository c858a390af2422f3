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
    coef=tg.attr(1.0, runtime=True),
    alpha=tg.attr(1.0, runtime=True),
    beta=tg.attr(0.0, runtime=True),
):
    """The gradient of mcdnnActivationForward: coef is the clip ceiling / elu alpha / swish beta."""

    def result(*i):
        g = dy[i]
        if mode == "sigmoid":
            return g * y[i] * (1.0 - y[i])
        if mode == "relu":
            return tg.where(x[i] > 0.0, g, 0.0)
        if mode == "tanh":
            return g * (1.0 - y[i] * y[i])
        if mode == "clipped_relu":
            return tg.where((x[i] > 0.0) & (x[i] < coef), g, 0.0)
        if mode == "elu":
            return tg.where(x[i] > 0.0, g, g * (y[i] + coef))
        if mode == "swish":
            s = 1.0 / (1.0 + tg.exp(-(coef * x[i])))
            return g * (s + coef * x[i] * s * (1.0 - s))
        return g

    return blend("dx", result, alpha, beta)


@tg.op(outputs={"dx": tg.like("y")})
def softmax_backward(
    y=tg.tensor(*MCDNN_SHAPES),
    dy=tg.tensor(*MCDNN_SHAPES, dtype="y"),
    algorithm=tg.attr("accurate", ("fast", "accurate", "log")),
    mode=tg.attr("channel", ("instance", "channel")),
    alpha=tg.attr(1.0, runtime=True),
    beta=tg.attr(0.0, runtime=True),
):
    """dx = y * (dy - Σ dy*y), or for log softmax dx = dy - exp(y) * Σ dy; the sum runs over
    C, H, W per n (instance) or over C per (n, h, w) (channel). fast and accurate agree here."""
    shape = y.shape
    spatial = shape[2:]
    log = algorithm == "log"

    def summand(n, c, *where):
        return dy[(n, c, *where)] if log else dy[(n, c, *where)] * y[(n, c, *where)]

    def nested(extents, body, bound=()):
        if not extents:
            return body(*bound)
        return tg.reduce_sum(extents[0], lambda k: nested(extents[1:], body, bound + (k,)))

    if mode == "instance":
        total = tg.temp("total", shape[:1], "float32")
        total.assign(lambda n: nested((shape[1], *spatial), lambda c, *w: summand(n, c, *w)))
        picked = lambda n, c, *w: total[n]  # noqa: E731
    else:
        total = tg.temp("total", (shape[0], *spatial), "float32")
        total.assign(lambda n, *w: nested((shape[1],), lambda c: summand(n, c, *w)))
        picked = lambda n, c, *w: total[(n, *w)]  # noqa: E731

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


def dropout_reserve_space_size(shape) -> int:
    """Bytes of the dropout reserve space for a tensor of this shape: one mask byte per element."""
    return _numel(shape)


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n
