"""Working on IR text: `tilegrad opt` (every pass of the pipeline, round-tripping each stage), the IR
after each pass, what `show` prints when a stage fails, and running a hand-edited stage."""

import re

import numpy as np
import pytest

import tilegrad
import tilegrad.dsl as tg
from tilegrad.cli import main
from tilegrad.kernel import Spec
from tilegrad.passes.tile_for_target import TileForTarget, tiling_plan
from tilegrad.pipeline import parse_ir, run_passes

ROUND_TRIPS = [
    ("binary_cross_entropy_grad", "ascend910b", dict(input_x=Spec((10000,)), input_y=Spec((10000,)),
                                                      dloss=Spec((1,)))),
    ("softmax_backward", "cpu", dict(y=Spec((4, 8, 5, 5)), dy=Spec((4, 8, 5, 5)))),
    ("pooling_backward", "cpu", dict(y=Spec((2, 3, 4, 4)), dy=Spec((2, 3, 4, 4)), x=Spec((2, 3, 8, 8)),
                                     window=(3, 3), stride=(2, 2), padding=(1, 1))),
    ("embedding_dense_backward", "ascend910", dict(grad=Spec((64, 32)), indices=Spec((64,), "int64"),
                                                   num_weights=100, scale_grad_by_freq=True)),
]


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _without_plan(text: str) -> str:
    module = parse_ir(text)
    tiling_plan(module, keep=False)
    return str(module)


@pytest.mark.parametrize("op, target, call", ROUND_TRIPS, ids=[f"{o}-{t}" for o, t, _ in ROUND_TRIPS])
def test_opt_runs_each_stage_from_the_one_before(op, target, call):
    kernel = tilegrad.compile(op, target)
    pipeline = kernel.pipeline(**call)
    stages = {stage: kernel.ir(stage, **call) for stage in ("op", "loops", "tiled")}
    assert str(run_passes(stages["op"], pipeline["loops"])) == stages["loops"]
    assert _without_plan(str(run_passes(stages["loops"], pipeline["tiled"]))) == stages["tiled"]
    llvm_dialect = str(run_passes(stages["tiled"], pipeline["llvm"]))
    unnamed = llvm_dialect
    for label in ("tg.name", "tg.role", "tg.guard_messages", "tg.interleave_count", "tg.interleaved_store_bytes"):
        unnamed = unnamed.replace(label, "")  # (the loop hints are for the llvmlite conversion: pipeline._convert)
    assert "llvm.func" in llvm_dialect and "tg." not in unnamed


def test_opt_command_with_options_and_print_after_each_pass(capsys, tmp_path):
    call = ROUND_TRIPS[0][2]
    source = tmp_path / "loops.mlir"
    source.write_text(tilegrad.compile("binary_cross_entropy_grad", "ft78ne").ir("loops", **call))
    code, out, _ = run(capsys, "opt", str(source), "-p", "tile-for-target{target=ft78ne num_blocks=4},"
                       "canonicalize", "--print-after-each-pass")
    assert code == 0
    assert "IR after tile-for-target{target=\"ft78ne\" num_blocks=4}" in out and "IR after canonicalize" in out
    assert "tg.ub_alloc" in out and "arith.constant 4 : index" in out
    result = tmp_path / "tiled.mlir"
    code, _, _ = run(capsys, "opt", str(source), "-p", "tile-for-target{target=ft78ne}", "-o", str(result))
    assert code == 0 and "tg.copy" in result.read_text()


def test_opt_refuses_unknown_passes_and_bad_ir(capsys, tmp_path):
    source = tmp_path / "bad.mlir"
    source.write_text("builtin.module { this is not IR }")
    code, _, err = run(capsys, "opt", str(source))
    assert code == 1 and "does not parse or verify" in err
    source.write_text("builtin.module {}")
    code, _, err = run(capsys, "opt", str(source), "-p", "no-such-pass")
    assert code == 1 and "no-such-pass" in err and "tile-for-target" in err
    code, _, err = run(capsys, "opt", str(tmp_path / "missing.mlir"))
    assert code == 1 and "no such file" in err


def test_loop_roles_are_typed_and_a_misspelt_role_does_not_parse(capsys, tmp_path):
    long_rows = dict(y=Spec((2, 2000, 1, 1)), dy=Spec((2, 2000, 1, 1)))  # (a sum of 2000 terms is blocked)
    loops = tilegrad.compile("softmax_backward", "cpu").ir("loops", **long_rows)
    roles = set(re.findall(r"#tg\.loop<(\w+), axis = \d+>", loops))
    assert roles == {"parallel", "reduce", "reduce_part"} and '"parallel"' not in loops
    assert parse_ir(loops).is_structurally_equivalent(parse_ir(str(parse_ir(loops))))
    source = tmp_path / "misspelt.mlir"
    source.write_text(loops.replace("#tg.loop<parallel,", "#tg.loop<paralel,", 1))
    code, _, err = run(capsys, "opt", str(source))
    assert code == 1 and "does not parse or verify" in err


