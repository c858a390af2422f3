"""`tilegrad run --check` fails beyond the tolerance; user mistakes on the command line are one-line
errors naming the argument and the rule (exit 1), never an internal error (issue 43)."""

import json

import numpy as np
import pytest

import tilegrad
import tilegrad.references
from tilegrad.cli import main
from tilegrad.dsl.opdef import get_op
from tilegrad.errors import ArgumentError
from tilegrad.passes.tile_for_target import TileForTarget, tiling_plan
from tilegrad.pipeline import parse_ir

USER_OPS = """
import tilegrad.dsl as tg
from tilegrad.references import register_reference

@tg.op(outputs={'dx': tg.like('x')}, replace=True)
def cli_check_right(x=tg.tensor('*S')):
    return x * 2.0

@tg.op(outputs={'dx': tg.like('x')}, replace=True)
def cli_check_broken_reference(x=tg.tensor('*S')):
    return x * 2.0

@tg.op(outputs={'dx': tg.like('x')}, replace=True)
def cli_check_wrong(x=tg.tensor('*S')):
    return x * 3.0

@tg.op(outputs={'dx': tg.like('x')}, replace=True)
def cli_check_nan(x=tg.tensor('*S')):
    return tg.sqrt(x - 2.0)

@tg.op(outputs={'dx': tg.like('x')}, replace=True)
def cli_check_unreferenced(x=tg.tensor('*S')):
    return x * 2.0

@tg.op(outputs={'dx': tg.like('x')}, replace=True)
def cli_check_two_references(x=tg.tensor('*S')):
    return x * 2.0

register_reference('cli_check_right', lambda a, attrs: 2.0 * a['x'])
register_reference('cli_check_wrong', lambda a, attrs: 2.0 * a['x'])
register_reference('cli_check_nan', lambda a, attrs: np.zeros_like(a['x']))
register_reference('cli_check_two_references', lambda a, attrs: (a['x'], a['x']))
register_reference('cli_check_broken_reference', lambda a, attrs: a['no_such_tensor'])
"""


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def user_ops(tmp_path_factory):
    path = tmp_path_factory.mktemp("ops") / "cli_check_ops.py"
    path.write_text("import numpy as np\n" + USER_OPS)
    return str(path)


def one_error_line(err: str) -> str:
    assert err.count("\n") == 1 and "Traceback" not in err and "internal error" not in err, err
    return err


# ---- --check ----------------------------------------------------------------------------------------
def test_check_passes_a_library_op(capsys):
    code, out, err = run(capsys, "run", "binary_cross_entropy_grad", "--shape", "input_x=4096", "--check",
                         "--repeat", "0")
    assert code == 0 and err == ""
    assert "dx: max |error| vs torch" in out and "within |error| <= 1e-05 + 0.0001*|reference| (float32)" in out


def test_check_fails_when_the_result_is_far_from_the_reference(capsys, monkeypatch):
    """The issue's case: an error of 1.35e+295 printed, exit 0. Now exit 1 with one line."""
    monkeypatch.setattr(tilegrad.references, "reference",
                        lambda op, arrays, attrs: np.full(arrays["input_x"].shape, 1.35e295))
    code, out, err = run(capsys, "run", "binary_cross_entropy_grad", "--shape", "input_x=4096", "--check",
                         "--repeat", "0", "--json")
    assert code == 1
    assert one_error_line(err).startswith("tilegrad: error: --check: binary_cross_entropy_grad output dx differs "
                                          "from torch: max |error| 1.35e+295")
    assert "the tolerance is |error| <= 1e-05 + 0.0001*|reference| (float32)" in err
    check = json.loads(out)["check"]["dx"]
    assert check["passed"] is False and check["max_error"] == pytest.approx(1.35e295) and check["rtol"] == 1e-4


