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