def test_ir_after_each_pass_names_every_pass_in_order():
    call = ROUND_TRIPS[1][2]
    kernel = tilegrad.compile("softmax_backward", "cpu")
    names = [name for name, _ in kernel.ir_after_each_pass(**call)]
    pipeline = kernel.pipeline(**call)
    expected = ["emit"] + [spec for stage in ("loops", "tiled", "llvm") for spec in _split(pipeline[stage])]
    assert names == expected + ["llvmlite conversion and O3"]


def _split(spec: str) -> list[str]:
    return re.findall(r"[\w-]+(?:\{[^}]*\})?", spec)


def test_show_prints_the_stages_built_before_a_failing_pass(capsys, monkeypatch):
    @tg.op(outputs={"dx": tg.like("x")}, replace=True)
    def workflow_failing_op(x=tg.tensor("*S")):
        return x * 3.0

    def broken(self, ctx, module):
        raise RuntimeError("a bug in the tiler")

    monkeypatch.setattr(TileForTarget, "apply", broken)
    code, out, err = run(capsys, "show", "workflow_failing_op", "--stage", "tiled", "--shape", "x=100")
    assert code == 2
    assert "IR after stage 'op'" in out and "IR after stage 'loops'" in out and "tg.compute" in out
    assert "tile-for-target" in err and "a bug in the tiler" in err
    assert "stages built before the failure: op, loops" in err
    code, out, err = run(capsys, "show", "workflow_failing_op", "--print-after-each-pass", "--shape", "x=101")
    assert code == 2 and "IR after fuse-sibling-loops" in out and "tile-for-target" in err


def _bce(x, y, g):
    return g * (x - y) / np.maximum(x * (1 - x), 1e-12) / x.size


def test_a_hand_edited_tiled_kernel_runs(rng):
    n = 24 * 9000  # every core has more than one 7504-element tile
    x = (rng.random(n) * 0.8 + 0.1).astype(np.float32)
    y = rng.random(n).astype(np.float32)
    g = np.array([0.5], np.float32)
    kernel = tilegrad.compile("binary_cross_entropy_grad", "ascend910b")
    tiled = kernel.ir("tiled", input_x=x, input_y=y, dloss=g)
    tile = re.search(r"arith.constant (\d+) : index\n\s+%\d+ = tg.ub_alloc", tiled).group(1)
    smaller = tiled.replace(f"arith.constant {tile} : index", "arith.constant 1000 : index", 1)
    edited = kernel.from_ir("tiled", smaller)
    assert edited.guard and "from IR text" in repr(edited)
    np.testing.assert_allclose(edited(input_x=x, input_y=y, dloss=g), _bce(x, y, g), rtol=1e-5, atol=1e-9)
    assert "arith.constant 1000 : index" in edited.ir("tiled", input_x=x, input_y=y, dloss=g)
    # a tile larger than its UB buffer is caught by the guard build, not written past the buffer
    larger = tiled.replace(f"arith.constant {tile} : index", f"arith.constant {int(tile) + 64} : index", 1)
    with pytest.raises(tilegrad.OutOfBoundsError, match="UB buffer"):
        kernel.from_ir("tiled", larger)(input_x=x, input_y=y, dloss=g)
    # a buffer moved past the end of the unified buffer does not verify
    moved = re.sub(r"tg.ub_alloc %ub\[\d+\] \"dx\"", 'tg.ub_alloc %ub[190000] "dx"', tiled)
    with pytest.raises(tilegrad.ArgumentError, match="unified buffer"):
        kernel.from_ir("tiled", moved)(input_x=x, input_y=y, dloss=g)


def test_run_from_ir_on_the_command_line(capsys, tmp_path):
    code, tiled, _ = run(capsys, "show", "binary_cross_entropy_grad", "--target", "ascend910b",
                         "--shape", "input_x=50000")
    path = tmp_path / "tiled.mlir"
    path.write_text(tiled)
    code, out, err = run(capsys, "run", "binary_cross_entropy_grad", "--target", "ascend910b",
                         "--shape", "input_x=50000", "--from-ir", str(path), "--check", "--repeat", "1")
    assert code == 0, err
    assert "the tiled stage from" in out and "guard build" in out
    error = float(re.search(r"max \|error\| vs [^:]+: ([\d.e+-]+)", out).group(1))
    assert error < 1e-6


