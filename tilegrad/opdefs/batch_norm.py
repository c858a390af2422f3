"""Batch normalization backward (SPEC 6.6, mcdnnBatchNormalizationBackward[Ex])."""

import tilegrad.dsl as tg
from tilegrad.opdefs.mcdnn import ACTIVATION_MODES, MCDNN_SHAPES, blend

BN_MODES = ("per_activation", "spatial", "spatial_persistent")
PARAM_SHAPES = ("1 C 1 1", "1 C H W", "1 C 1 1 1", "1 C D H W")


def _data_view(shape, attrs):
    """How the kernel sees x and the tensors like it: per_activation as [N, C*H*W], whose sums
    run down the columns; a spatial mode with one position (N x C x 1 x 1, batch norm after a
    linear layer) as [N, C], the same; otherwise as given. As [N, C, 1, 1] each channel's sum
    walked a column one element wide (8192 x 1024: 371 ms where torch takes 18)."""
    rest = range(2, len(shape))
    if attrs["mode"] == "per_activation":
        return ((0,), (1, *rest))
    return ((0,), (1,)) if all(shape[a] == 1 for a in rest) else tuple((a,) for a in range(len(shape)))


def _param_view(shape, attrs):
    """The parameters beside _data_view: per_activation [1, C*H*W], one per column; as given otherwise."""
    if attrs["mode"] == "per_activation":
        return ((0,), tuple(range(1, len(shape))))
    return tuple((a,) for a in range(len(shape)))


def data(**options):
    return tg.tensor(*MCDNN_SHAPES, view=_data_view, **options)


def params(**options):
    return tg.tensor(*PARAM_SHAPES, dtype=tg.params_dtype("x"), view=_param_view, **options)


def _params_fit(shapes, attrs, name) -> bool:
    x, p = shapes["x"], shapes[name]
    if len(p) != len(x):
        return False
    if attrs["mode"] == "per_activation":
        return tuple(p[2:]) == tuple(x[2:])
    return all(d == 1 for d in p[2:])


def _param_rules(names):
    return [tg.rule(lambda s, a, n=n: n not in s or _params_fit(s, a, n),
                    "must be 1xCx1x1 (spatial modes) or 1xCxHxW (per_activation), like x's rank", n) for n in names]


def _activation_slope(mode, coef, y, pre):
    """act'(pre-activation), from the activation's output y where the mode allows it."""
    if mode == "relu":
        return tg.where(y > 0.0, 1.0, 0.0)
    if mode == "clipped_relu":
        return tg.where((y > 0.0) & (y < coef), 1.0, 0.0)
    if mode == "sigmoid":
        return y * (1.0 - y)
    if mode == "tanh":
        return 1.0 - y * y
    if mode == "elu":
        return tg.where(y > 0.0, 1.0, y + coef)
    if mode == "swish":
        s = 1.0 / (1.0 + tg.exp(-(coef * pre)))
        return s + coef * pre * s * (1.0 - s)
    return 1.0


