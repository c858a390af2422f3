"""The guard build: every op on every target runs with every access bounds-checked and reports
nothing; a real out-of-bounds access is caught and named instead of touching memory."""

import re

import numpy as np
import pytest
from conftest import library_ops
from test_fuzz import Guarded

import tilegrad
import tilegrad.dsl as tg
import tilegrad.pipeline
from tilegrad.abi import GUARD_CODE_BASE
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
    assert printed.count("llvm.store") == 3 * 4  # each report: code, axis, index, size
    assert printed.count("llvm.load %3 : !llvm.ptr -> i64") == 3  # unless a report is there already (the cause)
    assert printed.count("llvm.return") == 3  # the impl's end, its return after a report, the wrapper's
    assert list(guard_messages(module).values()) == [  # the strides the types state, then the load
        "guard: stage k: argument 'a' is passed with stride {value} on axis {axis}, but its type states {limit}",
        "guard: stage k: argument 'status' is passed with stride {value} on axis {axis}, but its type states {limit}",
        "guard: stage k: load of a"]
    assert "overflow" not in printed and "inbounds" not in printed  # nothing that makes poison
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


# ---- edited IR: the guard build contains whatever a given tiled stage does (issue 43, item 5) ----------------

def boxed(values: np.ndarray) -> Guarded:
    """The values in a contiguous buffer with canary bytes on both sides (test_fuzz.Guarded)."""
    box = Guarded(values.shape, values.dtype, strided=False)
    box.array[...] = values
    return box


def run_edited(kernel, text: str, inputs: dict, outputs: dict, guard: bool = True, **attrs):
    """Run `text` as the kernel's tiled stage on copies of `inputs` and into `outputs` ({name:
    (shape, dtype)}), each inside canaries; every canary must be intact whatever happens. The
    result, or the TilegradError raised."""
    boxes = {name: boxed(np.asarray(a)) for name, a in inputs.items()}
    boxes.update({name: boxed(np.zeros(shape, dtype)) for name, (shape, dtype) in outputs.items()})
    try:
        result = kernel.from_ir("tiled", text, guard=guard)(**{n: b.array for n, b in boxes.items()}, **attrs)
    except tilegrad.TilegradError as err:
        result = err
    assert all(box.intact() for box in boxes.values()), "an edited kernel wrote outside its buffers"
    return result


def bce_call(target: str = "cpu", n: int = 37):
    x = np.linspace(0.1, 0.9, n, dtype=np.float32)
    inputs = dict(input_x=x, input_y=x[::-1].copy(), dloss=np.ones(1, np.float32))
    kernel = tilegrad.compile("binary_cross_entropy_grad", target)
    return kernel, kernel.ir("tiled", **inputs), inputs, {"dx": ((n,), np.float32)}


def before_return(text: str, lines: str) -> str:
    """The text with `lines` (IR, one op a line) added before the first function's return."""
    added = "".join(f"    {line}\n" for line in lines.splitlines())
    return text.replace("    func.return", added + "    func.return", 1)


def test_an_edited_kernel_cannot_write_through_the_status_words():
    kernel, tiled, inputs, outputs = bce_call()
    edited = before_return(tiled, "%gi = arith.constant 9 : index\n%gv = arith.constant 77 : i64\n"
                                  "memref.store %gv, %status[%gi] : memref<8xi64>")
    err = run_edited(kernel, edited, inputs, outputs)
    assert isinstance(err, tilegrad.OutOfBoundsError)
    assert "store of status: index 9 on axis 0 is outside [0, 8)" in str(err)
    # (the kernel's own reports go through the status words, and still work)
    assert not isinstance(run_edited(kernel, tiled, inputs, outputs), Exception)


