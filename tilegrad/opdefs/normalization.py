"""mcdnnNormalization{Backward,ForwardTraining} (SPEC 6.8): batch normalization for group_cnt = 1,
group normalization over group_cnt channel groups per sample otherwise (tilegrad's definition).
Statistics are shaped like the scale for batch norm and [N, group_cnt] for group norm."""

import tilegrad.dsl as tg
from tilegrad.opdefs.batch_norm import (
    PARAM_SHAPES,
    BatchAxes,
    _activate,
    _activation_slope,
    _data_view,
    _params_fit,
    batch_norm_gradients,
    batch_norm_training,
)
from tilegrad.opdefs.mcdnn import ACTIVATION_MODES, MCDNN_SHAPES, blend

NORM_MODES = ("per_channel", "per_activation")
NORM_OPS = ("norm", "norm_activation", "norm_add_activation")
AS_BN_OPS = {"norm": "bn", "norm_activation": "bn_activation", "norm_add_activation": "bn_add_activation"}
STATS_SHAPES = ("N G", *PARAM_SHAPES)


def _bn_mode(mode: str) -> str:
    return "spatial" if mode == "per_channel" else "per_activation"


def _norm_data_view(shape, attrs):
    """Batch norm per channel (group_cnt = 1) with one position is seen as [N, C], as
    batch_norm_backward's x is (_data_view); any other call's x as given."""
    if attrs["group_cnt"] != 1 or attrs["mode"] != "per_channel":
        return tuple((a,) for a in range(len(shape)))
    return _data_view(shape, {"mode": "spatial"})


def data(**options):
    return tg.tensor(*MCDNN_SHAPES, view=_norm_data_view, **options)


def _stats_shape(shape_of, attrs):
    if attrs["group_cnt"] > 1:
        return (shape_of("x")[0], attrs["group_cnt"])
    return shape_of("bn_scale")


def _fits(shapes, attrs, name) -> bool:
    if name not in shapes:
        return True
    if name.startswith("saved") and attrs["group_cnt"] > 1:
        return tuple(shapes[name]) == (shapes["x"][0], attrs["group_cnt"])
    return _params_fit(shapes, {**attrs, "mode": _bn_mode(attrs["mode"])}, name)


def _rules(pair: tuple[str, str], extra=()):
    names = ("bn_scale", "bn_bias", *pair)
    return [
        tg.rule(lambda s, a: a["epsilon"] >= 1e-5, "must be at least 1e-5", "epsilon"),
        tg.rule(lambda s, a: a["group_cnt"] >= 1 and s["x"][1] % a["group_cnt"] == 0,
                "must be at least 1 and divide the channels", "group_cnt"),
        tg.rule(lambda s, a: (pair[0] in s) == (pair[1] in s), f"{pair[0]} and {pair[1]} come as a pair", pair[1]),
        *[tg.rule(lambda s, a, n=n: _fits(s, a, n),
                  "must be 1xCx1x1 (per_channel) or 1xCxHxW (per_activation); saved statistics of group "
                  "norm are [N, group_cnt]", n) for n in names],
        *extra,
    ]


class _Groups:
    """Per sample n and group g: sums over the group's channels and the spatial dims."""

    def __init__(self, x, groups: int, mode: str):
        self.groups, self.mode = groups, mode
        self.width = x.shape[1] // groups
        self.spatial = x.shape[2:]
        self.count = self.width
        for d in self.spatial:
            self.count = self.count * d

    def of(self, c):
        return c // self.width

    def total(self, n, g, term):
        return tg.reduce_sum_over((self.width, *self.spatial),
                                  lambda k, *where: term(n, g * self.width + k, *where))

    def param(self, tensor, n, c, *p):
        return tensor[(0, c, *(p if self.mode == "per_activation" else (0,) * len(p)))]


def _group_stats(x, groups: _Groups, epsilon, mean_buffer, inv_buffer):
    mean_buffer.assign(lambda n, g: groups.total(n, g, lambda *i: x[i]) / groups.count)
    inv_buffer.assign(lambda n, g: 1.0 / tg.sqrt(groups.total(
        n, g, lambda *i: (x[i] - mean_buffer[n, g]) * (x[i] - mean_buffer[n, g])) / groups.count + epsilon))