class BatchAxes:
    """What batch normalization reduces over: N and the spatial dims (spatial modes: parameters
    1xCx1x1) or N alone (per_activation: parameters 1xCxHxW). The statistics it keeps are shaped
    like x's parameters (`params`, indexed by `stat_index`); `param_rank` is the rank of the
    parameter tensors where it is not x's (x seen as [N, C] beside 1xCx1x1 ones: _data_view)."""

    def __init__(self, x, per_activation: bool, param_rank: int | None = None):
        self.per_activation = per_activation
        self.batch, self.spatial = x.shape[0], x.shape[2:]
        self.params = (1, x.shape[1], *(self.spatial if per_activation else (1,) * len(self.spatial)))
        self.param_rank = param_rank or x.rank
        self.count = self.batch
        if not per_activation:
            for d in self.spatial:
                self.count = self.count * d

    def stat_index(self, n, c, *p):
        """The element of a statistic (shaped `params`) that x's element (n, c, *p) uses."""
        return (0, c, *(p if self.per_activation else (0,) * len(p)))

    def param_index(self, n, c, *p):
        """The element of a parameter tensor that x's element (n, c, *p) uses."""
        return (0, c, *(p if self.per_activation else (0,) * (self.param_rank - 2)))

    def stat_of(self, k):
        """The statistic's element for a parameter tensor's element k."""
        return k[:len(self.params)]

    SAMPLE = 16
    """Batch entries whose mean is a channel's shift for its one-pass variance."""

    def sample_mean(self, c, p, term):
        """The mean of term over the first SAMPLE entries of the batch (at the first position of
        the spatial dims), for the parameter element (0, c, *p); 0 for an empty batch."""
        entries = tg.minimum(self.batch, self.SAMPLE)
        per = tg.cast(tg.maximum(entries, 1), "f")
        if self.per_activation:
            return tg.reduce_sum(entries, lambda n: term(n, c, *p)) / per
        first = tuple(tg.minimum(d, 1) for d in self.spatial)
        return tg.reduce_sum_over((entries, *first), lambda n, *where: term(n, c, *where)) / per

    def total(self, c, p, term):
        """Σ term(n, c, *position) over the reduced axes, for the parameter element (0, c, *p)."""
        if self.per_activation:
            return tg.reduce_sum(self.batch, lambda n: term(n, c, *p))
        return tg.reduce_sum_over((self.batch, *self.spatial), lambda n, *where: term(n, c, *where))


def batch_norm_gradients(x, dy, bn_scale, saved_mean, saved_inv_variance, mode, epsilon, alpha_data_diff,
                         beta_data_diff, alpha_param_diff, beta_param_diff, slope=None):
    """dβ = Σ dŷ, dγ = Σ dŷ·x̂, dx = γ·invstd/M·(M·dŷ − dβ − x̂·dγ), reduced over N and the spatial
    dims (spatial modes) or over N (per_activation). `slope(index, param_index, x_hat)` makes
    dŷ = dy · slope. Returns (dx, dγ, dβ, dŷ) as element functions."""
    axes = BatchAxes(x, mode == "per_activation", bn_scale.rank)
    params, count, param_index, stat_index, over_batch = (axes.params, axes.count, axes.param_index,
                                                          axes.stat_index, axes.total)
    if saved_mean is not None:
        mean = lambda *i: saved_mean[param_index(*i)]  # noqa: E731
        inv_std = lambda *i: saved_inv_variance[param_index(*i)]  # noqa: E731
    else:
        mean_t = tg.temp("mean", params)
        variance = batch_statistics(x, axes, mean_t)
        mean = lambda *i: mean_t[stat_index(*i)]  # noqa: E731
        inv_t = tg.temp("inv_std", params)
        inv_t.assign(lambda *k: 1.0 / tg.sqrt(variance[k] + epsilon))
        inv_std = lambda *i: inv_t[stat_index(*i)]  # noqa: E731

    def x_hat(*i):
        return (x[i] - mean(*i)) * inv_std(*i)

    def dy_hat(*i):
        return dy[i] if slope is None else dy[i] * slope(i, param_index(*i), x_hat)

    d_beta = tg.temp("d_beta", params)
    d_beta.assign(lambda _, c, *p: over_batch(c, p, dy_hat))
    d_gamma = tg.temp("d_gamma", params)
    d_gamma.assign(lambda _, c, *p: over_batch(c, p, lambda *i: dy_hat(*i) * x_hat(*i)))

    def dx(*i):
        s = stat_index(*i)
        scale = bn_scale[param_index(*i)] * inv_std(*i) / count
        return scale * (count * dy_hat(*i) - d_beta[s] - x_hat(*i) * d_gamma[s])

    return (blend("dx", dx, alpha_data_diff, beta_data_diff),
            blend("d_bn_scale", lambda *k: d_gamma[axes.stat_of(k)], alpha_param_diff, beta_param_diff),
            blend("d_bn_bias", lambda *k: d_beta[axes.stat_of(k)], alpha_param_diff, beta_param_diff),
            dy_hat)