def test_check_judges_a_user_op_by_its_registered_reference(capsys, user_ops):
    code, out, err = run(capsys, "--load", user_ops, "run", "cli_check_right", "--shape", "x=1000", "--check",
                         "--repeat", "0")
    assert code == 0 and err == "" and "vs its registered reference: 0 " in out and "within" in out
    code, out, err = run(capsys, "--load", user_ops, "run", "cli_check_wrong", "--shape", "x=1000", "--check",
                         "--repeat", "0")
    assert code == 1 and "BEYOND" in out
    assert ("cli_check_wrong output dx differs from its registered reference: max |error| 1, worst at"
            in one_error_line(err))
    # --tolerance overrides the dtype's: |3x - 2x| = |x| <= 1 + 1*|2x| for every x
    code, out, err = run(capsys, "--load", user_ops, "run", "cli_check_wrong", "--shape", "x=1000", "--tolerance",
                         "1", "--repeat", "0")
    assert code == 0 and err == "" and "within |error| <= 1 + 1*|reference| (--tolerance)" in out


def test_check_fails_on_nan_where_the_reference_is_a_number(capsys, user_ops):
    code, out, err = run(capsys, "--load", user_ops, "run", "cli_check_nan", "--shape", "x=64", "--check",
                         "--repeat", "0")
    assert code == 1 and "max |error| vs its registered reference: nan" in out
    assert "max |error| nan, worst at index" in one_error_line(err) and "nan where the reference is 0" in err
    code, _, err = run(capsys, "--load", user_ops, "run", "cli_check_nan", "--shape", "x=64", "--tolerance",
                       "1e300", "--repeat", "0")
    assert code == 1 and "nan where the reference is 0" in err  # no tolerance lets a NaN through


def test_check_without_a_reference_compares_with_the_untiled_build_and_says_so(capsys, user_ops):
    code, out, err = run(capsys, "--load", user_ops, "run", "cli_check_unreferenced", "--shape", "x=1000",
                         "--check", "--repeat", "0")
    assert code == 0 and err == ""
    assert "vs its untiled float64 cpu build (no reference registered: not an oracle)" in out


def test_check_fails_when_the_reference_gives_another_number_of_outputs(capsys, user_ops):
    code, _, err = run(capsys, "--load", user_ops, "run", "cli_check_two_references", "--shape", "x=8",
                       "--check", "--repeat", "0")
    assert code == 1
    assert ("--check: its registered reference gives 2 output(s), cli_check_two_references 1 (dx)"
            in one_error_line(err))


def test_a_failing_registered_reference_is_the_authors_error(capsys, user_ops):
    code, _, err = run(capsys, "--load", user_ops, "run", "cli_check_broken_reference", "--shape", "x=8", "--check",
                       "--repeat", "0")
    assert code == 1
    assert ("--check: its registered reference of cli_check_broken_reference failed: KeyError: 'no_such_tensor'"
            in one_error_line(err))


def test_tolerance_zero_fails_a_float32_result(capsys):
    code, out, err = run(capsys, "run", "binary_cross_entropy_grad", "--shape", "input_x=4096", "--tolerance", "0",
                         "--repeat", "0")
    assert code == 1 and "the tolerance is |error| <= 0 + 0*|reference| (--tolerance)" in one_error_line(err)


def test_compare_is_mixed_and_nan_aware():
    from tilegrad.references import compare, tolerance

    assert compare([1.0, np.nan, np.inf], [1.0, np.nan, np.inf], 0, 0).passed
    assert not compare([1.0, np.nan], [1.0, 2.0], 1e300, 1e300).passed
    assert not compare([np.inf], [1.0], 1e300, 1e300).passed
    assert compare([101.0], [100.0], 1e-2, 0).passed and not compare([101.0], [100.0], 0, 0.5).passed
    assert not compare(np.zeros(3), np.zeros(4), 1, 1).passed
    assert tolerance(["float32", "int64", "float16"]) == ("float16", (1e-2, 1e-3))
    assert tolerance(["int32"]) == ("float64", (1e-10, 1e-10))