@tg.op(
    outputs={"dx": tg.like("x"), "d_bn_scale": tg.like("bn_scale"), "d_bn_bias": tg.like("bn_scale"),
             "dz": tg.like("x", when=lambda a: a["norm_ops"] == "norm_add_activation")},
    rules=_rules(("saved_mean", "saved_inv_variance"),
                 [tg.rule(lambda s, a: a["norm_ops"] == "norm" or "y" in s, "is required by norm_ops", "y"),
                  tg.rule(lambda s, a: a["activation"] != "swish" or "bn_bias" in s,
                          "is required by swish", "bn_bias"),
                  tg.rule(lambda s, a: not (a["norm_ops"] == "norm_add_activation" and a["activation"] == "swish"),
                          "swish needs the pre-activation, which norm_add_activation does not keep",
                          "activation")]),
)
def normalization_backward(
    x=data(),
    y=data(dtype="x", optional=True),
    dy=data(dtype="x"),
    bn_scale=tg.tensor(*PARAM_SHAPES, dtype=tg.params_dtype("x")),
    bn_bias=tg.tensor(*PARAM_SHAPES, dtype=tg.params_dtype("x"), optional=True),
    saved_mean=tg.tensor(*STATS_SHAPES, dtype=tg.params_dtype("x"), optional=True),
    saved_inv_variance=tg.tensor(*STATS_SHAPES, dtype=tg.params_dtype("x"), optional=True),
    mode=tg.attr("per_channel", NORM_MODES),
    norm_ops=tg.attr("norm", NORM_OPS),
    algo=tg.attr("standard", ("standard", "persist")),
    activation=tg.attr("relu", ACTIVATION_MODES),
    coef=tg.attr(1.0, runtime=True, special=(1.0,)),
    group_cnt=tg.attr(1),
    epsilon=tg.attr(1e-5),
    alpha_data_diff=tg.attr(1.0, runtime=True, special=(1.0,)),
    beta_data_diff=tg.attr(0.0, runtime=True, special=(0.0,)),
    alpha_param_diff=tg.attr(1.0, runtime=True, special=(1.0,)),
    beta_param_diff=tg.attr(0.0, runtime=True, special=(0.0,)),
):
    """group_cnt = 1 is batch_norm_backward(_ex). Group norm, with x̂ = (x - μ[n,g]) r[n,g] and
    dŷ = dy (· act'): dγ = Σ_{n, spatial} dŷ x̂, dβ = Σ dŷ, dx = r (γ dŷ - a/D - x̂ b/D) where
    a = Σ_group γ dŷ and b = Σ_group γ dŷ x̂ over the D elements of the group; dz = dŷ with
    norm_add_activation (otherwise dz is None: not allocated, not written)."""

    def slope(i, k, x_hat):
        pre = bn_scale[k] * x_hat(*i) + bn_bias[k] if activation == "swish" else None
        return _activation_slope(activation, coef, y[i], pre)

    def dz(dy_hat):
        return blend("dz", dy_hat, alpha_data_diff, beta_data_diff) if norm_ops == "norm_add_activation" else None

    if group_cnt == 1:
        dx, d_scale, d_bias, dy_hat = batch_norm_gradients(
            x, dy, bn_scale, saved_mean, saved_inv_variance, _bn_mode(mode), epsilon, alpha_data_diff,
            beta_data_diff, alpha_param_diff, beta_param_diff, slope if norm_ops != "norm" else None)
        return dx, d_scale, d_bias, dz(dy_hat)

    groups = _Groups(x, group_cnt, mode)
    if saved_mean is None:
        mean = tg.temp("mean", (x.shape[0], group_cnt))
        inv = tg.temp("inv_std", (x.shape[0], group_cnt))
        _group_stats(x, groups, epsilon, mean, inv)
    else:
        mean, inv = saved_mean, saved_inv_variance

    def x_hat(n, c, *p):
        return (x[(n, c, *p)] - mean[n, groups.of(c)]) * inv[n, groups.of(c)]

    def dy_hat(*i):
        if norm_ops == "norm":
            return dy[i]
        k = (0, i[1], *(i[2:] if mode == "per_activation" else (0,) * (len(i) - 2)))
        return dy[i] * slope(i, k, x_hat)

    gamma = lambda *i: groups.param(bn_scale, *i)  # noqa: E731
    stats = (x.shape[0], group_cnt)
    a_sum = tg.temp("a", stats)
    b_sum = tg.temp("b", stats)
    if mode == "per_channel":
        # one sweep of x and dy: per (n, c) Σ_p dŷ x and Σ_p dŷ; with γ constant over a channel,
        # a, b, dγ and dβ follow from these (Σ_p dŷ x̂ = r (Σ_p dŷ x - μ Σ_p dŷ)), as torch does
        spatial = x.shape[2:]
        per_channel = (x.shape[0], x.shape[1])
        dy_x, dy_sum = tg.temp("dy_x", per_channel), tg.temp("dy_sum", per_channel)
        dy_x.assign(lambda n, c: tg.reduce_sum_over(spatial, lambda *p: dy_hat(n, c, *p) * x[(n, c, *p)]))
        dy_sum.assign(lambda n, c: tg.reduce_sum_over(spatial, lambda *p: dy_hat(n, c, *p)))

        def dy_x_hat(n, c):  # Σ_p dŷ x̂ over channel c of sample n
            g = groups.of(c)
            return inv[n, g] * (dy_x[n, c] - mean[n, g] * dy_sum[n, c])

        def over_group(n, g, term):
            return tg.reduce_sum(groups.width, lambda k: bn_scale[(0, g * groups.width + k, *(0,) * len(spatial))]
                                 * term(n, g * groups.width + k))

        a_sum.assign(lambda n, g: over_group(n, g, lambda n_, c: dy_sum[n_, c]))
        b_sum.assign(lambda n, g: over_group(n, g, dy_x_hat))
        d_scale = blend("d_bn_scale", lambda _, c, *p: tg.reduce_sum(x.shape[0], lambda n: dy_x_hat(n, c)),
                        alpha_param_diff, beta_param_diff)
        d_bias = blend("d_bn_bias", lambda _, c, *p: tg.reduce_sum(x.shape[0], lambda n: dy_sum[n, c]),
                       alpha_param_diff, beta_param_diff)
    else:
        a_sum.assign(lambda n, g: groups.total(n, g, lambda *i: gamma(*i) * dy_hat(*i)))
        b_sum.assign(lambda n, g: groups.total(n, g, lambda *i: gamma(*i) * dy_hat(*i) * x_hat(*i)))
        over_batch = BatchAxes(x, True).total  # the parameters' reductions
        d_scale = blend("d_bn_scale", lambda _, c, *p: over_batch(c, p, lambda *i: dy_hat(*i) * x_hat(*i)),
                        alpha_param_diff, beta_param_diff)
        d_bias = blend("d_bn_bias", lambda _, c, *p: over_batch(c, p, dy_hat), alpha_param_diff, beta_param_diff)

    def dx(n, c, *p):
        g = groups.of(c)
        return inv[n, g] * (gamma(n, c, *p) * dy_hat(n, c, *p) - a_sum[n, g] / groups.count
                            - x_hat(n, c, *p) * b_sum[n, g] / groups.count)

    return blend("dx", dx, alpha_data_diff, beta_data_diff), d_scale, d_bias, dz(dy_hat)


