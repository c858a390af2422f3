"""Loss backward ops: NLL (SPEC 6.1, seed 000) and binary cross-entropy (SPEC 6.4, seed 003)."""

import tilegrad.dsl as tg

REDUCTIONS = ("none", "mean", "sum")
REDUCTION_CODES = {0: "none", 1: "mean", 2: "sum"}


@tg.op(
    outputs={"out": tg.like("self")},
    dtypes=("float32", "float16", "bfloat16", "float64"),
    rules=[
        tg.rule(lambda s, a: len(s["self"]) == 1 or len(s["target"]) == 1, "must be [N] when self is [N, C]", "target"),
        tg.rule(lambda s, a: len(s["self"]) == 2 or len(s["target"]) == 0, "must be [] when self is [C]", "target"),
        tg.rule(lambda s, a: a["reduction"] != "none" or len(s["self"]) == 1
                or tuple(s["grad_output"]) == tuple(s["self"][:1]),
                "must be [N] when reduction='none'", "grad_output"),
        tg.rule(lambda s, a: (a["reduction"] == "none" and len(s["self"]) == 2)
                or _numel(s["grad_output"]) == 1,
                "must have one element unless reduction='none' with self [N, C]", "grad_output"),
        tg.rule(lambda s, a: _numel(s["total_weight"]) == 1, "must have one element", "total_weight"),
    ],
)
def nll_loss_backward(
    grad_output=tg.tensor(tg.ONE, "N", dtype="self"),
    self=tg.tensor("N C", "C"),
    target=tg.tensor("N", "", dtype=tg.INDEX_DTYPES, values=(0, "C")),
    weight=tg.tensor("C", dtype="self", optional=True),
    total_weight=tg.tensor(tg.ONE, dtype="self", values=(1.0, 10.0)),
    reduction=tg.attr("mean", REDUCTIONS, REDUCTION_CODES),
    ignore_index=tg.attr(-100, runtime=True),
):
    """out[i, t_i] = -g_i * w[t_i] (/ total_weight for mean) for every row whose target is kept.

    A zero fill, then one store per row: the fill is a memset (no compare per element), and a row
    with an ignored target is never visited. An ignored target indexes column 0, so only a kept
    target outside [0, C) fails the scatter's range check. The scatter adds to the fill, so where
    g_i * w[t_i] is zero the element is +0.0 (0.0 + -0.0), where torch writes -0.0: equal values,
    another sign bit."""
    out = tg.output("out")
    w = (lambda c: weight[c]) if weight is not None else (lambda c: 1.0)

    def g(i):
        per_row = reduction == "none" and self.rank == 2
        value = grad_output[i] if per_row and grad_output.rank == 1 else grad_output.item()
        return value / total_weight.item() if reduction == "mean" else value

    def t(i):
        return target[i] if target.rank == 1 else target.item()

    def column(i):
        return tg.where(t(i).eq(ignore_index), 0, t(i))

    message = "target: a value is outside [0, C) and is not ignore_index"
    out.fill(0.0)
    if self.rank == 2:
        tg.scatter_add(out, (self.shape[0],), index=lambda i: (i, column(i)), value=lambda i: -g(i) * w(column(i)),
                       when=lambda i: t(i).ne(ignore_index), message=message)
    else:
        tg.scatter_add(out, (1,), index=lambda r: (column(0),), value=lambda r: -g(0) * w(column(0)),
                       when=lambda r: t(0).ne(ignore_index), message=message)


@tg.op(
    outputs={"dx": tg.like("input_x")},
    rules=[
        tg.rule(lambda s, a: a["reduction"] != "none" or tuple(s["dloss"]) == tuple(s["input_x"]),
                "must have the shape of input_x when reduction='none'", "dloss"),
        tg.rule(lambda s, a: a["reduction"] == "none" or _numel(s["dloss"]) == 1,
                "must have one element when reduction is 'mean' or 'sum'", "dloss"),
    ],
)
def binary_cross_entropy_grad(
    input_x=tg.tensor("*S", values=(0.01, 0.99)),
    input_y=tg.tensor("*S", dtype="input_x", values=(0.0, 1.0)),
    weight=tg.tensor("*S", dtype="input_x", optional=True),
    dloss=tg.tensor("*S", tg.ONE, dtype="input_x"),
    reduction=tg.attr("mean", REDUCTIONS, REDUCTION_CODES),
):
    """dx = dloss * w * (x - y) / max(x * (1 - x), 1e-12), divided by numel for mean."""
    x, y = input_x, input_y
    g = dloss if reduction == "none" else dloss.item()
    if reduction == "mean":
        g = g / x.numel  # one scalar division, not one per element
    w = weight if weight is not None else 1.0
    return g * w * (x - y) / tg.maximum(x * (1.0 - x), 1e-12)


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