@pytest.mark.parametrize("argv, message", [
    (["--seed", "-1"], "argument --seed: '-1' is not a seed (an integer >= 0)"),
    (["--tolerance", "-1"], "argument --tolerance: '-1' is not a tolerance"),
    (["--tolerance", "nan"], "argument --tolerance: 'nan' is not a tolerance"),
    (["--tolerance", "1,2,3"], "argument --tolerance: '1,2,3' is not a tolerance"),
])
def test_argparse_refuses_a_bad_seed_or_tolerance(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "binary_cross_entropy_grad", "--shape", "input_x=4", *argv])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and message in err and "internal error" not in err


# ---- user mistakes: one line, exit 1 -----------------------------------------------------------------
BAD = [
    (["run", "binary_cross_entropy_grad", "--shape", "input_x=-3x4"],
     "--shape input_x=-3x4: a dim is negative; dims are integers >= 0"),
    (["show", "binary_cross_entropy_grad", "--stage", "op", "--shape", "input_x=99999999999999999999"],
     "--shape input_x=99999999999999999999: 399999999999999999996 bytes of float32; a tensor may span at most "
     "2**63-1 bytes"),
    (["plan", "softmax_backward", "--shape", "y=4294967296x4294967296x1x1"],
     "--shape y=4294967296x4294967296x1x1: 73786976294838206464 bytes of float32"),
    (["plan", "softmax_backward", "--shape", "y=2x4294967296x4294967296x1", "dy=2x3x4x5"],
     "--shape y=2x4294967296x4294967296x1: "),
    (["run", "binary_cross_entropy_grad", "--shape", "input_x=100000x100000x100000"],
     "--shape: the inputs (input_x=100000x100000x100000, input_y=100000x100000x100000, dloss=1) need 1.49e+07 "
     "GiB to make, more than the"),
    (["run", "softmax_backward", "--shape", "y=64x1000"],
     "--shape y=64x1000: softmax_backward's y must have shape [N, C, H, W] or [N, C, D, H, W] (2 dims given)"),
    (["plan", "softmax_backward", "--shape", "y=64x1000x1x1", "dy=64x1000"],
     "--shape dy=64x1000: softmax_backward's dy must have shape"),
]


@pytest.mark.parametrize("argv, message", BAD, ids=[" ".join(a[:4]) for a, _ in BAD])
def test_shape_mistakes_get_one_line(capsys, argv, message):
    code, _, err = run(capsys, *argv)
    assert code == 1 and message in one_error_line(err)


def test_an_inferred_tensor_too_large_is_named_as_inferred(capsys):
    code, _, err = run(capsys, "plan", "nll_loss_backward", "--shape", "self=4611686018427387904x2")
    assert code == 1 and "--shape self=4611686018427387904x2: " in one_error_line(err)


@pytest.mark.parametrize("replace", [True, False])
def test_a_loaded_file_may_not_replace_a_library_op(capsys, tmp_path, replace):
    path = tmp_path / f"redefine_{replace}.py"
    path.write_text("import tilegrad.dsl as tg\n"
                    f"@tg.op(outputs={{'dx': tg.like('y')}}, replace={replace})\n"
                    "def softmax_backward(y=tg.tensor('N,C'), dy=tg.tensor('N,C', dtype='y')):\n"
                    "    return dy * 2.0\n")
    library = get_op("softmax_backward")
    code, _, err = run(capsys, "--load", str(path), "ops")
    assert code == 1
    assert (f"--load {path}: defines op 'softmax_backward', which is a library op; a loaded file may not replace "
            "a library op") in one_error_line(err)
    assert get_op("softmax_backward") is library  # and the library's op is still the one that runs
    code, _, err = run(capsys, "--load", str(path), "ops")  # refused again, not skipped as loaded
    assert code == 1 and "which is a library op" in err