# The chunked loop's store of dx (the one that runs at n = 37 on cpu), its index replaced by one whose
# arithmetic is undefined in LLVM's terms if lowered naively: a check of a poison index may be folded away.
UNDEFINED_INDICES = {
    "shift by 64": ("%gs = arith.constant 64 : index\n%gx = arith.shli %117, %gs : index\n"
                    "%gk = arith.constant 100000 : index\n%gw = arith.addi %gx, %gk : index",
                    r"arith.shli by 64 bits of a 64-bit integer"),
    "division by zero": ("%gs = arith.constant 0 : index\n%gw = arith.divui %117, %gs : index",
                         r"arith.divui of \d+ by 0"),
    "remainder by zero": ("%gs = arith.constant 0 : index\n%gw = arith.remsi %117, %gs : index",
                          r"arith.remsi of \d+ by 0"),
    "MIN / -1": ("%gm = arith.constant -9223372036854775808 : index\n%gs = arith.constant -1 : index\n"
                 "%gq = arith.divsi %gm, %gs : index\n%gw = arith.addi %gq, %117 : index",
                 r"arith.divsi of -9223372036854775808 by -1"),
    # i + MAX wraps for every i > 0; lowered with nsw, LLVM would take `i + MAX > i` as true
    "signed wrap": ("%gs = arith.constant 9223372036854775807 : index\n%gx = arith.addi %117, %gs : index\n"
                    "%gz = arith.cmpi sgt, %gx, %117 : index\n%g1 = arith.constant 100 : index\n"
                    "%gw = arith.select %gz, %117, %g1 : index",
                    r"store of dx: index 100 on axis 0 is outside \[0, 37\)"),
}


@pytest.mark.parametrize("case", sorted(UNDEFINED_INDICES))
def test_undefined_index_arithmetic_is_reported_not_built_on(case):
    kernel, tiled, inputs, outputs = bce_call()
    lines, message = UNDEFINED_INDICES[case]
    store = "memref.store %131, %dx[%117] : memref<?xf32>"
    assert store in tiled
    indent = "\n" + " " * 14
    edited = tiled.replace(store, indent.join([*lines.splitlines(), store.replace("[%117]", "[%gw]")]))
    err = run_edited(kernel, edited, inputs, outputs)
    assert isinstance(err, tilegrad.OutOfBoundsError), err
    assert re.search(message, str(err)), str(err)


def test_a_loop_that_never_ends_is_reported_and_not_run():
    kernel, tiled, inputs, outputs = bce_call()
    step = "%112 = arith.constant 1 : index"  # the step of the chunk's element loop
    assert tiled.count(step) == 1
    err = run_edited(kernel, tiled.replace(step, "%112 = arith.constant 0 : index"), inputs, outputs)
    assert isinstance(err, tilegrad.OutOfBoundsError) and "scf.for with step 0 (it must be at least 1)" in str(err)


@tg.op(outputs={"out": tg.like("x")}, replace=True)
def guard_add_row(x=tg.tensor("N C"), b=tg.tensor("C")):
    return x + b


def test_a_collapse_of_a_strided_memref_is_refused():
    """x is a broadcast row (row stride 0): merging its axes would address N*C elements of a C-element
    array. The lowering merges only axes of an identity layout; the guard build also checks the strides
    passed (an identity-typed view, such as a panel, may be strided)."""
    n, c = 64, 8
    row = boxed(np.arange(c, dtype=np.float32))
    x = np.lib.stride_tricks.as_strided(row.array, (n, c), (0, 4))
    kernel = tilegrad.compile("guard_add_row", "cpu")
    tiled = kernel.ir("tiled", x=x, b=row.array)
    x_type = re.search(r"%x: (memref<\?x\?xf32, strided<\[\?, 1\]>>)", tiled).group(1)
    edited = before_return(tiled, f"%gc = memref.collapse_shape %x [[0, 1]] : {x_type} into memref<?xf32, "
                                  f"strided<[?]>>\n%gi = arith.constant {n * c - 1} : index\n"
                                  f"%gv = memref.load %gc[%gi] : memref<?xf32, strided<[?]>>\n"
                                  f"%g0 = arith.constant 0 : index\nmemref.store %gv, %out[%g0, %g0] : memref<?x?xf32>")
    out = boxed(np.zeros((n, c), np.float32))
    for guard in (True, False):
        with pytest.raises(tilegrad.UnsupportedError, match=r"memref.collapse_shape merges axes of a contiguous "
                                                            r"\(identity-layout\) memref, not of .*%gc = "):
            kernel.from_ir("tiled", edited, guard=guard)(x=x, b=row.array, out=out.array)
    assert row.intact() and out.intact()


