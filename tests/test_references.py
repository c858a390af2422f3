"""The oracles of `tilegrad run --check` (tilegrad/references.py): every library op has one, torch's
form and the float64 numpy form of its SPEC formula agree across the op's attributes, the library's
kernels agree with them, and a result off by 1% is told apart."""

import json

import numpy as np
import pytest
from conftest import library_ops, torch  # noqa: F401  (skips the module without torch: the torch form is half of it)

import tilegrad
import tilegrad.references as references
from tilegrad.cli import _call_arguments, build_parser, main
from tilegrad.references import compare, consistent_inputs, has_reference, reference, reference_name, tolerance

# (op, --shape, --attr): small calls that exercise what makes each op's formula (a mode, the optional
# tensors, an attribute away from its default)
CASES = [
    ("activation_backward", ["dy=2x3x5x7"], ["mode=elu", "coef=1.5"]),
    ("batch_norm_backward", ["x=4x3x5x6"], []),
    ("batch_norm_backward_ex", ["x=4x3x5x6"], ["bn_ops=bn_add_activation"]),
    ("batch_norm_forward_training", ["x=4x3x5x6", "bn_scale=1x3x5x6"], ["mode=per_activation"]),
    ("batch_norm_forward_training_ex", ["x=4x3x5x6"], ["bn_ops=bn_activation", "activation=swish", "coef=1.5"]),
    ("binary_cross_entropy_grad", ["input_x=1000"], ["reduction=sum"]),
    ("divisive_normalization_backward", ["x=2x3x5x7", "means=2x3x5x7"], ["lrn_n=3", "lrn_alpha=0.5"]),
    ("dropout_backward", ["dy=2x3x6x7"], ["dropout=0.3"]),
    ("embedding_dense_backward", ["grad=4x5x16", "indices=4x5"],
     ["num_weights=10", "padding_idx=3", "scale_grad_by_freq=true"]),
    ("fused_linear_cross_entropy_loss_grad", ["input=37x19", "weight=23x19", "target_mask=5"], []),
    ("lrn_cross_channel_backward", ["x=2x6x5x7"], ["lrn_n=4", "lrn_alpha=0.5"]),  # even n: SPEC's window
    ("nll_loss_backward", ["self=64x100"], ["ignore_index=3"]),
    ("normalization_backward", ["x=3x6x4x5"], ["group_cnt=3", "norm_ops=norm_activation", "activation=tanh"]),
    ("normalization_forward_training", ["x=3x6x4x5"], ["group_cnt=3"]),
    ("pooling_backward", ["x=2x3x9x8", "y=2x3x5x4"], ["window=3,3", "stride=2,2", "padding=1,1"]),
    ("softmax_backward", ["y=2x3x5x7"], ["algorithm=log"]),
    ("spatial_tf_grid_generator_backward", ["dgrid=2x5x7x2"], []),
    ("spatial_tf_sampler_backward", ["x=2x3x6x5", "grid=2x4x7x2"], []),
]
SCRATCHPAD = {"fused_linear_cross_entropy_loss_grad", "normalization_backward", "pooling_backward",
              "spatial_tf_sampler_backward"}


def test_every_library_op_has_a_case_and_a_reference():
    assert sorted(op for op, _, _ in CASES) == library_ops()
    assert all(has_reference(op) for op in library_ops())


def cli_call(op: str, shape: list[str], attrs: list[str], seed: int = 0):
    """What `tilegrad run` makes of these arguments: the op, its inputs (saved forward results made
    consistent), the attributes as given and normalized."""
    args = build_parser().parse_args(["run", op, "--shape", *shape, "--attr", *attrs, "--seed", str(seed)])
    opdef, arrays, given = _call_arguments(args)
    normalized = {n: s.normalize(n, given.get(n, s.default)) for n, s in opdef.attrs.items()}
    return opdef, consistent_inputs(op, arrays, normalized), given, normalized


def outputs(opdef, normalized, result) -> dict:
    """The produced outputs by name (a result or a tuple of them; None for one not produced)."""
    results = result if isinstance(result, tuple) else (result,)
    return {n: r for (n, o), r in zip(opdef.outputs.items(), results) if o.when is None or o.when(normalized)}


