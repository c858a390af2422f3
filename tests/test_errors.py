"""Bad input gets a clear exception naming the argument and the rule."""

import numpy as np
import pytest

import tilegrad
import tilegrad.dsl as tg

x = np.full(16, 0.5, np.float32)
one = np.ones(1, np.float32)
bce = tilegrad.compile("binary_cross_entropy_grad", "cpu")


def test_wrong_shape_names_the_argument():
    with pytest.raises(tilegrad.ShapeError, match="input_y"):
        bce(input_x=x, input_y=np.ones(15, np.float32), dloss=one)
    with pytest.raises(tilegrad.ShapeError, match="dloss.*one element"):
        bce(input_x=x, input_y=x, dloss=np.ones(2, np.float32))
    with pytest.raises(tilegrad.ShapeError, match="dloss.*shape of input_x"):
        bce(input_x=x, input_y=x, dloss=one, reduction="none")


def test_wrong_dtypes():
    with pytest.raises(tilegrad.DTypeError, match="input_x.*int32"):
        bce(input_x=x.astype(np.int32), input_y=x, dloss=one)
    with pytest.raises(tilegrad.DTypeError, match="input_y.*must match"):
        bce(input_x=x, input_y=x.astype(np.float64), dloss=one)
    nll = tilegrad.compile("nll_loss_backward", "cpu")
    with pytest.raises(tilegrad.DTypeError, match="target"):
        nll(grad_output=one, self=np.zeros((4, 3), np.float32), target=np.zeros(4, np.float32), total_weight=one)


def test_unsupported_dtype_on_target_lists_supported():
    import ml_dtypes

    bf = x.astype(ml_dtypes.bfloat16)
    with pytest.raises(tilegrad.UnsupportedError, match="ascend910.*bfloat16.*float32, float16"):
        tilegrad.compile("binary_cross_entropy_grad", "ascend910")(input_x=bf, input_y=bf, dloss=one.astype(bf.dtype))
    with pytest.raises(tilegrad.UnsupportedError, match="ft78ne.*float16"):
        h = x.astype(np.float16)
        tilegrad.compile("binary_cross_entropy_grad", "ft78ne")(input_x=h, input_y=h, dloss=one.astype(np.float16))


def test_unknown_target_op_and_arguments():
    with pytest.raises(tilegrad.UnsupportedError, match="known targets"):
        tilegrad.compile("binary_cross_entropy_grad", "tpu-v9")
    with pytest.raises(tilegrad.UnsupportedError, match="known ops"):
        tilegrad.compile("no_such_op", "cpu")
    with pytest.raises(TypeError, match="unknown argument"):
        bce(input_x=x, input_y=x, dloss=one, wieght=x)
    with pytest.raises(tilegrad.AttributeValueError, match="reduction"):
        bce(input_x=x, input_y=x, dloss=one, reduction="avg")
    with pytest.raises(tilegrad.AttributeValueError, match="num_weights.*required"):
        tilegrad.compile("embedding_dense_backward", "cpu")(grad=np.zeros((2, 3), np.float32),
                                                            indices=np.zeros(2, np.int64))
    with pytest.raises(tilegrad.ShapeError, match="input_y.*required"):
        bce(input_x=x, dloss=one)


def test_output_buffers_are_checked():
    with pytest.raises(tilegrad.ShapeError, match="output 'dx'"):
        bce(input_x=x, input_y=x, dloss=one, dx=np.empty(8, np.float32))
    with pytest.raises(tilegrad.DTypeError, match="output 'dx'"):
        bce(input_x=x, input_y=x, dloss=one, dx=np.empty(16, np.float64))


def register_toy_npu():
    tilegrad.register_target(tilegrad.Target("toy-npu", 2, 256, 32, 32, ("float32",), staged=True,
                                             ub_reserve_bytes=128), replace=True)


def test_ub_overflow_on_a_tiny_target():
    register_toy_npu()
    with pytest.raises(tilegrad.UBCapacityError, match="toy-npu"):
        tilegrad.compile("binary_cross_entropy_grad", "toy-npu")(input_x=x, input_y=x, weight=x, dloss=one)