def test_the_guard_build_checks_the_strides_a_collapse_merges():
    from xdsl.parser import Parser

    text = """
    builtin.module {
      func.func @k(%a : memref<?x?xf32> {tg.name = "a", tg.role = "input"},
                   %s : memref<8xi64> {tg.name = "status", tg.role = "status"}) {
        %r = memref.collapse_shape %a [[0, 1]] : memref<?x?xf32> into memref<?xf32>
        func.return
      }
    }
    """
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    LowerToLLVM(guard=True).apply(ctx, module)
    assert "guard: stage k: memref.collapse_shape of a: axis {axis} has stride {value}, not {limit} (the axes it " \
           "merges are not contiguous)" in guard_messages(module).values()
    plain = Parser(ctx, text).parse_module()
    LowerToLLVM().apply(ctx, plain)
    assert "icmp" not in str(plain)


@tg.op(outputs={"dscale": tg.shaped(dtype="x")}, replace=True)
def guard_scale_backward(dy=tg.tensor("*S", dtype="x"), x=tg.tensor("*S")):
    """dscale = Σ dy * x: a reduction over cores, whose partials are a workspace."""
    return lambda: tg.reduce_sum(x.numel, lambda r: dy.flat(r) * x.flat(r))


def test_a_workspace_typed_with_other_strides_is_refused_and_checked(monkeypatch):
    dy = np.ones((301, 7), np.float32)
    x = np.full((301, 7), 2.0, np.float32)
    kernel = tilegrad.compile("guard_scale_backward", "cpu")
    tiled = kernel.ir("tiled", dy=dy, x=x)
    cores = kernel.target.cores
    assert f"%partials0: memref<{cores}xf32> {{tg.name = \"partials0\", tg.role = \"workspace\"}}" in tiled
    edited = tiled.replace(f"memref<{cores}xf32>", f"memref<{cores}xf32, strided<[100000]>>")
    outputs = {"dscale": ((), np.float32)}
    for guard in (True, False):  # the argument check: every build
        err = run_edited(kernel, edited, dict(dy=dy, x=x), outputs, guard=guard)
        assert isinstance(err, tilegrad.ArgumentError)
        assert "workspace 'partials0' of the tiled stage given is memref<" in str(err) and "identity" in str(err)
    # a workspace of no size the call can allocate
    err = run_edited(kernel, tiled.replace(f"memref<{cores}xf32>", "memref<?xf32>"), dict(dy=dy, x=x), outputs)
    assert isinstance(err, tilegrad.ArgumentError) and "a dynamic one needs them as tg.shape" in str(err)
    # and the guard build's own check of the strides passed, should the argument check miss one
    monkeypatch.setattr(tilegrad.pipeline, "_check_workspace", lambda *args: None)
    err = run_edited(kernel, edited, dict(dy=dy, x=x), outputs)
    assert isinstance(err, tilegrad.OutOfBoundsError)
    assert "argument 'partials0' is passed with stride 1 on axis 0, but its type states 100000" in str(err)


@pytest.mark.parametrize("guard", [True, False])
def test_stack_buffers_are_bounded_in_every_build(guard):
    """64 MiB of stack overflowed the 8 MiB stack the kernel ran on (a crash); a buffer allocated in a
    loop took more stack at every iteration."""
    kernel, tiled, inputs, outputs = bce_call()
    big = before_return(tiled, "%gbig = memref.alloca() : memref<16777216xf32>\n%g0 = arith.constant 0 : index\n"
                               "%gv = memref.load %gbig[%g0] : memref<16777216xf32>\n"
                               "memref.store %gv, %dx[%g0] : memref<?xf32>")
    err = run_edited(kernel, big, inputs, outputs, guard=guard)
    assert isinstance(err, tilegrad.UnsupportedError)
    assert re.search(r"%gbig = memref.alloca\(\) : memref<16777216xf32> \(67108864 bytes\) takes the kernel's "
                     r"stack buffers to \d+ bytes, over the limit of 4194304 bytes \(4 MiB\)", str(err))
    dynamic = before_return(tiled, "%g0 = arith.constant 0 : index\n%gn = memref.dim %input_x, %g0 : memref<?xf32>\n"
                                   "%gd = memref.alloca(%gn) : memref<?xf32>")
    err = run_edited(kernel, dynamic, inputs, outputs, guard=guard)
    assert isinstance(err, tilegrad.UnsupportedError) and "a stack buffer must have a static size" in str(err)
    # 1 MiB in a loop of 1000 iterations: made once (in the function's entry block)
    looped = before_return(tiled, "%g0 = arith.constant 0 : index\n%g1 = arith.constant 1 : index\n"
                                  "%gk = arith.constant 1000 : index\nscf.for %gi = %g0 to %gk step %g1 {\n"
                                  "  %gb = memref.alloca() : memref<262144xf32>\n"
                                  "  %gv = arith.constant 1.0 : f32\n"
                                  "  memref.store %gv, %gb[%gi] : memref<262144xf32>\n}")
    result = run_edited(kernel, looped, inputs, outputs, guard=guard)
    assert not isinstance(result, Exception), result