@tg.op(
    outputs={"y": tg.like("x"), "save_mean": tg.shaped_by(_stats_shape, dtype="bn_scale"),
             "save_inv_variance": tg.shaped_by(_stats_shape, dtype="bn_scale")},
    rules=_rules(("running_mean", "running_variance"),
                 [tg.rule(lambda s, a: a["group_cnt"] == 1 or "running_mean" not in s,
                          "group norm keeps no running statistics", "running_mean"),
                  tg.rule(lambda s, a: a["norm_ops"] != "norm_add_activation" or "z" in s,
                          "is required by norm_add_activation", "z")]),
)
def normalization_forward_training(
    x=data(),
    z=data(dtype="x", optional=True),
    bn_scale=tg.tensor(*PARAM_SHAPES, dtype=tg.params_dtype("x")),
    bn_bias=tg.tensor(*PARAM_SHAPES, dtype=tg.params_dtype("x")),
    running_mean=tg.tensor(*PARAM_SHAPES, dtype=tg.params_dtype("x"), optional=True, updated=True),
    running_variance=tg.tensor(*PARAM_SHAPES, dtype=tg.params_dtype("x"), optional=True, updated=True),
    mode=tg.attr("per_channel", NORM_MODES),
    norm_ops=tg.attr("norm", NORM_OPS),
    algo=tg.attr("standard", ("standard", "persist")),
    activation=tg.attr("relu", ACTIVATION_MODES),
    coef=tg.attr(1.0, runtime=True, special=(1.0,)),
    group_cnt=tg.attr(1),
    exponential_average_factor=tg.attr(0.1, runtime=True),
    epsilon=tg.attr(1e-5),
    alpha=tg.attr(1.0, runtime=True, special=(1.0,)),
    beta=tg.attr(0.0, runtime=True, special=(0.0,)),
):
    """y = act(γ x̂ + β (+ z)), blended. group_cnt = 1 is batch_norm_forward_training(_ex)."""
    if group_cnt == 1:
        return batch_norm_training(x, bn_scale, bn_bias, running_mean, running_variance, _bn_mode(mode),
                                   exponential_average_factor, epsilon, alpha, beta, z, AS_BN_OPS[norm_ops],
                                   activation, coef)
    groups = _Groups(x, group_cnt, mode)
    mean, inv = tg.output("save_mean"), tg.output("save_inv_variance")
    _group_stats(x, groups, epsilon, mean, inv)

    def result(n, c, *p):
        g = groups.of(c)
        pre = (groups.param(bn_scale, n, c, *p) * (x[(n, c, *p)] - mean[n, g]) * inv[n, g]
               + groups.param(bn_bias, n, c, *p))
        if norm_ops == "norm_add_activation":
            pre = pre + z[(n, c, *p)]
        return _activate(activation, coef, pre) if norm_ops != "norm" else pre

    return blend("y", result, alpha, beta)