COMMON_RULES = [
    tg.rule(lambda s, a: a["epsilon"] >= 1e-5, "must be at least 1e-5", "epsilon"),
    tg.rule(lambda s, a: ("saved_mean" in s) == ("saved_inv_variance" in s),
            "saved_mean and saved_inv_variance come as a pair: both or neither", "saved_inv_variance"),
    *_param_rules(("bn_scale", "saved_mean", "saved_inv_variance")),
]


@tg.op(
    outputs={"dx": tg.like("x"), "d_bn_scale": tg.like("bn_scale"), "d_bn_bias": tg.like("bn_scale")},
    rules=COMMON_RULES,
)
def batch_norm_backward(
    x=data(),
    dy=data(dtype="x"),
    bn_scale=params(),
    saved_mean=params(optional=True),
    saved_inv_variance=params(optional=True),
    mode=tg.attr("spatial", BN_MODES),
    epsilon=tg.attr(1e-5),
    alpha_data_diff=tg.attr(1.0, runtime=True, special=(1.0,)),
    beta_data_diff=tg.attr(0.0, runtime=True, special=(0.0,)),
    alpha_param_diff=tg.attr(1.0, runtime=True, special=(1.0,)),
    beta_param_diff=tg.attr(0.0, runtime=True, special=(0.0,)),
):
    """Batch norm backward over M = N*H*W (spatial) or N (per_activation) values per parameter:
    x̂ = (x - μ) invstd, dβ = Σ dy, dγ = Σ dy x̂, dx = γ invstd / M (M dy - dβ - x̂ dγ), each blended
    with its alpha/beta. Without the saved pair, μ and invstd are recomputed from x. Half data
    uses float32 parameters."""
    dx, d_scale, d_bias, _ = batch_norm_gradients(
        x, dy, bn_scale, saved_mean, saved_inv_variance, mode, epsilon, alpha_data_diff, beta_data_diff,
        alpha_param_diff, beta_param_diff)
    return dx, d_scale, d_bias


@tg.op(
    outputs={"dx": tg.like("x"), "d_bn_scale": tg.like("bn_scale"), "d_bn_bias": tg.like("bn_scale"),
             "dz": tg.like("x", when=lambda a: a["bn_ops"] == "bn_add_activation")},
    rules=[*COMMON_RULES, *_param_rules(("bn_bias",)),
           tg.rule(lambda s, a: not (a["bn_ops"] == "bn_add_activation" and a["activation"] == "swish"),
                   "swish needs the pre-activation, which bn_add_activation does not keep", "activation")],
)
def batch_norm_backward_ex(
    x=data(),
    y=data(dtype="x"),
    dy=data(dtype="x"),
    bn_scale=params(),
    bn_bias=params(),
    saved_mean=params(optional=True),
    saved_inv_variance=params(optional=True),
    mode=tg.attr("spatial", BN_MODES),
    epsilon=tg.attr(1e-5),
    bn_ops=tg.attr("bn", ("bn", "bn_activation", "bn_add_activation")),
    activation=tg.attr("relu", ACTIVATION_MODES),
    coef=tg.attr(1.0, runtime=True, special=(1.0,)),
    alpha_data_diff=tg.attr(1.0, runtime=True, special=(1.0,)),
    beta_data_diff=tg.attr(0.0, runtime=True, special=(0.0,)),
    alpha_param_diff=tg.attr(1.0, runtime=True, special=(1.0,)),
    beta_param_diff=tg.attr(0.0, runtime=True, special=(0.0,)),
):
    """Ex: y = act(bn(x) (+ z)); dŷ = dy · act'(pre-activation), taken from y (swish recomputes
    bn(x)); dz = dŷ when bn_add_activation (otherwise dz is None: not allocated, not written)."""
    def slope(i, k, x_hat):  # act'(pre-activation); swish recomputes bn(x) = γ x̂ + β
        pre = bn_scale[k] * x_hat(*i) + bn_bias[k] if activation == "swish" else None
        return _activation_slope(activation, coef, y[i], pre)

    dx, d_scale, d_bias, dy_hat = batch_norm_gradients(
        x, dy, bn_scale, saved_mean, saved_inv_variance, mode, epsilon, alpha_data_diff, beta_data_diff,
        alpha_param_diff, beta_param_diff, slope if bn_ops != "bn" else None)
    dz = blend("dz", dy_hat, alpha_data_diff, beta_data_diff) if bn_ops == "bn_add_activation" else None
    return dx, d_scale, d_bias, dz