def test_an_llvm_stage_is_refused_in_the_guard_build(monkeypatch):
    """The guard build checks the accesses lower-to-llvm makes; LLVM IR given as text has its own, so a
    kernel built from it must not say it is a guard build."""
    kernel, _, inputs, outputs = bce_call()
    llvm = kernel.ir("llvm", **inputs)
    with pytest.raises(tilegrad.ArgumentError, match=r"binary_cross_entropy_grad: the guard build cannot check an "
                                                     r"llvm stage given as text .* guard=False"):
        kernel.from_ir("llvm", llvm)
    monkeypatch.setenv("TILEGRAD_GUARD", "1")
    with pytest.raises(tilegrad.ArgumentError, match="cannot check an llvm stage"):
        tilegrad.Kernel("binary_cross_entropy_grad", "cpu", ir_override=("llvm", llvm))
    unchecked = kernel.from_ir("llvm", llvm, guard=False)
    assert not unchecked.guard and "guard" not in repr(unchecked)
    np.testing.assert_allclose(unchecked(**inputs), tilegrad.compile("binary_cross_entropy_grad", "cpu")(**inputs))


def test_an_edited_kernel_refuses_what_would_escape_its_buffers():
    """The other ways out found while fixing the six: each refused with the op, or caught."""
    kernel, tiled, inputs, outputs = bce_call("ascend910b")
    refusals = {  # edit -> (error class, message)
        # a copy between element types moves the bytes of `length` elements of one into the other
        '%gu = tg.ub_alloc %ub[0] "wide" : memref<196608xi8> -> memref<100xf64>\n%g0 = arith.constant 0 : index\n'
        '%gl = memref.dim %dx, %g0 : memref<?xf32>\n'
        'tg.copy "ub_to_gm" %gu[%g0] to %dx[%g0] len %gl : memref<100xf64>, memref<?xf32>':
            (tilegrad.UnsupportedError, r"tg.copy from f64 to f32: a copy moves elements of one type"),
        # a UB buffer inside an input: the verifier bounds its offset by the UB's size only
        '%gu = tg.ub_alloc %input_x[0] "evil" : memref<?xf32> -> memref<100000xf32>':
            (tilegrad.UnsupportedError, r"tg.ub_alloc places a buffer in the function's unified buffer"),
        # a call of a function the module does not define links to whatever the process has of that name
        'func.call @abort() : () -> ()':
            (tilegrad.ArgumentError, r"does not parse or verify: '@abort' could not be found"),
    }
    for edit, (error, message) in refusals.items():
        err = run_edited(kernel, before_return(tiled, edit), inputs, outputs)
        assert isinstance(err, error) and re.search(message, str(err)), (edit, err)
    declared = before_return(tiled, "func.call @abort() : () -> ()").replace(
        "builtin.module {", "builtin.module {\n  func.func private @abort() -> ()", 1)
    err = run_edited(kernel, declared, inputs, outputs)
    assert isinstance(err, tilegrad.ArgumentError) and "only func.func definitions" in str(err)
    # a part that calls itself overflows the stack
    body, end = tiled.rstrip().rsplit("}", 1)
    recursive = body + "  func.func private @loop() {\n    func.call @loop() : () -> ()\n    func.return\n  }\n}" + end
    err = run_edited(kernel, recursive, inputs, outputs)
    assert isinstance(err, tilegrad.ArgumentError) and "calls itself: @loop -> @loop" in str(err)