def test_cli_errors_are_one_line(capsys):
    from tilegrad.cli import main

    assert main(["plan", "binary_cross_entropy_grad", "--target", "nope", "--shape", "input_x=64"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown target 'nope'" in err[0]


def test_targets_by_alias_and_user_target_listing():
    register_toy_npu()  # (the test must not depend on another having run in its process)
    assert tilegrad.get_target("atlas-a2").name == "ascend910b"
    assert tilegrad.get_target("atlas-training").name == "ascend910"
    assert tilegrad.get_target("atlas-inference").name == "ascend310p"
    assert "toy-npu" in tilegrad.list_targets()


def test_outputs_that_alias_inputs_are_refused_and_strided_ones_are_right():
    rng = np.random.default_rng(0)
    xs = rng.uniform(0.1, 0.9, 64).astype(np.float32)
    y = rng.uniform(0, 1, 64).astype(np.float32)
    g = rng.standard_normal(64).astype(np.float32)
    expected = bce(input_x=xs, input_y=y, dloss=g, reduction="none")
    in_place = xs.copy()
    with pytest.raises(tilegrad.ShapeError, match="'dx' overlaps input 'input_x'"):  # SPEC 5: not in place
        bce(input_x=in_place, input_y=y, dloss=g, reduction="none", dx=in_place)
    strided = np.zeros(128, np.float32)[::2]
    bce(input_x=xs, input_y=y, dloss=g, reduction="none", dx=strided)
    np.testing.assert_array_equal(strided, expected)


def test_a_pooling_y_of_another_rank_than_dy_is_a_shape_error_and_the_cli_infers_the_right_one(capsys):
    """y and dy share the shape alternatives ("N C H W", "N C D H W"): a 4-D y with a 5-D dy is
    refused by name (it used to fail while tracing), and `show` given only x and dy picks 5-D y."""
    from tilegrad.cli import main

    pool = tilegrad.compile("pooling_backward", "cpu")
    x5, dy5 = np.zeros((2, 3, 4, 8, 8), np.float32), np.zeros((2, 3, 2, 4, 4), np.float32)
    with pytest.raises(tilegrad.ShapeError, match="'y'.*as many dims as dy"):
        pool(x=x5, dy=dy5, y=np.zeros((2, 3, 4, 4), np.float32), window=(2, 2, 2), stride=(2, 2, 2))
    assert main(["show", "pooling_backward", "--stage", "op", "--shape", "x=2x3x4x8x8", "dy=2x3x2x4x4",
                 "--attr", "mode=max", "window=2,2,2", "stride=2,2,2"]) == 0
    assert 'memref<?x?x?x?x?xf32> {tg.name = "y"' in capsys.readouterr().out


def test_a_max_pooling_window_of_more_cells_than_float32_numbers_exactly_is_refused():
    """Max pooling numbers a window's cells in float32 (its `chosen` temp): exact up to 2^24."""
    pool = tilegrad.compile("pooling_backward", "cpu")
    x, pooled = tilegrad.Spec((1, 1, 4096, 4097), "float32"), tilegrad.Spec((1, 1, 1, 1), "float32")
    with pytest.raises(tilegrad.AttributeValueError, match=r"window=\(4096, 4097\): may hold at most 2\^24 cells"):
        pool.ir("op", x=x, y=pooled, dy=pooled, mode="max", window=(4096, 4097))
    assert "func.func" in pool.ir("op", x=x, y=pooled, dy=pooled, mode="avg_include_padding", window=(4096, 4097))


def test_a_failing_shape_rule_is_the_op_authors_error_naming_the_output():
    @tg.op(outputs={"dx": tg.shaped_by(lambda s, a: (s["dy"][0],), dtype="dy")}, replace=True,
           name="test_bad_shape_rule")
    def bad(dy=tg.tensor("N")):
        return lambda n: dy[n]

    with pytest.raises(tilegrad.DefinitionError, match=r"test_bad_shape_rule: output dx's shape rule .* TypeError"):
        tilegrad.compile("test_bad_shape_rule", "cpu")(dy=np.ones(3, np.float32))