def _activate(mode, coef, pre):
    if mode == "relu":
        return tg.maximum(pre, 0.0)
    if mode == "clipped_relu":
        return tg.minimum(tg.maximum(pre, 0.0), coef)
    if mode == "sigmoid":
        return 1.0 / (1.0 + tg.exp(-pre))
    if mode == "tanh":
        return tg.tanh(pre)
    if mode == "elu":
        return tg.where(pre > 0.0, pre, coef * (tg.exp(pre) - 1.0))
    if mode == "swish":
        return pre / (1.0 + tg.exp(-(coef * pre)))
    return pre


def batch_statistics(x, axes: BatchAxes, mean):
    """Assign `mean` (shaped axes.params) the mean of x over the batch axes and return a temp of
    its biased variance, both from one sweep of x: Σx, and the sums of d = x - K and d² around K,
    the mean of a few of the channel's values (`BatchAxes.sample_mean`), so that
    var = Σd²/M - (Σd/M)² subtracts a square much smaller than the variance, not one of the
    mean's size. A two-pass variance read x once more (batch norm after a linear layer,
    8192 x 1024: a fifth of its time). With K one sample, the subtraction cost up to 10x the
    two-pass error (4e-6 against 3e-7 of the inverse std, N(0, 1) data); with 16, about the same;
    where the mean is large beside the std, less than two passes (5e-6 against 6.5e-4 at mean 1000,
    std 0.01). An empty batch has mean 0 and variance 0."""
    per = tg.cast(tg.maximum(axes.count, 1), "f")
    shift = tg.temp("shift", axes.params)
    shift.assign(lambda _, c, *p: axes.sample_mean(c, p, lambda *i: x[i]))

    def centered(*i):
        return x[i] - shift[axes.stat_index(*i)]

    centered_sum, centered_squares = tg.temp("centered_sum", axes.params), tg.temp("centered_squares", axes.params)
    centered_sum.assign(lambda _, c, *p: axes.total(c, p, centered))
    centered_squares.assign(lambda _, c, *p: axes.total(c, p, lambda *i: centered(*i) * centered(*i)))
    # (after the centered sums, so that fuse-sibling-loops joins it to their sweep; assigned before
    # them, it fused with the shift's stage instead, a sweep of its own)
    mean.assign(lambda _, c, *p: axes.total(c, p, lambda *i: x[i]) / per)

    def biased(k):  # rounding may leave it just below 0 (a NaN stays)
        value = centered_squares[k] / per - (centered_sum[k] / per) ** 2
        return tg.where(value < 0.0, 0.0, value)

    variance = tg.temp("variance", axes.params)
    variance.assign(lambda *k: biased(k))
    return variance


