"""The guard build: every op on every target runs with every access bounds-checked and reports
nothing; a real out-of-bounds access is caught and named instead of touching memory."""

import numpy as np
import pytest
from conftest import library_ops

import tilegrad
import tilegrad.dsl as tg
from tilegrad.codegen.launcher import GUARD_CODE_BASE
from tilegrad.dialect import make_context
from tilegrad.inputs import complete_shapes, random_inputs
from tilegrad.kernel import Specialization
from tilegrad.passes.lower_to_llvm import LowerToLLVM, guard_messages

# a small call of every library op: the shapes given, the rest completed as `tilegrad run` does
SMALL_CASES = {
    "activation_backward": ({"x": (2, 3, 4, 5)}, {"mode": "elu"}),
    "batch_norm_backward": ({"x": (2, 3, 4, 5)}, {}),
    "batch_norm_backward_ex": ({"x": (2, 3, 4, 5)}, {"bn_ops": "bn_activation", "activation": "relu"}),
    "batch_norm_forward_training": ({"x": (2, 3, 4, 5)}, {}),
    "batch_norm_forward_training_ex": ({"x": (2, 3, 4, 5)}, {}),
    "binary_cross_entropy_grad": ({"input_x": (37,)}, {}),
    "divisive_normalization_backward": ({"x": (2, 3, 5, 6)}, {"lrn_n": 3}),
    "dropout_backward": ({"dy": (2, 3, 4, 5)}, {"dropout": 0.3}),
    "embedding_dense_backward": ({"grad": (7, 5), "indices": (7,)}, {"num_weights": 6, "scale_grad_by_freq": True}),
    "fused_linear_cross_entropy_loss_grad": ({"input": (6, 5), "weight": (7, 5), "target_mask": (1,)}, {}),
    "lrn_cross_channel_backward": ({"x": (2, 5, 3, 4)}, {}),
    "nll_loss_backward": ({"self": (6, 5)}, {}),
    "normalization_backward": ({"x": (2, 4, 3, 3)}, {"group_cnt": 2}),
    "normalization_forward_training": ({"x": (2, 4, 3, 3)}, {}),
    "pooling_backward": ({"x": (2, 3, 7, 6), "dy": (2, 3, 4, 3)}, {"window": (3, 2), "stride": (2, 2),
                                                                    "padding": (1, 0)}),
    "softmax_backward": ({"y": (2, 3, 4, 5)}, {}),
    "spatial_tf_grid_generator_backward": ({"dgrid": (2, 4, 5, 2)}, {}),
    "spatial_tf_sampler_backward": ({"x": (2, 3, 5, 6), "grid": (2, 4, 3, 2)}, {}),
}


def small_call(name: str, dtype: str, seed: int = 0) -> tuple[dict, dict]:
    op = tilegrad.get_op(name)
    shapes, attrs = SMALL_CASES[name]
    normalized = {n: s.normalize(n, attrs.get(n, s.default)) for n, s in op.attrs.items()
                  if n in attrs or not s.required}
    full = complete_shapes(op, shapes, {}, normalized)
    return random_inputs(op, full, {"*": dtype}, normalized, np.random.default_rng(seed)), attrs


def op_targets():
    for name in sorted(SMALL_CASES):
        op = tilegrad.get_op(name)
        for target in op.supported_targets():
            dtypes = op.dtypes_on(tilegrad.get_target(target))
            yield name, target, "float32" if "float32" in dtypes else dtypes[0]


def test_every_library_op_has_a_small_case():
    assert sorted(SMALL_CASES) == library_ops()


@pytest.mark.parametrize("name,target,dtype", list(op_targets()))
def test_every_op_on_every_target_in_guard_mode(name, target, dtype):
    arrays, attrs = small_call(name, dtype)
    guarded = tilegrad.compile(name, target, guard=True)(**arrays, **attrs)  # raises on any report
    # the same call untiled on cpu (the tiling must not change the answer beyond rounding)
    plain = tilegrad.compile(name, "cpu", untiled=True, guard=True)(**small_call(name, dtype)[0], **attrs)
    for got, want in zip(*(r if isinstance(r, tuple) else (r,) for r in (guarded, plain))):
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-5, atol=1e-6)