def test_stages_must_take_the_same_arguments():
    """The driver passes every stage the one argument array, which each stage reads by its own list:
    a stage listing them in another order would read one tensor's pointer as another's size."""
    arrays, attrs = small_call("fused_linear_cross_entropy_loss_grad", "float32")
    kernel = tilegrad.compile("fused_linear_cross_entropy_loss_grad", "cpu")
    tiled = kernel.ir("tiled", **arrays, **attrs)
    header = re.search(r"func.func @(\w+_stage1)\((%grad: [^{]*\{[^}]*\}), ", tiled)
    grad = header.group(2)
    swapped = tiled.replace(header.group(0), f"func.func @{header.group(1)}(")
    swapped = swapped.replace(f"func.func @{header.group(1)}(", f"func.func @{header.group(1)}(", 1)
    first_arg_end = swapped.index("{", swapped.index(f"@{header.group(1)}("))  # after the new first argument
    first_arg_end = swapped.index("}", first_arg_end) + 1
    swapped = swapped[:first_arg_end] + f", {grad}" + swapped[first_arg_end:]
    err = run_edited(kernel, swapped, arrays, {}, **attrs)
    assert isinstance(err, tilegrad.ArgumentError), err
    assert f"stage {header.group(1)} of the tiled stage given takes other arguments" in str(err)


def test_a_panel_from_before_its_matrix_reads_nothing():
    """tg.panel's start is an index too: a negative one pointed the view before the weight matrix."""
    arrays, attrs = small_call("fused_linear_cross_entropy_loss_grad", "float32")
    kernel = tilegrad.compile("fused_linear_cross_entropy_loss_grad", "cpu")
    tiled = kernel.ir("tiled", **arrays, **attrs)
    line = re.search(r"( *)(%panel, %\d+ = tg.panel %weight\[)(%\d+)(,.*)", tiled)
    edited = tiled.replace(line.group(0), f"{line.group(1)}%gneg = arith.constant -4000 : index\n"
                                          f"{line.group(1)}{line.group(2)}%gneg{line.group(4)}")
    err = run_edited(kernel, edited, arrays, {}, **attrs)
    assert isinstance(err, tilegrad.OutOfBoundsError) and "of weight (panel): index" in str(err), err


def test_the_guard_lowering_gives_llvm_nothing_undefined():
    """Hand-written IR with each thing that makes poison or undefined behaviour in LLVM's terms: the
    guard build checks the divisor, the shift amount and the step, drops nnan/ninf, and zeroes the
    stack buffer (a load of uninitialised stack is undef); the plain build keeps its flags."""
    from xdsl.parser import Parser

    text = """
    builtin.module {
      func.func @k(%a : memref<?xf32> {tg.name = "a", tg.role = "input"},
                   %s : memref<8xi64> {tg.name = "status", tg.role = "status"}, %n : index {tg.name = "n"}) {
        %row = memref.alloca() : memref<16xf32>
        %c0 = arith.constant 0 : index
        %q = arith.divui %c0, %n : index
        %h = arith.shli %q, %n : index
        %i = arith.addi %h, %q : index
        scf.for %j = %c0 to %i step %n {
          %v = memref.load %row[%j] : memref<16xf32>
          %w = arith.addf %v, %v fastmath<fast> : f32
          memref.store %w, %row[%j] : memref<16xf32>
        }
        func.return
      }
    }
    """
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    LowerToLLVM(guard=True).apply(ctx, module)
    printed = str(module)
    reports = list(guard_messages(module).values())
    assert [r for r in reports if "argument" not in r and "row" not in r] == [
        "guard: stage k: arith.divui of {value} by {limit} (undefined: a divisor of 0, or MIN / -1)",
        "guard: stage k: arith.shli by {value} bits of a {limit}-bit integer (poison)",
        "guard: stage k: scf.for with step {value} (it must be at least {limit})"]
    assert "llvm.memset" in printed
    assert "nnan" not in printed and "ninf" not in printed and "fastmath<reassoc" in printed
    assert "overflow" not in printed and "inbounds" not in printed
    plain = Parser(ctx, text).parse_module()
    LowerToLLVM().apply(ctx, plain)
    assert "overflow<nsw>" in str(plain) and "fastmath<fast>" in str(plain) and "memset" not in str(plain)