def run_check(capsys, op, shape, attrs, target):
    code = main(["run", op, "--target", target, "--shape", *shape, "--attr", *attrs, "--check", "--repeat", "0",
                 "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


@pytest.mark.parametrize("op, shape, attrs", CASES, ids=[c[0] for c in CASES])
def test_check_passes_against_torch_and_the_reference_tells_a_wrong_result_apart(capsys, monkeypatch, op, shape,
                                                                                  attrs):
    code, summary, err = run_check(capsys, op, shape, attrs, "cpu")
    assert code == 0 and err == ""
    assert summary["check"] and all(c["reference"] == "torch" and c["passed"] for c in summary["check"].values())
    opdef, arrays, given, normalized = cli_call(op, shape, attrs)
    got = outputs(opdef, normalized, tilegrad.compile(op, "cpu")(**arrays, **given))  # the run's kernel, cached
    want = outputs(opdef, normalized, reference(op, arrays, normalized))
    assert set(summary["check"]) == set(got) == set(want)
    _, (rtol, atol) = tolerance([str(a.dtype) for a in arrays.values()])
    assert any(np.abs(w).max() > 10 * atol for w in want.values())  # not vacuous (a max pool of a random y: 0)
    for name in want:
        assert compare(got[name], want[name], rtol, atol).passed, name
        assert not compare(want[name] * 1.01 + 1e-3, want[name], rtol, atol).passed, name
    monkeypatch.setattr(references, "_torch", lambda: None)  # the float64 numpy form agrees with torch's
    assert reference_name(op, arrays, normalized) == "float64 numpy"
    plain = outputs(opdef, normalized, reference(op, arrays, normalized))
    for name in want:
        assert compare(plain[name], want[name], 1e-7, 1e-9).passed, name


@pytest.mark.parametrize("op, shape, attrs", [c for c in CASES if c[0] in SCRATCHPAD],
                         ids=[c[0] for c in CASES if c[0] in SCRATCHPAD])
def test_check_passes_on_a_scratchpad_target(capsys, op, shape, attrs):
    code, summary, err = run_check(capsys, op, shape, attrs, "ascend910b")
    assert code == 0 and err == ""
    assert all(c["reference"] == "torch" and c["passed"] for c in summary["check"].values())


# (op, --shape, --attr): the attributes and optional tensors of every op, for the two forms to agree on
# (no kernel: the forms only). Each beta-like attribute is set, and each output given a prior value.
BLEND = ["alpha=2", "beta=0.5"]
BN_BLEND = ["alpha_data_diff=2", "beta_data_diff=0.5", "alpha_param_diff=0.5", "beta_param_diff=3"]
ACTIVATIONS = ["sigmoid", "relu", "tanh", "clipped_relu", "elu", "swish", "identity"]
X4, X5 = "x=3x4x5x6", "x=3x4x2x3x4"


def like(given: str, *names: str) -> list[str]:
    """--shape given and the tensors named like it (a 5-D x alone leaves dy 4-D: the first shape
    that binds its dims)."""
    return [given, *(f"{n}={given.split('=')[1]}" for n in names)]


VARIANTS = [
    *[("activation_backward", ["dy=2x3x4x5", "x=2x3x4x5", "y=2x3x4x5"], [f"mode={m}", "coef=1.5", *BLEND])
      for m in ACTIVATIONS],
    ("activation_backward", ["dy=2x3x4x5x2", "x=2x3x4x5x2", "y=2x3x4x5x2"], ["mode=elu", "coef=0.5"]),
    *[("batch_norm_backward", [*like(x, "dy"), *stats], [f"mode={m}", *BN_BLEND])
      for x, p in ((X4, "1x4x5x6"), (X5, "1x4x2x3x4")) for m in ("spatial", "per_activation", "spatial_persistent")
      for stat in [p if m == "per_activation" else "1x4" + "x1" * (p.count("x") - 1)]
      for stats in ([], [f"saved_mean={stat}", f"saved_inv_variance={stat}"])],
    ("batch_norm_backward", ["x=6x5x1x1"], []),
    *[("batch_norm_backward_ex", [X4], [f"bn_ops={ops}", f"activation={a}", "coef=1.5", *BN_BLEND])
      for ops in ("bn", "bn_activation", "bn_add_activation") for a in ACTIVATIONS
      if not (ops == "bn_add_activation" and a == "swish")],
    ("batch_norm_backward_ex", [*like(X5, "dy", "y"), "saved_mean=1x4x1x1x1", "saved_inv_variance=1x4x1x1x1"],
     ["mode=spatial", "bn_ops=bn_activation", "activation=swish"]),
    *[("batch_norm_forward_training", [x, "bn_scale=" + p], [f"mode={m}", "exponential_average_factor=0.2",
                                                           "epsilon=1e-3", *BLEND])
      for x, p, m in ((X4, "1x4x1x1", "spatial"), (X4, "1x4x5x6", "per_activation"), (X5, "1x4x1x1x1", "spatial"))],
    *[("batch_norm_forward_training_ex", [X4, "z=3x4x5x6"], [f"bn_ops={ops}", f"activation={a}", "coef=1.5",
                                                            *BLEND])
      for ops in ("bn", "bn_activation", "bn_add_activation") for a in ACTIVATIONS],
    *[("binary_cross_entropy_grad", ["input_x=7x9", *w], [f"reduction={r}"])
      for r in ("none", "mean", "sum") for w in ([], ["weight=7x9"])],
    *[("divisive_normalization_backward", [x, *m], [f"lrn_n={n}", "lrn_alpha=0.5", "lrn_k=1.5", "lrn_beta=0.6",
                                                    *BLEND])
      for x, m in ((X4, ["means=3x4x5x6"]), (X5, like(X5, "dy")[1:])) for n in (1, 2, 3, 4)],
    *[("dropout_backward", ["dy=2x3x5x7", *r], [f"dropout={p}"]) for p in (0, 0.5, 1)
      for r in ([], ["reserve_space=300"])],
    *[("embedding_dense_backward", ["grad=4x5x16", "indices=4x5"],
       [f"num_weights={n}", f"padding_idx={p}", f"scale_grad_by_freq={s}"])
      for n in (10, 3) for p in (-1, -5, 2) for s in ("true", "false")],
    ("embedding_dense_backward", ["grad=20x8", "indices=20"], ["num_weights=6"]),
    ("fused_linear_cross_entropy_loss_grad", ["input=37x19", "weight=23x19", "target_mask=5"], []),
    ("fused_linear_cross_entropy_loss_grad", ["input=37x19", "weight=23x19", "target_mask=5", "logits_max=37",
                                              "sum_exp_logits=37"], []),
    *[("lrn_cross_channel_backward", x, [f"lrn_n={n}", "lrn_alpha=0.5", "lrn_k=1.5", "lrn_beta=0.6", *BLEND])
      for x in (like("x=2x6x5x7", "dy", "y"), like("x=2x5x3x2x4", "dy", "y")) for n in (1, 2, 3, 5, 8)],
    *[("nll_loss_backward", [self, *w], [f"reduction={r}", f"ignore_index={i}"])
      for self in ("self=16x10", "self=10") for r in ("none", "mean", "sum") for w in ([], ["weight=10"])
      for i in (-100, 3)],
    *[("normalization_backward", [X4, "y=3x4x5x6", "bn_bias=" + p, *stats],
       [f"mode={m}", f"norm_ops={ops}", f"activation={a}", f"group_cnt={g}", *BN_BLEND])
      for m, p in (("per_channel", "1x4x1x1"), ("per_activation", "1x4x5x6"))
      for g in (1, 2) for ops in ("norm", "norm_activation", "norm_add_activation") for a in ("relu", "swish", "elu")
      if not (ops == "norm_add_activation" and a == "swish")
      for stats in ([], [f"saved_mean={'3x2' if g == 2 else p}", f"saved_inv_variance={'3x2' if g == 2 else p}"])],
    *[("normalization_forward_training", [X4, "z=3x4x5x6", "bn_scale=" + p],
       [f"mode={m}", f"norm_ops={ops}", f"activation={a}", f"group_cnt={g}", *BLEND])
      for m, p in (("per_channel", "1x4x1x1"), ("per_activation", "1x4x5x6"))
      for g in (1, 2) for ops in ("norm", "norm_activation", "norm_add_activation") for a in ("relu", "swish")],
    *[("pooling_backward", ["x=2x3x9x8", "y=2x3x5x4"], [f"mode={m}", "window=3,3", "stride=2,2", "padding=1,1",
                                                        *BLEND])
      for m in ("max", "max_deterministic", "avg_include_padding", "avg_exclude_padding")],
    *[("pooling_backward", ["x=1x2x5x6x7", "y=1x2x3x3x7", "dy=1x2x3x3x7"], [f"mode={m}", "window=3,2,3", "stride=2,2,1",
                                                            "padding=1,0,1"])
      for m in ("max", "avg_include_padding", "avg_exclude_padding")],
    ("pooling_backward", ["x=1x2x6x6", "y=1x2x3x3"], ["window=2,2"]),
    *[("softmax_backward", like(y, "dy"), [f"algorithm={a}", f"mode={m}", *BLEND])
      for y in ("y=2x3x5x7", "y=2x3x2x3x4", "y=5x7x1x1") for a in ("fast", "accurate", "log")
      for m in ("instance", "channel")],
    *[("spatial_tf_grid_generator_backward", [f"dgrid={s}x2"], []) for s in ("2x5x7", "1x1x4", "3x4x1")],
    ("spatial_tf_sampler_backward", ["x=2x3x6x5", "grid=2x4x7x2"],
     ["alpha=0.5", "beta=1", "alpha_dgrid=2", "beta_dgrid=-1"]),
    ("spatial_tf_sampler_backward", ["x=1x1x1x4", "grid=1x2x2x2"], []),
]


def test_every_library_op_has_variants():
    assert sorted({op for op, _, _ in VARIANTS}) == library_ops()


def _with_priors(op, arrays, normalized, rng) -> dict:
    """The inputs and a prior value of every output (what blending reads where beta != 0)."""
    first = reference(op, arrays, normalized)
    results = first if isinstance(first, tuple) else (first,)
    names = list(tilegrad.get_op(op).outputs)
    return {**arrays, **{n: rng.standard_normal(np.shape(r)) for n, r in zip(names, results) if r is not None}}


@pytest.mark.parametrize("op, shape, attrs", VARIANTS, ids=[f"{op}-{'-'.join(s + a)}" for op, s, a in VARIANTS])
def test_torch_and_numpy_forms_agree(monkeypatch, op, shape, attrs):
    opdef, arrays, _, normalized = cli_call(op, shape, attrs, seed=len(attrs))
    assert has_reference(op, arrays, normalized)
    arrays = _with_priors(op, arrays, normalized, np.random.default_rng(1))
    # (group norm per activation has no torch form that takes saved statistics: see the test below)
    numpy_only = normalized.get("group_cnt", 1) > 1 and normalized["mode"] == "per_activation" \
        and "saved_mean" in arrays
    assert reference_name(op, arrays, normalized) == ("float64 numpy" if numpy_only else "torch")
    want = outputs(opdef, normalized, reference(op, arrays, normalized))
    monkeypatch.setattr(references, "_torch", lambda: None)
    got = outputs(opdef, normalized, reference(op, arrays, normalized))
    assert set(got) == set(want) and all(w is not None and np.shape(w) == np.shape(got[n]) for n, w in want.items())
    for name in want:
        c = compare(got[name], want[name], 1e-7, 1e-9)
        assert c.passed, (name, c)


def test_blending_reads_the_prior_only_where_beta_is_set():
    opdef, arrays, _, normalized = cli_call("softmax_backward", ["y=2x3x4x5"], ["alpha=2", "beta=0.5"])
    plain = reference("softmax_backward", arrays, {**normalized, "alpha": 1.0, "beta": 0.0})
    prior = np.full(plain.shape, 3.0)
    blended = reference("softmax_backward", {**arrays, "dx": prior}, normalized)
    np.testing.assert_allclose(blended, 2 * plain + 1.5, rtol=1e-12)
    clean = reference("softmax_backward", {**arrays, "dx": np.full(plain.shape, np.nan)},
                      {**normalized, "alpha": 2.0, "beta": 0.0})
    np.testing.assert_allclose(clean, 2 * plain, rtol=1e-12)  # beta = 0: a NaN prior is not read


def test_a_max_pool_whose_y_is_not_the_max_of_x_is_judged_by_the_formula():
    """The op routes a window's dy to its first cell equal to y; torch to the first maximum of x.
    Where y is not the max pool of x, the reference is the numpy form (route by y), and the kernel
    agrees with it (a window whose y matches no cell routes nothing)."""
    op, shape, attrs = next(c for c in CASES if c[0] == "pooling_backward")
    opdef, arrays, given, normalized = cli_call(op, shape, attrs)
    y = arrays["y"].copy()
    y[0, 0, 0, 0] = 99.0  # matches no cell
    y[0, 1, 1, 1] = arrays["x"][0, 1, 1, 1]  # a cell of its window, not the maximum
    changed = {**arrays, "y": y}
    assert reference_name(op, arrays, normalized) == "torch"
    assert reference_name(op, changed, normalized) == "float64 numpy"
    want = reference(op, changed, normalized)
    got = tilegrad.compile(op, "cpu")(**changed, **given)
    assert compare(got, want, 1e-5, 1e-6).passed
    assert not compare(want, reference(op, arrays, normalized), 1e-5, 1e-6).passed


def test_an_elu_whose_y_is_not_of_x_is_judged_by_the_formula():
    opdef, arrays, _, normalized = cli_call("activation_backward", ["dy=2x3x4x5", "x=2x3x4x5", "y=2x3x4x5"],
                                            ["mode=elu"])
    assert reference_name("activation_backward", arrays, normalized) == "torch"  # y = elu(x) (consistent_inputs)
    flipped = {**arrays, "y": -arrays["y"]}
    assert reference_name("activation_backward", flipped, normalized) == "float64 numpy"
    x, y, dy = (flipped[n].astype(np.float64) for n in ("x", "y", "dy"))
    want = np.where(x <= 0, dy * (y + 1), dy)  # SPEC 6.5: masked by x, from y
    np.testing.assert_allclose(reference("activation_backward", flipped, normalized), want)


def test_swish_after_norm_add_activation_is_refused_as_in_batch_norm_backward_ex():
    """Swish's slope needs the pre-activation γ x̂ + β + z, and the backward takes no z: the op
    refuses the combination (as batch_norm_backward_ex does) instead of differentiating without z."""
    shape, attrs = ["x=2x4x3x3", "bn_bias=1x4x1x1"], ["norm_ops=norm_add_activation", "activation=swish"]
    opdef, arrays, _, normalized = cli_call("normalization_backward", shape, ["norm_ops=norm_add_activation"])
    assert has_reference("normalization_backward", arrays, normalized)
    with pytest.raises(tilegrad.TilegradError, match="swish needs the pre-activation"):
        tilegrad.compile("normalization_backward", "cpu")(**arrays, **{**normalized, "activation": "swish"})
    assert main(["run", "normalization_backward", "--shape", *shape, "--attr", *attrs, "--check",
                 "--repeat", "0"]) != 0


def test_group_norm_per_activation_with_saved_statistics_is_the_formula_of_them():
    """No torch form takes saved statistics for group norm per activation (autograd recomputes
    them): given the statistics of x, the numpy form of them agrees with torch's autograd without."""
    shape = ["x=3x4x5x6", "y=3x4x5x6", "bn_scale=1x4x5x6", "bn_bias=1x4x5x6"]
    attrs = ["mode=per_activation", "group_cnt=2", "norm_ops=norm_activation", "activation=swish"]
    opdef, arrays, _, normalized = cli_call("normalization_backward", shape, attrs)
    grouped = arrays["x"].astype(np.float64).reshape(3, 2, -1)
    saved = dict(saved_mean=grouped.mean(-1), saved_inv_variance=1 / np.sqrt(grouped.var(-1) + 1e-5))
    assert reference_name("normalization_backward", {**arrays, **saved}, normalized) == "float64 numpy"
    want = reference("normalization_backward", arrays, normalized)
    assert reference_name("normalization_backward", arrays, normalized) == "torch"
    got = reference("normalization_backward", {**arrays, **saved}, normalized)
    for g, w in zip(got[:3], want[:3]):
        assert compare(g, w, 1e-9, 1e-12).passed


EMPTY = [
    ("batch_norm_backward", ["x=0x3x4x5"], []),
    ("batch_norm_forward_training", ["x=0x3x4x5"], []),
    ("normalization_backward", ["x=0x4x4x5"], ["group_cnt=2"]),
    ("normalization_forward_training", ["x=0x4x4x5"], ["group_cnt=2"]),
    ("softmax_backward", ["y=0x3x4x5"], ["mode=instance"]),
    ("pooling_backward", ["x=0x3x4x4", "y=0x3x2x2"], ["window=2,2"]),
    ("spatial_tf_sampler_backward", ["x=0x3x4x5", "grid=0x2x2x2"], []),
    ("fused_linear_cross_entropy_loss_grad", ["input=0x4", "weight=3x4", "target_mask=0"], []),
]


@pytest.mark.parametrize("op, shape, attrs", EMPTY, ids=[c[0] for c in EMPTY])
def test_an_empty_batch_has_a_reference(monkeypatch, op, shape, attrs):
    """Torch refuses some empty batches (batch norm, pooling): the numpy form answers, shaped as the
    kernel's outputs; an empty batch's statistics are 0 and 1/sqrt(epsilon), as the kernel's."""
    opdef, arrays, _, normalized = cli_call(op, shape, attrs)
    want = outputs(opdef, normalized, reference(op, arrays, normalized))
    monkeypatch.setattr(references, "_torch", lambda: None)
    got = outputs(opdef, normalized, reference(op, arrays, normalized))
    for name, w in want.items():
        assert compare(got[name], w, 1e-7, 1e-9).passed, name
    if op == "batch_norm_forward_training":
        assert np.array_equal(got["save_mean"], np.zeros((1, 3, 1, 1)))
        np.testing.assert_allclose(got["save_inv_variance"], 1 / np.sqrt(1e-5))