def test_binary_ir_is_not_text_ir(capsys, tmp_path):
    path = tmp_path / "kernel.so"
    path.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(128, 256)))
    code, _, err = run(capsys, "run", "binary_cross_entropy_grad", "--shape", "input_x=64", "--from-ir", str(path))
    assert code == 1 and f"--from-ir {path}: not UTF-8 text IR (byte 8 is 0x80)" in one_error_line(err)
    code, _, err = run(capsys, "opt", str(path))
    assert code == 1 and f"opt {path}: not UTF-8 text IR" in one_error_line(err)


@pytest.mark.parametrize("plan, problem", [
    ('"{broken"', "JSONDecodeError"),
    ('"[1, 2]"', "TypeError"),
    ('"{}"', "KeyError"),
    ("7", "TypeError: it is 7 : i64, not a string"),
])
def test_a_malformed_tiling_plan_is_named(plan, problem):
    module = parse_ir(f"builtin.module attributes {{tg.tiling_plan = {plan}}} {{\n}}\n")
    with pytest.raises(ArgumentError, match=f"the module's tg.tiling_plan attribute is not a tiling plan .*{problem}"):
        tiling_plan(module)


def test_run_from_ir_with_a_malformed_tiling_plan(capsys, tmp_path):
    kernel = tilegrad.compile("binary_cross_entropy_grad", "ascend910b")
    arrays = dict(input_x=tilegrad.Spec((64,)), input_y=tilegrad.Spec((64,)), dloss=tilegrad.Spec((1,)))
    tiled = kernel.ir("tiled", **arrays)
    assert tiled.startswith("builtin.module {")
    path = tmp_path / "tiled.mlir"
    path.write_text(tiled.replace("builtin.module {", 'builtin.module attributes {tg.tiling_plan = "{}"} {', 1))
    code, _, err = run(capsys, "run", "binary_cross_entropy_grad", "--target", "ascend910b", "--shape", "input_x=64",
                       "--from-ir", str(path), "--repeat", "0")
    assert code == 1 and "tg.tiling_plan attribute is not a tiling plan" in one_error_line(err)


@pytest.mark.parametrize("options, message", [
    ("num_blocks=-3", "tile-for-target: num_blocks=-3 must be an integer >= 0"),
    ("tile_sizes=0", "tile_sizes (0,) must be positive"),
    ("whole_axes=-1", "whole_axes -1 must be within"),
])
def test_opt_refuses_bad_tile_for_target_options(capsys, tmp_path, options, message):
    path = tmp_path / "empty.mlir"
    path.write_text("builtin.module {\n}\n")
    code, _, err = run(capsys, "opt", str(path), "-p", f"tile-for-target{{target=cpu {options}}}")
    assert code == 1 and message in one_error_line(err) and "tilegrad's passes:" not in err
    with pytest.raises(ArgumentError, match="num_blocks=-1 must be an integer >= 0"):
        TileForTarget("cpu", -1)


@pytest.mark.parametrize("spec", ["tile-for-target{target=cpu tile_sizes=[128]}", "tile-for-target{target=cpu"])
def test_opt_refuses_a_malformed_pipeline_spec_by_name(capsys, tmp_path, spec):
    """xDSL's ArgSpecParseError is a BaseException: it must still come out as one ArgumentError line."""
    path = tmp_path / "empty.mlir"
    path.write_text("builtin.module {\n}\n")
    code, _, err = run(capsys, "opt", str(path), "-p", spec)
    assert code == 1 and f"pass pipeline {spec!r}" in one_error_line(err)


@pytest.mark.parametrize("op, given", [("normalization_backward", "x=2x4x3x3x3"), ("softmax_backward", "y=2x4x3x3x3")])
def test_shapes_inferred_from_a_5d_tensor_are_5d(capsys, op, given):
    """A tensor left out takes the rank of the given ones where its patterns allow (dy of a 5-D x
    is 5-D, not the first pattern's 4-D), and the run agrees with torch."""
    code, out, err = run(capsys, "run", op, "--shape", given, "--check", "--repeat", "0")
    assert code == 0, err
    assert "vs torch" in out
