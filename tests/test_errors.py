"""Bad input gets a clear exception naming the argument and the rule."""

import dataclasses

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


def _target(**fields) -> tilegrad.Target:
    figures = dict(name="test-bounds", cores=2, ub_bytes=4096, ub_align=32, vector_bytes=32, dtypes=("float32",),
                   staged=True)
    return tilegrad.Target(**{**figures, **fields})


@pytest.mark.parametrize("fields, message", [
    (dict(cores=2**40), r"cores=1099511627776 must be an integer in \[1, 4096\]"),  # a call used to never return
    (dict(cores=100000), r"cores=100000 must be an integer in \[1, 4096\]"),  # a bare MemoryError
    (dict(cores=0), r"cores=0 must be"),
    (dict(cores=2.0), r"cores=2.0 must be an integer"),
    (dict(ub_bytes=0), r"ub_bytes=0 must be an integer in \[1, 1073741824\]"),
    (dict(ub_bytes=2**31, cores=1), r"ub_bytes=2147483648 must be"),
    (dict(cores=4096, ub_bytes=1 << 20), r"cores \* ub_bytes = 4096 \* 1048576 must be at most 1073741824"),
    (dict(ub_align=48), r"ub_align=48 must be a power of two"),
    (dict(ub_align=8192), r"ub_align=8192 must be an integer in \[1, 4096\]"),
    (dict(vector_bytes=100), r"vector_bytes=100 must be a power of two"),
    (dict(ub_reserve_bytes=-1), r"ub_reserve_bytes=-1 must be"),
    (dict(stream_store_bytes=-1), r"stream_store_bytes=-1 must be"),
    (dict(vector_registers=1000), r"vector_registers=1000 must be an integer in \[1, 64\]"),
    (dict(compute_bound_ops=0), r"compute_bound_ops=0 must be"),
    (dict(core_mask_option=True, cores=63), r"core_mask covers at most 62 cores, not cores=63"),
    (dict(staged=1), r"staged=1 must be True or False"),
    (dict(dtypes=("fp16",)), r"dtypes=\('fp16',\) must name one or more of float64"),
    (dict(dtypes=()), r"dtypes=\(\) must name"),
    (dict(aliases="npu"), r"aliases='npu' must be a tuple of strings"),
    (dict(name=""), r"name='' must be a non-empty string"),
])
def test_a_target_field_outside_its_range_is_refused_naming_it(fields, message):
    with pytest.raises(tilegrad.AttributeValueError, match=message):
        _target(**fields)


def test_the_largest_target_runs_and_agrees_with_cpu():
    """CORES_MAX cores on a staged target (one UB each) and on the host: a call returns the cpu answer."""
    from tilegrad.targets import CORES_MAX

    rng = np.random.default_rng(1)
    xs, y = rng.uniform(0.1, 0.9, 5000).astype(np.float32), rng.uniform(0, 1, 5000).astype(np.float32)
    expected = bce(input_x=xs, input_y=y, dloss=one)
    for staged, ub_bytes in ((True, 1024), (False, 1 << 20)):
        target = tilegrad.register_target(_target(name=f"test-{CORES_MAX}-cores-{staged}", cores=CORES_MAX,
                                                  ub_bytes=ub_bytes, staged=staged), replace=True)
        np.testing.assert_allclose(tilegrad.compile("binary_cross_entropy_grad", target)(
            input_x=xs, input_y=y, dloss=one), expected, rtol=1e-6)


def test_register_target_refuses_a_taken_name_or_alias_and_compile_an_unregistered_target():
    register_toy_npu()
    with pytest.raises(tilegrad.AttributeValueError, match="'toy-npu' is already registered.*replace=True"):
        tilegrad.register_target(_target(name="toy-npu"))
    with pytest.raises(tilegrad.AttributeValueError, match="'atlas-a2' is already registered"):
        tilegrad.register_target(_target(name="test-new-npu", aliases=("atlas-a2",)))
    assert "test-new-npu" not in tilegrad.list_targets()
    with pytest.raises(tilegrad.ArgumentError, match="register_target takes a tilegrad.Target, not str"):
        tilegrad.register_target("my-npu")
    with pytest.raises(tilegrad.UnsupportedError, match="'test-unregistered' is not registered.*register_target"):
        tilegrad.compile("binary_cross_entropy_grad", _target(name="test-unregistered"))
    changed = dataclasses.replace(tilegrad.get_target("toy-npu"), cores=3)  # the passes would tile for 2
    with pytest.raises(tilegrad.UnsupportedError, match="'toy-npu' differs from the registered one"):
        tilegrad.compile("binary_cross_entropy_grad", changed)


def _many_attributes_op(count: int) -> str:
    """A user op with `count` runtime attributes: x * (1 + a0 + a1 + ...)."""
    names = [f"a{i}" for i in range(count)]
    attributes = ", ".join(f"{n}=tg.attr(0.0, runtime=True)" for n in names)
    source = f"def test_many_attributes(x=tg.tensor('N'), {attributes}):\n    return x * (1.0 + {' + '.join(names)})\n"
    scope = {"tg": tg}
    exec(source, scope)
    tg.op(outputs={"dx": tg.like("x")}, replace=True)(scope["test_many_attributes"])
    return "test_many_attributes"


def test_a_call_of_more_keywords_than_the_native_path_holds_runs_checked_each_time():
    """70 keywords (the native path holds 64): the call used to run, then raise a bare ValueError
    while binding its signature; now every call is checked and right."""
    from tilegrad.kernel import NATIVE_MAX_KEYWORDS

    count = NATIVE_MAX_KEYWORDS + 6
    k = tilegrad.compile(_many_attributes_op(count), "cpu")
    for value in (0.5, 0.25):
        attrs = {f"a{i}": value for i in range(count)}
        np.testing.assert_allclose(k(x=x, **attrs), x * (1 + value * count), rtol=1e-6)
        assert k._signature_count == 0


def test_unknown_keywords_are_refused_by_name_before_anything_runs():
    out = np.full(16, -1.0, np.float32)
    junk = {f"junk{i}": x for i in range(70)}
    with pytest.raises(tilegrad.ArgumentError, match="unknown argument.*junk0, junk1, junk10"):
        bce(input_x=x, input_y=x, dloss=one, dx=out, **junk)
    np.testing.assert_array_equal(out, -1.0)  # nothing ran


def test_a_workspace_that_cannot_be_made_is_refused_by_name():
    """A workspace size form (from a hand-edited stage, or a user's temp) that comes out negative or
    is too large to allocate is an error naming the workspace, not numpy's negative dimension or a
    bare MemoryError."""
    from tilegrad.kernel import _allocate_workspace

    x = np.zeros((4, 0), np.float32)
    with pytest.raises(tilegrad.ShapeError, match=r"workspace partials: its sizes \(-4,\)"):
        _allocate_workspace("op", "partials", [["sub", 0, ["dim", "x", 0]]], np.float32, {"x": x})
    with pytest.raises(tilegrad.UnsupportedError, match=r"workspace partials of sizes \(4611686018427387904,\)"):
        _allocate_workspace("op", "partials", [1 << 62], np.float32, {"x": x})
    assert _allocate_workspace("op", "partials", [["mul", 2, ["dim", "x", 0]]], np.float32, {"x": x}).shape == (8,)