def batch_norm_training(x, bn_scale, bn_bias, running_mean, running_variance, mode, factor, epsilon, alpha, beta,
                        z=None, bn_ops="bn", activation="identity", coef=1.0):
    """mean and biased variance over N and the spatial dims (spatial) or N (per_activation);
    y = γ x̂ + β (+ z, then the activation), blended; running statistics move by `factor` toward
    the mean and the unbiased variance."""
    axes = BatchAxes(x, mode == "per_activation", bn_scale.rank)
    count, param_index, stat_index = axes.count, axes.param_index, axes.stat_index

    save_mean, save_inv = tg.output("save_mean"), tg.output("save_inv_variance")
    # the sums go where x's element finds them (its statistics are [1, C] where x is seen as
    # [N, C]: a column sum into a 1xCx1x1 output ran 100 ms at 8192 x 1024, into [1, C] 11)
    mean = save_mean if len(axes.params) == bn_scale.rank else tg.temp("mean", axes.params)
    # an empty batch has mean 0 and variance 0, and leaves the running statistics unchanged
    variance = batch_statistics(x, axes, mean)
    if mean is not save_mean:
        save_mean.assign(lambda *k: mean[axes.stat_of(k)])
    save_inv.assign(lambda *k: 1.0 / tg.sqrt(variance[axes.stat_of(k)] + epsilon))
    if running_mean is not None:
        moved = tg.where(count > 0, factor, 0.0)
        running_mean.assign(lambda *k: (1.0 - moved) * running_mean[k] + moved * mean[axes.stat_of(k)])
        unbiased = tg.where(count > 1, tg.cast(count, "f") / tg.cast(tg.maximum(count - 1, 1), "f"), 1.0)
        running_variance.assign(
            lambda *k: (1.0 - moved) * running_variance[k] + moved * variance[axes.stat_of(k)] * unbiased)

    def result(*i):
        k = param_index(*i)
        pre = bn_scale[k] * (x[i] - mean[stat_index(*i)]) * save_inv[k] + bn_bias[k]
        if bn_ops == "bn_add_activation":
            pre = pre + z[i]
        return _activate(activation, coef, pre) if bn_ops != "bn" else pre

    return blend("y", result, alpha, beta)


TRAINING_RULES = [
    tg.rule(lambda s, a: a["epsilon"] >= 1e-5, "must be at least 1e-5", "epsilon"),
    tg.rule(lambda s, a: ("running_mean" in s) == ("running_variance" in s),
            "running_mean and running_variance come as a pair: both or neither", "running_variance"),
    *_param_rules(("bn_scale", "bn_bias", "running_mean", "running_variance")),
]
TRAINING_OUTPUTS = {"y": tg.like("x"), "save_mean": tg.like("bn_scale"), "save_inv_variance": tg.like("bn_scale")}


@tg.op(outputs=TRAINING_OUTPUTS, rules=TRAINING_RULES)
def batch_norm_forward_training(
    x=data(),
    bn_scale=params(),
    bn_bias=params(),
    running_mean=params(optional=True, updated=True),
    running_variance=params(optional=True, updated=True),
    mode=tg.attr("spatial", BN_MODES),
    exponential_average_factor=tg.attr(0.1, runtime=True),
    epsilon=tg.attr(1e-5),
    alpha=tg.attr(1.0, runtime=True, special=(1.0,)),
    beta=tg.attr(0.0, runtime=True, special=(0.0,)),
):
    """Training-mode batch norm: y, the saved mean and inverse std; running statistics (if given)
    are updated in place with the unbiased variance."""
    return batch_norm_training(x, bn_scale, bn_bias, running_mean, running_variance, mode,
                               exponential_average_factor, epsilon, alpha, beta)


@tg.op(outputs=TRAINING_OUTPUTS,
       rules=[*TRAINING_RULES, tg.rule(lambda s, a: a["bn_ops"] != "bn_add_activation" or "z" in s,
                                       "is required by bn_add_activation", "z")])
def batch_norm_forward_training_ex(
    x=data(),
    z=data(dtype="x", optional=True),
    bn_scale=params(),
    bn_bias=params(),
    running_mean=params(optional=True, updated=True),
    running_variance=params(optional=True, updated=True),
    mode=tg.attr("spatial", BN_MODES),
    exponential_average_factor=tg.attr(0.1, runtime=True),
    epsilon=tg.attr(1e-5),
    alpha=tg.attr(1.0, runtime=True, special=(1.0,)),
    beta=tg.attr(0.0, runtime=True, special=(0.0,)),
    bn_ops=tg.attr("bn", ("bn", "bn_activation", "bn_add_activation")),
    activation=tg.attr("relu", ACTIVATION_MODES),
    coef=tg.attr(1.0, runtime=True, special=(1.0,)),
):
    """Ex: y = act(bn(x) (+ z))."""
    return batch_norm_training(x, bn_scale, bn_bias, running_mean, running_variance, mode,
                               exponential_average_factor, epsilon, alpha, beta, z, bn_ops, activation, coef)
