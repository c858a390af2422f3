"""The `tilegrad` command line."""

import subprocess
import sys

import pytest

from tilegrad.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_ops_and_targets(capsys):
    code, out, _ = run(capsys, "ops")
    assert code == 0
    for op in ("nll_loss_backward", "embedding_dense_backward", "binary_cross_entropy_grad"):
        assert op in out
    assert "ascend910b[float32,float16,bfloat16]" in out
    code, out, _ = run(capsys, "targets")
    assert code == 0 and "atlas-a2" in out and "196608" in out and "ft78ne" in out


def test_show_every_stage(capsys):
    code, out, _ = run(capsys, "show", "binary_cross_entropy_grad", "--target", "ascend910b", "--stage", "all",
                       "--shape", "input_x=4096")
    assert code == 0
    for stage in ("op", "loops", "tiled", "llvm", "asm"):
        assert f"IR after stage '{stage}'" in out
    assert "tg.compute" in out and "tg.ub_alloc" in out and "define void" in out


def test_show_one_stage_with_dtype_and_attrs(capsys):
    code, out, _ = run(capsys, "show", "nll_loss_backward", "--target", "ft78ne", "--stage", "tiled",
                       "--shape", "self=64x100", "--dtype", "target=int32", "--attr", "reduction=none")
    assert code == 0 and "memref<?xi32" in out and "tg.check" not in out and "tg.copy" in out


def test_plan_and_run_check(capsys):
    code, out, _ = run(capsys, "plan", "binary_cross_entropy_grad", "--target", "ascend910b", "--shape",
                       "input_x=100000")
    assert code == 0 and "block dim 24" in out and "UB used" in out and "double buffered" in out
    code, out, _ = run(capsys, "run", "nll_loss_backward", "--target", "ascend910b", "--shape", "self=64x100",
                       "--check", "--repeat", "2")
    assert code == 0 and "max |error| vs" in out
    error = float(out.split("max |error| vs")[1].split(":")[1].split("(")[0])
    assert error < 1e-5


def test_errors_exit_nonzero_without_traceback(capsys):
    code, _, err = run(capsys, "run", "binary_cross_entropy_grad", "--target", "ft78ne", "--shape", "input_x=64",
                       "--dtype", "float16")
    assert code == 1 and "float16" in err and "Traceback" not in err