@tg.op(outputs={"out": tg.like("x")}, replace=True)
def guard_add_rows(x=tg.tensor("N C"), b=tg.tensor("N")):
    return x + b


@pytest.mark.parametrize("target", ["cpu", "ascend910b"])
def test_guard_catches_an_access_outside_its_buffer(target, monkeypatch):
    """With the shape proof switched off, the guard build is what stands between a kernel and
    memory it must not touch: it reports the buffer, the stage and the index."""
    monkeypatch.setattr(Specialization, "check_shapes", lambda *args: None)
    x = np.ones((2, 1000), np.float32)
    b = np.ones(2, np.float32)
    with pytest.raises(tilegrad.OutOfBoundsError, match=r"guard_add_rows: guard: stage .*b: index \d+ on axis 0"):
        tilegrad.compile("guard_add_rows", target, guard=True)(x=x, b=b)


def test_stages_lowered_apart_keep_their_report_codes_apart():
    """to_llvm lowers each stage as a module of its own: the second stage's reports number on from
    the first's, so none overwrites another and every stage's accesses are named."""
    from tilegrad.pipeline import lower, to_llvm

    op = tilegrad.get_op("divisive_normalization_backward")
    arrays, attrs = small_call(op.name, "float32")
    kernel = tilegrad.compile(op, "cpu", guard=True)
    args, kwargs, _, num_blocks = kernel._split_call((), {**arrays, **attrs})
    binding = op.bind(kernel.target, args, kwargs)
    reports = []
    for after_pass in (None, lambda spec, module: None):  # a module per stage, then one module (`show`)
        lowered = lower(op, binding, kernel.target, num_blocks, op.schedule_hint(kernel.target, binding))
        to_llvm(lowered, guard=True, after_pass=after_pass)
        reports.append(sorted(text for code, text in lowered.messages.items() if code >= GUARD_CODE_BASE))
    assert len(lowered.functions) >= 2 and reports[0] == reports[1]
    assert all(any(f"stage {stage}:" in report for report in reports[0]) for stage in lowered.functions)


def test_guard_pass_on_hand_written_ir():
    from xdsl.parser import Parser

    text = """
    builtin.module {
      func.func @k(%a : memref<?xf32, strided<[1]>> {tg.name = "a", tg.role = "input"},
                   %s : memref<8xi64> {tg.name = "status", tg.role = "status"}) {
        %c = arith.constant 3 : index
        %v = memref.load %a[%c] : memref<?xf32, strided<[1]>>
        func.return
      }
    }
    """
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    LowerToLLVM(guard=True).apply(ctx, module)
    printed = str(module)
    assert 'llvm.icmp "ult"' in printed  # 0 <= 3 < size, one unsigned compare
    assert printed.count("llvm.store") == 4  # the report: code, axis, index, size
    assert "llvm.select" in printed  # the load reads the sink when outside
    assert list(guard_messages(module).values()) == ["guard: stage k: load of a"]
    plain = Parser(ctx, text).parse_module()
    LowerToLLVM().apply(ctx, plain)
    assert "icmp" not in str(plain) and not guard_messages(plain)


@pytest.mark.parametrize("name", sorted(SMALL_CASES))
def test_every_op_on_ascend910b_reads_and_writes_gm_only_through_ub(name):
    """Reductions, windows, gathers and per-row scalars included: the plan counts no direct GM
    access (the tiler refuses a kernel that has one), and the kernel still computes the op."""
    arrays, attrs = small_call(name, "float32")
    kernel = tilegrad.compile(name, "ascend910b")
    report = str(kernel.plan(**arrays, **attrs))
    assert "direct GM accesses: 0" in report
    got = kernel(**{n: a.copy() for n, a in arrays.items()}, **attrs)
    want = tilegrad.compile(name, "cpu", untiled=True)(**{n: a.copy() for n, a in arrays.items()}, **attrs)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        assert (g is None) == (w is None)
        if g is not None:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