def test_an_edited_llvm_stage_runs_or_is_refused():
    x = np.full(100, 0.25, np.float32)
    y = np.zeros(100, np.float32)
    g = np.array([1.0], np.float32)
    kernel = tilegrad.compile("binary_cross_entropy_grad", "cpu")
    llvm = kernel.ir("llvm", input_x=x, input_y=y, dloss=g)
    unchecked = kernel.from_ir("llvm", llvm, guard=False)  # (the guard build cannot check LLVM's accesses)
    np.testing.assert_allclose(unchecked(input_x=x, input_y=y, dloss=g), _bce(x, y, g), rtol=1e-6)
    with pytest.raises(tilegrad.ArgumentError, match="llvm stage given does not compile"):
        kernel.from_ir("llvm", llvm.replace("define ", "defne ", 1), guard=False)(input_x=x, input_y=y, dloss=g)


def _library_ops_on(*targets):
    from test_guard import SMALL_CASES

    return [(name, target) for target in targets for name in sorted(SMALL_CASES)
            if target in tilegrad.get_op(name).supported_targets()]


@pytest.mark.parametrize("name, target", _library_ops_on("cpu", "ascend910b"))
def test_every_pass_leaves_verified_ir_for_every_library_op(monkeypatch, name, target):
    """Every pass of the loops and tiled stages leaves IR that verifies, for every library op on
    each target family's stage table (the suite's other compiles verify each stage as it ends;
    TILEGRAD_VERIFY_EACH_PASS=1 verifies after every pass everywhere). A pass that breaks the IR
    is named (InternalError: the op and the pass). (One test per op: the suite's workers share them.)"""
    from test_guard import small_call

    import tilegrad.pipeline
    from tilegrad.kernel import Kernel

    monkeypatch.setattr(tilegrad.pipeline, "VERIFY_EACH_PASS", True)
    arrays, attrs = small_call(name, "float32")
    kernel = Kernel(name, target)
    args, kwargs, _, blocks = kernel._split_call((), {**arrays, **attrs})
    binding = kernel.op.bind(kernel.target, args, kwargs)
    # (the planner's call-time core split is a scratchpad target's: on cpu the op's hint is the call's)
    hint = kernel.schedule_hint(binding) if target == "cpu" else kernel._hint_for_call(binding, blocks)
    lowered = tilegrad.pipeline.lower(kernel.op, binding, kernel.target, blocks, hint,
                                      sum_lengths=kernel._sum_lengths(binding), keep_ir=False)
    assert lowered.functions, name


@pytest.mark.parametrize("guard", [False, True])
def test_a_compile_verifies_the_tiled_stage_only_in_the_guard_build_or_when_asked(monkeypatch, guard):
    """Verifying the (largest) tiled stage costs as much as lowering it; its passes are verified one
    by one when asked (TILEGRAD_VERIFY_EACH_PASS; for every library op above), and the guard build
    checks everything."""
    from xdsl.dialects.builtin import ModuleOp

    import tilegrad.kernel
    import tilegrad.pipeline

    monkeypatch.setenv("TILEGRAD_CACHE", "0")
    monkeypatch.setattr(tilegrad.kernel, "_SPECIALIZATIONS", {})
    monkeypatch.setattr(tilegrad.pipeline, "VERIFY_EACH_PASS", False)
    verified = []
    real = ModuleOp.verify
    monkeypatch.setattr(ModuleOp, "verify", lambda self: verified.append(str(self)) or real(self))
    x = np.linspace(0.1, 0.9, 100, dtype=np.float32)
    kernel = tilegrad.compile("binary_cross_entropy_grad", "cpu", guard=guard)
    kernel(input_x=x, input_y=x, dloss=np.ones(1, np.float32))
    assert len(verified) == (3 if guard else 2)
    assert "tg.compute" in verified[0] and "tg.compute" not in verified[1]  # the op, then the loops stage


def test_an_edited_stage_whose_arguments_the_op_does_not_have_is_refused(rng):
    """The launcher passes the op's own tensors: an argument renamed, added or retyped in the
    given IR would be passed nothing or another tensor's descriptor (a segfault, found by hand)."""
    x = (rng.random(64) * 0.8 + 0.1).astype(np.float32)
    y = rng.random(64).astype(np.float32)
    g = np.array([0.5], np.float32)
    kernel = tilegrad.compile("binary_cross_entropy_grad", "cpu")
    tiled = kernel.ir("tiled", input_x=x, input_y=y, dloss=g)
    renamed = tiled.replace('tg.name = "input_y"', 'tg.name = "labels"')
    with pytest.raises(tilegrad.ArgumentError, match="'labels'.*does not"):
        kernel.from_ir("tiled", renamed, guard=False)(input_x=x, input_y=y, dloss=g)
    extra = '%extra: memref<?xf32> {tg.name = "extra", tg.role = "temp"}, '
    added = re.sub(r"func.func @(\w+)\(", lambda m: m.group(0) + extra, tiled, count=1)
    with pytest.raises(tilegrad.ArgumentError, match="'extra' \\(temp\\).*does not"):
        kernel.from_ir("tiled", added, guard=False)(input_x=x, input_y=y, dloss=g)