def test_console_script_runs():
    result = subprocess.run([sys.executable, "-m", "tilegrad.cli", "targets"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0 and "ascend310p" in result.stdout


@pytest.mark.parametrize("argv", [["bench", "--quick", "binary_cross_entropy_grad"]])
def test_bench_quick(capsys, argv):
    code, out, _ = run(capsys, *argv)
    assert code == 0 and "GB/s" in out and "binary_cross_entropy_grad" in out


def test_bench_rounds_start_with_each_function_in_turn():
    """interleaved_best: after the warm-up, round k starts k functions later, so no form is always
    timed first (where the first of a round ran slower, that was always tilegrad's)."""
    from tilegrad.bench import interleaved_best

    calls = []
    best = interleaved_best({name: (lambda n=name: calls.append(n)) for name in "abc"}, repeat=4)
    assert sorted(best) == ["a", "b", "c"] and all(t >= 0 for t in best.values())
    assert calls == list("abc") + list("abc") + list("bca") + list("cab") + list("abc")


def test_user_ops_work_in_the_cli(capsys, tmp_path, monkeypatch):
    source = tmp_path / "my_ops.py"
    source.write_text(
        "import tilegrad.dsl as tg\n"
        "@tg.op(outputs={'dx': tg.like('x')}, replace=True)\n"
        "def cli_relu_backward(dy=tg.tensor('*S', dtype='x'), x=tg.tensor('*S')):\n"
        "    return tg.where(x > 0, dy, 0.0)\n")
    code, out, _ = run(capsys, "show", "cli_relu_backward", "--load", str(source), "--target", "mt7004",
                       "--stage", "tiled", "--shape", "x=1000")
    assert code == 0 and "tg.ub_alloc" in out
    monkeypatch.setenv("TILEGRAD_OPS", str(source))
    code, out, _ = run(capsys, "ops")
    assert code == 0 and "cli_relu_backward" in out
    code, _, err = run(capsys, "ops", "--load", str(tmp_path / "missing.py"))
    assert code == 1 and "no such file" in err


BAD_ARGUMENTS = [
    (["show", "nll_loss_backward", "--shape", "bogus=64x1000"], "bogus is not a tensor of nll_loss_backward"),
    (["show", "nll_loss_backward", "--shape", "self=64xabc"], "cannot read shape '64xabc'"),
    (["show", "nll_loss_backward", "--shape", "self"], "--shape 'self' must look like name=value"),
    (["show", "nll_loss_backward", "--shape", "self=64x10", "--attr", "ignore_index=abc"],
     "ignore_index must be a number"),
    (["show", "nll_loss_backward", "--shape", "self=64x10", "--attr", "reduction=avg"], "choose one of"),
    (["show", "nll_loss_backward", "--shape", "self=64x10", "--attr", "nosuch=1"], "unknown argument(s) nosuch"),
    (["show", "nll_loss_backward", "--shape", "self=64x10", "--dtype", "nosuch=float32"],
     "--dtype nosuch=float32: nosuch is not a tensor of nll_loss_backward"),
    (["show", "nll_loss_backward", "--shape", "self=64x10", "--dtype", "self=float99"],
     "unknown dtype 'float99'"),
    (["show", "no_such_op"], "unknown op 'no_such_op'"),
    (["show", "nll_loss_backward", "--target", "nosuch", "--shape", "self=4x5"], "unknown target 'nosuch'"),
    (["bench", "no_such_op"], "no benchmark for no_such_op"),
    (["--load", "no_such_module_of_ops", "ops"], "--load no_such_module_of_ops: ModuleNotFoundError"),
    (["--load", "missing_file.py", "ops"], "--load missing_file.py: no such file"),
    (["run", "nll_loss_backward", "--shape", "self=4x5", "--from-ir", "missing.mlir"], "--from-ir missing.mlir"),
]


@pytest.mark.parametrize("argv, message", BAD_ARGUMENTS, ids=[" ".join(a[:4]) for a, _ in BAD_ARGUMENTS])
def test_bad_arguments_get_one_clear_line(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 1
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_argparse_refuses_a_negative_repeat(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "nll_loss_backward", "--shape", "self=4x5", "--repeat", "-1"])
    assert exit_info.value.code == 2 and "is not a count" in capsys.readouterr().err


def test_load_a_module_from_the_current_directory(capsys, tmp_path, monkeypatch):
    (tmp_path / "cli_user_ops_here.py").write_text(
        "import tilegrad.dsl as tg\n\n@tg.op(outputs={'dx': tg.like('x')}, replace=True)\n"
        "def cli_user_op_here(x=tg.tensor('*S')):\n    return x * 2.0\n")
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "--load", "cli_user_ops_here", "ops")
    assert code == 0 and "cli_user_op_here" in out


def test_json_output_of_plan_run_and_bench(capsys):
    import json

    code, out, _ = run(capsys, "plan", "binary_cross_entropy_grad", "--target", "ascend910b",
                       "--shape", "input_x=4096", "--json")
    plan = json.loads(out)
    assert code == 0 and plan["target"] == "ascend910b" and plan["fits"] and plan["buffers"]
    code, out, _ = run(capsys, "run", "binary_cross_entropy_grad", "--shape", "input_x=4096", "--json", "--check",
                       "--repeat", "2")
    result = json.loads(out)
    assert code == 0 and result["repeat"] == 2 and result["check"]["dx"]["max_error"] < 1e-6
    code, out, _ = run(capsys, "bench", "dropout_backward", "--tiny", "--json")
    rows = json.loads(out)
    assert code == 0 and rows and all(r["op"] == "dropout_backward" and r["tilegrad_ms"] > 0 for r in rows)
