"""The `tilegrad` command: ops, targets, show, plan, run, opt, bench, demo."""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.util
import json
import math
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

import tilegrad
from tilegrad.dsl.opdef import OpDef, dtype_leader, get_op
from tilegrad.dtypes import DTYPES
from tilegrad.errors import ArgumentError, DefinitionError, InternalError, ShapeError, TilegradError
from tilegrad.inputs import check_sizes, complete_shapes, input_specs, parse_dims, random_inputs
from tilegrad.references import TOLERANCE
from tilegrad.stages import STAGES


def load_user_ops(source: str, how: str = "--load") -> None:
    """Import a file or module whose @tg.op definitions register user ops (once per process). A
    file may not define an op under a library op's name: the command would run the file's op
    under the library's name, so a `--check` or a benchmark of it would vouch for code it never ran."""
    library = _library_ops()  # loaded first, so a user op of the same name finds the name taken
    path = Path(source)
    module_name = source
    error: Exception | None = None
    try:
        if path.suffix == ".py":
            if not path.exists():
                raise TilegradError(f"{how} {source}: no such file")
            module_name = "tilegrad_user_ops_" + hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
            if module_name in sys.modules:
                return
            spec = importlib.util.spec_from_file_location(module_name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[module_name]
                raise
        else:
            if os.getcwd() not in sys.path and "" not in sys.path:
                sys.path.insert(0, os.getcwd())  # a module in the current directory, as python -m finds it
            importlib.import_module(source)
    except Exception as exc:
        error = exc
    replaced = _restore_library_ops(library)
    taken = replaced[0] if replaced else next(
        (n for n in library if str(error) == f"op {n!r} is already registered (pass replace=True)"), None)
    if taken is not None:
        sys.modules.pop(module_name, None)  # refused: a later load tries (and refuses) it again
        raise DefinitionError(f"{how} {source}: defines op {taken!r}, which is a library op; a loaded file may "
                              f"not replace a library op (give it another name)") from error
    if isinstance(error, TilegradError):
        raise error
    if error is not None:  # the user's file is at fault: say where, as one line
        raise TilegradError(f"{how} {source}: {type(error).__name__}: {error}") from error


def _library_ops() -> dict[str, OpDef]:
    """The library's ops (those tilegrad.opdefs defines), by name."""
    ops = {name: get_op(name) for name in tilegrad.list_ops()}
    return {name: op for name, op in ops.items() if (op.fn.__module__ or "").startswith("tilegrad.opdefs")}


def _restore_library_ops(library: dict[str, OpDef]) -> list[str]:
    """Put back each library op a user file replaced (`replace=True`), and tell the registry's
    hooks (tilegrad.torch points its op back at the library's); the names replaced."""
    from tilegrad.dsl import opdef as registry

    replaced = [name for name, op in library.items() if registry._REGISTRY.get(name) is not op]
    for name in replaced:
        registry._REGISTRY[name] = library[name]
        for hook in registry._REGISTER_HOOKS:
            hook(library[name])
    return replaced


def _pairs(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for item in items or []:
        if "=" not in item:
            raise TilegradError(f"{what} {item!r} must look like name=value")
        key, value = item.split("=", 1)
        out[key] = value
    return out


def _attr_value(text: str):
    if "," in text:  # a tuple: window=3,3
        return tuple(_attr_value(part) for part in text.split(",") if part)
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _call_arguments(args, with_data: bool = True) -> tuple[object, dict, dict]:
    op = get_op(args.op)
    attrs = {k: _attr_value(v) for k, v in _pairs(args.attr, "--attr").items()}
    shapes, symbols = {}, {}
    for key, value in _pairs(args.shape, "--shape").items():
        if key in op.tensors:
            shapes[key] = parse_dims(value, key)
        else:
            try:
                symbols[key] = int(value)
            except ValueError:
                raise ShapeError(f"--shape {key}={value}: {key} is not a tensor of {op.name} "
                                 f"({', '.join(op.tensors)}), and a dim symbol needs an integer") from None
    dtypes = {}
    for item in args.dtype or []:
        key, value = item.split("=", 1) if "=" in item else ("*", item)
        if key != "*" and key not in op.tensors:
            raise ArgumentError(f"--dtype {item}: {key} is not a tensor of {op.name}; its tensors are "
                                f"{', '.join(op.tensors)}")
        if value not in DTYPES:
            raise ArgumentError(f"--dtype {item}: unknown dtype {value!r}; dtypes are {', '.join(DTYPES)}")
        dtypes[key] = value
    normalized = {n: s.normalize(n, attrs.get(n, s.default))
                  for n, s in op.attrs.items() if n in attrs or not s.required}
    given = set(shapes)
    shapes = complete_shapes(op, shapes, symbols, normalized)
    specs = input_specs(op, shapes, dtypes)
    check_sizes(specs, given, allocate=with_data)
    if not with_data:  # showing IR and planning never touch data
        return op, specs, attrs
    arrays = random_inputs(op, shapes, dtypes, normalized, np.random.default_rng(args.seed))
    return op, arrays, attrs


def cmd_ops(args) -> None:
    for name in tilegrad.list_ops():
        op = get_op(name)
        targets = ", ".join(f"{t}[{','.join(op.dtypes_on(tilegrad.get_target(t)))}]" for t in op.supported_targets())
        print(f"{name}\n    {targets}")


def cmd_targets(args) -> None:
    print(f"{'name':<12} {'cores':>5} {'ub_bytes':>9} {'align':>5} {'staged':>6}  dtypes  (aliases)")
    for name in tilegrad.list_targets():
        t = tilegrad.get_target(name)
        note = f"  unverified: {', '.join(t.unverified)}" if t.unverified else ""
        print(f"{t.name:<12} {t.cores:>5} {t.ub_bytes:>9} {t.ub_align:>5} {str(t.staged):>6}  "
              f"{','.join(t.dtypes)}  ({', '.join(t.aliases) or '-'}){note}")


def cmd_show(args) -> None:
    op, arrays, attrs = _call_arguments(args, with_data=False)
    kernel = _kernel(op, args)
    if args.print_pipeline:
        for stage, spec in kernel.pipeline(**arrays, **attrs).items():
            print(f"{stage}: {spec}")
        return
    if args.print_after_each_pass:
        try:
            passes = kernel.ir_after_each_pass(**arrays, **attrs)
        except TilegradError as err:
            _print_passes(getattr(err, "passes", []))
            raise
        _print_passes(passes)
        return
    stages = STAGES if args.stage == "all" else (args.stage,)
    shown = []
    try:
        for stage in stages:
            text = kernel.ir(stage, **arrays, **attrs)
            if len(stages) > 1:
                print(f"// ----- IR after stage {stage!r} -----")
            print(text)
            shown.append(stage)
    except TilegradError as err:  # show what was built before the failure, then say where it failed
        built = {s: t for s, t in getattr(err, "stages", {}).items() if s not in shown}
        for stage, text in built.items():
            print(f"// ----- IR after stage {stage!r} (built before the failure) -----")
            print(text)
        if hasattr(err, "stages"):  # the failure was in the compiler, not in the call's arguments
            print(f"tilegrad: stages built before the failure: {', '.join([*shown, *built]) or 'none'}",
                  file=sys.stderr)
        raise


def _print_passes(passes: list[tuple[str, str]]) -> None:
    for name, text in passes:
        print(f"// ----- IR after {name} -----")
        print(text)


def _schedule(args) -> tuple | None:
    """The directives of --schedule FILE, each checked (ScheduleError names the file and line)."""
    from tilegrad.schedule import parse_schedule

    if args.schedule is None:
        return None
    path = Path(args.schedule)
    if not path.is_file():
        raise ArgumentError(f"--schedule {args.schedule}: no such file")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ArgumentError(f"--schedule {args.schedule}: not UTF-8 text; give directives as `tilegrad plan` "
                            f"prints them, one per line") from None
    return parse_schedule(_schedule_section(text), f"--schedule {args.schedule}")


def _schedule_section(text: str) -> str:
    """A saved `tilegrad plan` output as its `schedule:` section (the indented lines after that
    header), the other lines blanked so errors keep their line numbers; other text as it is."""
    lines = text.splitlines()
    if "schedule:" not in lines:
        return text
    start, kept = lines.index("schedule:") + 1, []
    for number, line in enumerate(lines):
        inside = number >= start and all(ln[:1].isspace() for ln in lines[start:number + 1] if ln)
        kept.append(line if inside else "")
    return "\n".join(kept)


def _kernel(op, args) -> tilegrad.Kernel:
    """The kernel the command runs: the op's (with --schedule's directives), or with one stage read
    from --from-ir."""
    kernel = tilegrad.compile(op, args.target, schedule=_schedule(args), planner=not getattr(args, "no_planner", False))
    source = getattr(args, "from_ir", None)
    if source is None:
        return kernel
    path = Path(source)
    if not path.is_file():
        raise ArgumentError(f"--from-ir {source}: no such file")
    text = _ir_text(path.read_bytes(), f"--from-ir {source}")
    stage = args.from_stage or _stage_of(text)
    return kernel.from_ir(stage, text, guard=not args.no_guard)


def _ir_text(data: bytes, what: str) -> str:
    """IR is text as tilegrad prints it: refuse anything else here, not deep in the parser."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ArgumentError(f"{what}: not UTF-8 text IR (byte {err.start} is {data[err.start]:#04x}); give a stage "
                            f"as `tilegrad show --stage ...` prints it") from None


def _stage_of(text: str) -> str:
    """Which printed stage IR text is: LLVM IR, the tg op stage, a tiled kernel, or loops."""
    if "define " in text and "builtin.module" not in text:
        return "llvm"
    if '"block_id"' in text:
        return "tiled"
    if any(f"tg.{name}" in text for name in ("compute", "scatter_add", "reduce ", "check")):
        return "op"
    return "loops"


def cmd_opt(args) -> None:
    from tilegrad.pipeline import run_passes

    if args.file == "-":
        text, what = _ir_text(sys.stdin.buffer.read(), "opt <stdin>"), "<stdin>"
    else:
        path = Path(args.file)
        if not path.is_file():
            raise ArgumentError(f"opt {args.file}: no such file")
        text, what = _ir_text(path.read_bytes(), f"opt {args.file}"), args.file

    def after(name, module):
        print(f"// ----- IR after {name} -----")
        print(module)

    module = run_passes(text, args.passes, after if args.print_after_each_pass else None, what)
    if args.output:
        Path(args.output).write_text(f"{module}\n")
    elif not args.print_after_each_pass:
        print(module)


def cmd_plan(args) -> int:
    op, arrays, attrs = _call_arguments(args, with_data=False)
    report = _kernel(op, args).plan(**arrays, **attrs, check=False)
    print(json.dumps(asdict(report), indent=1, default=str) if args.json else report)
    if args.svg:
        from tilegrad.plan_svg import render_svg

        Path(args.svg).write_text(render_svg(report))
    if not report.fits:
        raise tilegrad.UBCapacityError(report.error)
    return 0


def cmd_run(args) -> int:
    from tilegrad.references import (
        compare,
        consistent_inputs,
        has_reference,
        reference,
        reference_name,
        tolerance,
        user_references,
    )

    op, arrays, attrs = _call_arguments(args)
    normalized = {n: s.normalize(n, attrs.get(n, s.default))
                  for n, s in op.attrs.items() if n in attrs or not s.required}
    arrays = consistent_inputs(op.name, arrays, normalized)  # e.g. max pooling's y: the max pool of x
    kernel = _kernel(op, args)
    start = time.perf_counter()
    result = kernel(**arrays, **attrs)
    first = time.perf_counter() - start
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        kernel(**arrays, **attrs)
        times.append(time.perf_counter() - start)
    best = min(times) if times else first
    built = f" (the {kernel.ir_override[0]} stage from {args.from_ir}" if kernel.ir_override else ""
    built += ", guard build)" if kernel.ir_override and kernel.guard else ")" if kernel.ir_override else ""
    summary = dict(op=op.name, target=kernel.target.name, first_call_ms=first * 1e3, best_ms=best * 1e3,
                   repeat=len(times), from_ir=args.from_ir, guard=kernel.guard, check={})
    say = (lambda text: None) if args.json else print
    say(f"{op.name} on {args.target}{built}: first call (with compile) {first * 1e3:.2f} ms, "
        f"best of {len(times)} {best * 1e3:.3f} ms")
    failures = []
    if args.check or args.tolerance is not None:
        if not has_reference(op.name, arrays, normalized):  # no oracle: the op's own math, untiled on cpu
            expected, name = _untiled_reference(op, arrays, attrs)
        elif op.name in user_references():
            name = reference_name(op.name)
            try:
                expected = reference(op.name, arrays, normalized)
            except Exception as err:  # the op author's code, not tilegrad's
                raise TilegradError(f"--check: {name} of {op.name} failed: {type(err).__name__}: {err}") from err
        else:
            expected, name = reference(op.name, arrays, normalized), reference_name(op.name, arrays, normalized)
        results = result if isinstance(result, tuple) else (result,)
        expected = expected if isinstance(expected, tuple) else (expected,)
        produced = [n for n, o in op.outputs.items() if o.when is None or o.when(normalized)]
        if len(expected) != len(results):  # a registered reference may return the wrong number: pair none
            failures.append(f"--check: {name} gives {len(expected)} output(s), {op.name} {len(results)} "
                            f"({', '.join(produced)})")
            expected = ()
        floats = [str(a.dtype) for a in arrays.values()]
        for output, got, want in zip(produced, results, expected):
            dtype, (rtol, atol) = tolerance([*floats, str(np.asarray(got).dtype)])
            if args.tolerance is not None:
                dtype, (rtol, atol) = "--tolerance", args.tolerance
            c = compare(got, want, rtol, atol)
            rule = f"|error| <= {atol:g} + {rtol:g}*|reference| ({dtype})"
            summary["check"][output] = dict(max_error=c.max_error, max_reference=c.max_reference, reference=name,
                                            rtol=rtol, atol=atol, passed=c.passed)
            say(f"{output}: max |error| vs {name}: {c.max_error:.3g} (max |reference| {c.max_reference:.3g}); "
                f"{'within' if c.passed else 'BEYOND'} {rule}")
            if not c.passed:
                where = c.problem or (f"max |error| {c.max_error:.3g}, worst at index {list(c.index)}: "
                                      f"{c.got:.9g} where the reference is {c.want:.9g}")
                failures.append(f"--check: {op.name} output {output} differs from {name}: {where}; "
                                f"the tolerance is {rule}")
    if args.json:
        print(json.dumps(summary, indent=1))
    for line in failures:
        print(f"tilegrad: error: {line}", file=sys.stderr)
    return 1 if failures else 0


def _untiled_reference(op, arrays: dict, attrs: dict) -> tuple[object, str]:
    """The op's data tensors widened to float64 (where the op takes float64), run untiled on cpu,
    and what to call it: it checks the tiling and the code, not the formula."""
    wide = "float64" in op.dtypes

    def widened(name, array):
        spec = op.tensors[name]
        follows_data = spec.dtype == "data" or dtype_leader(spec) is not None
        return array.astype(np.float64) if follows_data and wide else array

    converted = {n: widened(n, a) for n, a in arrays.items()}
    result = tilegrad.compile(op, "cpu", untiled=True)(**converted, **attrs)
    return result, f"its untiled {'float64 ' if wide else ''}cpu build (no reference registered: not an oracle)"


def cmd_bench(args) -> None:
    from tilegrad.bench import run_benchmarks, run_user_benchmarks

    if args.plans and not args.user:
        raise ArgumentError("bench: --plans goes with --user (the user ops' plans on ascend910b)")
    if args.user and args.tiny:
        raise ArgumentError("bench: --user has the sizes full and --quick, not --tiny")
    if args.user:
        rows = run_user_benchmarks("quick" if args.quick else "full", args.ops or None, table=not args.json,
                                   plans=args.plans)
    else:
            rows = run_benchmarks(args.ops or None, size="tiny" if args.tiny else "quick" if args.quick else "full",
                              table=not args.json)
    if args.json:  # NaN (no torch or numpy form) is null, so any JSON reader takes it
        print(json.dumps([{k: None if isinstance(v, float) and v != v else v for k, v in row.items()}
                          for row in rows], indent=1))


def cmd_demo(args) -> None:
    from tilegrad.demo import main as demo

    demo()


def _natural(what: str):
    """An argparse type: an integer >= 0, or one line naming `what` it must be."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = -1
        if value < 0:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what} (an integer >= 0)")
        return value

    return parse


def _tolerance(text: str) -> tuple[float, float]:
    """`RTOL` (atol = rtol) or `RTOL,ATOL`: finite numbers >= 0."""
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        values = []
    if len(values) not in (1, 2) or not all(math.isfinite(v) and v >= 0 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r} is not a tolerance (RTOL or RTOL,ATOL: finite numbers >= 0)")
    return values[0], values[-1]


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks")
    common.add_argument("--load", action="append", default=argparse.SUPPRESS, metavar="FILE_OR_MODULE",
                        help="import user op definitions first (also: TILEGRAD_OPS=a.py:pkg.ops)")
    parser = argparse.ArgumentParser(prog="tilegrad", description=__doc__, parents=[common])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("ops", parents=[common], help="list ops with the targets and dtypes each supports").set_defaults(
        fn=cmd_ops)
    sub.add_parser("targets", parents=[common], help="list targets with their figures").set_defaults(fn=cmd_targets)

    def call(name: str, help_: str, fn):
        p = sub.add_parser(name, parents=[common], help=help_)
        p.add_argument("op")
        p.add_argument("--target", default="cpu")
        p.add_argument("--shape", nargs="*", default=[], help="name=64x1000 (tensor) or N=64 (dim symbol)")
        p.add_argument("--dtype", nargs="*", default=[], help="float16 (all data tensors) or name=int32")
        p.add_argument("--attr", nargs="*", default=[], help="k=v")
        p.add_argument("--seed", type=_natural("a seed"), default=0, help="of the random inputs (an integer >= 0)")
        p.add_argument("--schedule", metavar="FILE",
                       help="schedule directives, one per line as `tilegrad plan` prints them (# comments), or a "
                            "saved `tilegrad plan` output (its schedule: section); they replace the op's and the "
                            "planner's for what they name")
        p.add_argument("--no-planner", action="store_true",
                       help="the passes carry out exactly the op's and --schedule's directives and decide nothing "
                            "of their own (a printed plan, edited, runs as it reads)")
        p.set_defaults(fn=fn)
        return p

    show = call("show", "print one stage's IR (--stage all: every stage)", cmd_show)
    show.add_argument("--stage", default="tiled", choices=list(STAGES) + ["all"])
    show.add_argument("--print-after-each-pass", action="store_true",
                      help="the IR after every pass of the pipeline (built afresh)")
    show.add_argument("--print-pipeline", action="store_true",
                      help="each stage's passes, as `tilegrad opt -p` takes them")
    plan = call("plan", "the tiling plan as a table", cmd_plan)
    plan.add_argument("--json", action="store_true", help="the plan as JSON")
    plan.add_argument("--svg", metavar="FILE", help="also draw the core split and each core's UB into FILE")
    run = call("run", "JIT, run on random inputs, time it", cmd_run)
    run.add_argument("--check", action="store_true",
                     help="compare with the reference (torch, float64 numpy or one registered with "
                          "tilegrad.references.register_reference; else the op's untiled cpu build) and exit 1 "
                          "if an element is off by more than atol + rtol*|reference| (mixed); rtol,atol by the "
                          "loosest float dtype of the call: "
                          + "; ".join(f"{d} {r:g},{a:g}" for d, (r, a) in TOLERANCE.items()) + ". NaN matches only NaN")
    run.add_argument("--tolerance", type=_tolerance, metavar="RTOL[,ATOL]",
                     help="--check's tolerance instead of the dtype's (one number: atol = rtol); implies --check")
    run.add_argument("--repeat", type=_natural("a count"), default=10, help="timed calls after the first (>= 0)")
    run.add_argument("--json", action="store_true", help="times and errors as JSON")
    run.add_argument("--from-ir", metavar="FILE", help="a (hand-edited) stage's IR: the pipeline goes on from it")
    run.add_argument("--from-stage", choices=("op", "loops", "tiled", "llvm"),
                     help="which stage --from-ir holds (default: recognized from the text)")
    run.add_argument("--no-guard", action="store_true",
                     help="run --from-ir without the guard build's bounds checks (for timing)")
    opt = sub.add_parser("opt", parents=[common], help="run passes on IR text, as xdsl-opt does")
    opt.add_argument("file", help="an .mlir file (a printed stage), or - for stdin")
    opt.add_argument("-p", "--passes", default="",
                     help="pass1,pass2{option=value}: tilegrad's passes and xDSL's")
    opt.add_argument("-o", "--output", help="write the result here instead of stdout")
    opt.add_argument("--print-after-each-pass", action="store_true")
    opt.set_defaults(fn=cmd_opt)
    bench = sub.add_parser("bench", parents=[common], help="benchmark table vs PyTorch and numpy")
    bench.add_argument("ops", nargs="*", help="ops to time (default all); with --user, cases by label or op "
                       "(a part of it, or a pattern: 'conv2d*')")
    sizes = bench.add_mutually_exclusive_group()
    sizes.add_argument("--quick", action="store_true", help="smaller sizes")
    sizes.add_argument("--tiny", action="store_true", help="tiny inputs: the per-call cost, in microseconds")
    bench.add_argument("--json", action="store_true", help="the rows as JSON instead of the table")
    bench.add_argument("--user", action="store_true",
                       help="the user-op table instead (tilegrad/user_ops.py: backward ops written as a user "
                            "writes them, vs torch's fastest CPU form, with the FMA peak measured beside the "
                            "GEMMs; same as python benchmarks/user_ops.py)")
    bench.add_argument("--plans", action="store_true",
                       help="with --user: also each op's plan on ascend910b (cores busy, element-sized copies)")
    bench.set_defaults(fn=cmd_bench)
    demo = sub.add_parser("demo", parents=[common], help="compile, plan and run the library's ops on two targets")
    demo.set_defaults(fn=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    debug = getattr(args, "debug", False)
    try:
        for source in [s for s in os.environ.get("TILEGRAD_OPS", "").split(os.pathsep) if s]:
            try:
                load_user_ops(source, "TILEGRAD_OPS entry")
            except TilegradError as exc:  # one bad entry must not break every command
                print(f"tilegrad: warning: {exc} (skipped)", file=sys.stderr)
        for source in getattr(args, "load", []):
            load_user_ops(source)
        return args.fn(args) or 0
    except BrokenPipeError:  # the reader went away (`tilegrad show ... | head`)
        sys.stderr.close()
        return 0
    except InternalError as exc:  # a compiler bug: still one line, the traceback with --debug
        if debug:
            raise
        print(f"tilegrad: internal error: {exc} (rerun with --debug)", file=sys.stderr)
        return 2
    except TilegradError as exc:
        if debug:
            raise
        print(f"tilegrad: error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        if debug:
            raise
        print(f"tilegrad: internal error: {type(exc).__name__}: {exc} (rerun with --debug)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
