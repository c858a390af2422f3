"""tilegrad ops as PyTorch custom ops (SPEC section 8); torch is an optional extra.

    import torch, tilegrad.torch      # registers every op of tilegrad.list_ops()
    dx = torch.ops.tilegrad.binary_cross_entropy_grad(input_x=x, input_y=y, dloss=g)
    torch.ops.tilegrad.binary_cross_entropy_grad(input_x=x, input_y=y, dloss=g, dx=buf)   # out=

Each op is defined twice in the `tilegrad` namespace: the functional overload returns new tensors,
the `.out` overload takes every output by keyword, writes it in place and returns it (torch picks
the overload from the keywords given). Arguments are keyword-only, with SPEC's names. CPU tensors
go to the kernel without a copy (numpy views of their memory, any strides tilegrad accepts);
outputs are numpy arrays the kernel wrote, seen as tensors without a copy. `target=` picks the
target whose tiled kernel runs (default "cpu"); an op with an argument named `target`
(nll_loss_backward) takes it as `kernel_target=`. An output a call does not produce (`dz` without
bn_add_activation) is an empty tensor, since torch's schemas have no optional results.

`tilegrad.torch.function(forward, backward, args=..., grads=...)` pairs a forward with a tilegrad
backward as an autograd.Function; backward through a bare `torch.ops.tilegrad.<op>` raises.

Calls that write tensors (`.out`, and ops updating running statistics) run through a hidden
overload in the `_tilegrad` namespace whose schema returns nothing and whose arguments avoid the
keywords `auto_functionalize` takes itself (`mode`), so torch.compile can functionalize them; the
public overloads decompose into it (CompositeImplicitAutograd).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from tilegrad.dsl import opdef as opdefs
from tilegrad.dsl.opdef import AttrSpec, OpDef, get_op, list_ops
from tilegrad.dtypes import dtype_of
from tilegrad.errors import ArgumentError, DefinitionError, DTypeError, UnsupportedError
from tilegrad.kernel import Kernel, Spec
from tilegrad.targets import get_target

NAMESPACE = "tilegrad"
_LIBRARY = torch.library.Library(NAMESPACE, "DEF")
HIDDEN = "_tilegrad"
_HIDDEN_LIBRARY = torch.library.Library(HIDDEN, "DEF")
_RESERVED = {"mode"}
"""Keywords of torch's auto_functionalize: an argument of a mutable op so named reaches it twice."""
_LOCK = threading.RLock()

_TORCH_DTYPES = {
    "float64": torch.float64, "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "int64": torch.int64, "int32": torch.int32, "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8,
    "bool": torch.bool,
}
_DTYPE_NAMES = {v: k for k, v in _TORCH_DTYPES.items()}


class TorchUnsupportedError(UnsupportedError, RuntimeError):
    """A call torch's own ops refuse (autograd through out=, a written tensor whose elements share
    memory, backward through an op with no backward): a TilegradError that torch code catches as the
    RuntimeError torch raises for the same call."""


@dataclass
class Registered:
    """An op as torch sees it: its opdef, the schema torch keeps, the default target."""

    opdef: OpDef
    schema: str
    target: str
    target_keyword: str
    hidden_names: dict[str, str]
    """SPEC's argument name -> the hidden overloads' (`mode` -> `mode_`)."""
    public_names: dict[str, str]
    """The renamed ones back: hidden name -> SPEC's."""
    stale: bool = False
    """The op was redefined with another signature after torch took its schema."""


_REGISTERED: dict[str, Registered] = {}
_KERNELS: dict[tuple[int, str], Kernel] = {}


# ---- schemas -----------------------------------------------------------------------------------
def _default(value) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, tuple):
        return "[" + ",".join(str(int(v)) for v in value) + "]"
    return repr(value)


def _attr_type(name: str, spec: AttrSpec, op: str) -> str:
    if spec.choices:
        kinds = {type(c) for c in spec.choices}
        if kinds == {str}:
            return "str"
        if kinds <= {int}:
            return "int"
        raise DefinitionError(f"{op}: attribute {name!r} mixes choice types {kinds}; torch needs one type")
    kind = spec.default if spec.required else type(spec.default)
    types = {bool: "bool", int: "int", float: "float", tuple: "int[]", str: "str"}
    if kind not in types:
        raise DefinitionError(f"{op}: attribute {name!r} of type {kind.__name__} has no torch schema type")
    return types[kind]


def _schema_arguments(op: OpDef, target_keyword: str, names: dict[str, str], letters) -> list[str]:
    """The inputs, attributes and target of `op` as schema arguments; updated tensors are mutable."""
    arguments = []
    for name, spec in op.tensors.items():
        alias = f"({next(letters)}!)" if spec.updated else ""
        name = names.get(name, name)
        arguments.append(f"Tensor{alias}? {name}=None" if spec.optional else f"Tensor{alias} {name}")
    for name, spec in op.attrs.items():
        kind, name = _attr_type(name, spec, op.name), names.get(name, name)
        arguments.append(f"{kind} {name}" if spec.required else f"{kind} {name}={_default(spec.default)}")
    arguments.append(f"str? {names.get(target_keyword, target_keyword)}=None")
    return arguments


def _results(kinds: list[str]) -> str:
    return kinds[0] if len(kinds) == 1 else "(" + ", ".join(kinds) + ")"


def schemas(op: OpDef) -> tuple[str, str, str]:
    """(functional arguments and results, .out arguments and results, the target's keyword)."""
    target_keyword = "kernel_target" if "target" in op.tensors or "target" in op.attrs else "target"
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    arguments = _schema_arguments(op, target_keyword, {}, letters)
    outputs = list(op.outputs)
    out_aliases = [next(letters) for _ in outputs]
    out_arguments = arguments + [f"Tensor({a}!) {n}" for a, n in zip(out_aliases, outputs)]
    out_result = _results([f"Tensor({a}!)" for a in out_aliases])
    return (f"(*, {', '.join(arguments)}) -> {_results(['Tensor'] * len(outputs))}",
            f"(*, {', '.join(out_arguments)}) -> {out_result}", target_keyword)


def hidden_names(op: OpDef, target_keyword: str) -> dict[str, str]:
    """SPEC's argument names -> the hidden overloads': a reserved one gets underscores until unique."""
    public = [*op.tensors, *op.attrs, target_keyword, *op.outputs]
    taken, names = set(public), {}
    for name in public:
        hidden = name
        while hidden in _RESERVED or (hidden != name and hidden in taken):
            hidden += "_"
        taken.add(hidden)
        names[name] = hidden
    return names


def hidden_schemas(op: OpDef, target_keyword: str, names: dict[str, str]) -> tuple[str, str]:
    """The hidden overloads torch.compile functionalizes: (functional, .out). Their arguments avoid
    _RESERVED, and .out returns nothing (torch cannot functionalize a custom op whose result aliases
    an argument, unless tagged torch.Tag.out, which would hand it empty tensors for the running
    statistics it reads and for the outputs a call leaves unwritten, like dz without bn_add_activation)."""
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    arguments = _schema_arguments(op, target_keyword, names, letters)
    out_arguments = arguments + [f"Tensor({next(letters)}!) {names[n]}" for n in op.outputs]
    return (f"(*, {', '.join(arguments)}) -> {_results(['Tensor'] * len(op.outputs))}",
            f"(*, {', '.join(out_arguments)}) -> ()")


# ---- tensors <-> arrays --------------------------------------------------------------------------
def as_numpy(op: str, name: str, value: torch.Tensor) -> np.ndarray:
    """A CPU tensor's memory as an ndarray (no copy): bfloat16 through int16 and ml_dtypes."""
    if value.device.type != "cpu":
        raise UnsupportedError(f"{op}: tensor {name!r} is on device {value.device}; tilegrad kernels run on "
                               f"the CPU (move it with .cpu())")
    if value.dtype not in _DTYPE_NAMES:
        raise DTypeError(f"{op}: tensor {name!r} has dtype {value.dtype}; tilegrad knows "
                         f"{', '.join(_TORCH_DTYPES)}")
    if value.requires_grad:  # (conj and neg bits exist only for complex dtypes, which tilegrad has not)
        value = value.detach()
    if value.dtype == torch.bfloat16:
        return value.view(torch.int16).numpy().view(dtype_of("bfloat16").numpy)
    return value.numpy()


def as_tensor(array: np.ndarray) -> torch.Tensor:
    """An ndarray the kernel made, as a tensor over the same memory."""
    if array.dtype == dtype_of("bfloat16").numpy:
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def _kernel(op: OpDef, target: str) -> Kernel:
    key = (id(op), target)
    kernel = _KERNELS.get(key)
    if kernel is None:
        kernel = _KERNELS[key] = Kernel(op, target)
    return kernel


# ---- the implementations torch calls -------------------------------------------------------------
def _split(entry: Registered, kwargs: dict) -> tuple[str, dict]:
    """(the target, the call's arguments under SPEC's names): the hidden overloads' names go back."""
    if entry.stale:
        raise DefinitionError(f"op {entry.opdef.name} was redefined with another signature after tilegrad.torch "
                              f"gave torch its schema; torch keeps the first one, so restart or use a new name")
    if entry.public_names:
        kwargs = {entry.public_names.get(n, n): v for n, v in kwargs.items()}
    target = kwargs.pop(entry.target_keyword, None) or entry.target
    return target, kwargs


def _arguments(op: OpDef, kwargs: dict) -> dict:
    return {n: as_numpy(op.name, n, v) if isinstance(v, torch.Tensor) else v for n, v in kwargs.items()}


def _shares_memory_within(tensor: torch.Tensor) -> bool:
    """Whether two elements of `tensor` are one memory location (an expanded tensor's are)."""
    if not all(isinstance(d, int) for d in (*tensor.shape, *tensor.stride())):
        return False  # symbolic (torch.compile with dynamic shapes): the kernel checks the real tensor
    if tensor.is_contiguous():
        return False
    dims = sorted((abs(s), n) for n, s in zip(tensor.shape, tensor.stride()) if n > 1)
    reach = 0
    for stride, size in dims:  # each stride beyond the span of the smaller ones: no two elements meet
        if stride <= reach:
            break
        reach += (size - 1) * stride
    else:
        return False
    if dims[0][0] == 0:
        return True
    offsets = np.zeros(1, np.int64)  # a rare layout the rule above cannot clear: count its addresses
    for stride, size in dims:
        offsets = (offsets[:, None] + np.arange(size, dtype=np.int64) * stride).ravel()
    return len(np.unique(offsets)) < len(offsets)


def _refuse_shared_writes(op: OpDef, kwargs: dict) -> None:
    """An output or updated tensor whose elements share memory would take every write to one place:
    refused, as torch refuses it for its own ops' out=."""
    for name, value in kwargs.items():
        written = name in op.outputs or (name in op.tensors and op.tensors[name].updated)
        if written and isinstance(value, torch.Tensor) and _shares_memory_within(value):
            raise TorchUnsupportedError(
                f"{op.name}: unsupported operation: more than one element of the written-to tensor {name!r} refers "
                f"to a single memory location (strides {tuple(value.stride())}). Please clone() the tensor before "
                f"performing the operation.")


def _written(op: OpDef, kwargs: dict) -> None:
    """Tell autograd the kernel wrote these tensors (their version counters), as torch's in-place ops
    do: a backward that saved one of them then refuses, instead of reading what the kernel wrote."""
    torch.autograd.graph.increment_version([v for n, v in kwargs.items() if isinstance(v, torch.Tensor) and (
        n in op.outputs or (n in op.tensors and op.tensors[n].updated))])


def _functional(name: str, updates: bool) -> Callable:
    def run(**kwargs):
        entry = _REGISTERED[name]
        target, kwargs = _split(entry, kwargs)
        if updates:
            _refuse_shared_writes(entry.opdef, kwargs)
        result = _kernel(entry.opdef, target)(**_arguments(entry.opdef, kwargs))
        if updates:
            _written(entry.opdef, kwargs)
        results = result if isinstance(result, tuple) else (result,)
        tensors = tuple(as_tensor(r) if r is not None else torch.empty(0, dtype=_output_dtype(entry, kwargs, n))
                        for n, r in zip(entry.opdef.outputs, results))
        return tensors if len(tensors) > 1 else tensors[0]

    return run


def _out(name: str) -> Callable:
    """The hidden .out overload: writes the outputs given, returns nothing."""

    def run(**kwargs):
        entry = _REGISTERED[name]
        target, kwargs = _split(entry, kwargs)
        _refuse_shared_writes(entry.opdef, kwargs)
        _kernel(entry.opdef, target)(**_arguments(entry.opdef, kwargs))
        _written(entry.opdef, kwargs)

    return run


def _through(name: str, overload: str, implementation: Callable) -> Callable:
    """A public overload as a call of the hidden one (CompositeImplicitAutograd: torch.compile and
    autograd see the hidden overload); .out returns the tensors it was given, as SPEC says. Torch's
    rules for its own ops hold: no out= when an argument requires grad, no updated tensor that does.
    An eager call on CPU tensors runs the hidden overload's `implementation` without dispatching."""

    def run(keyset, **kwargs):
        entry = _REGISTERED[name]
        wanting = _requiring_grad(kwargs)
        if wanting and overload == "out":
            raise TorchUnsupportedError(
                f"{name}(): functions with out=... arguments don't support automatic differentiation, but one of "
                f"the arguments requires grad ({', '.join(map(repr, wanting))}); call it under torch.no_grad()")
        updated = [n for n in wanting if n in entry.opdef.tensors and entry.opdef.tensors[n].updated]
        if updated:
            raise TorchUnsupportedError(f"The function '{name}' is not differentiable with respect to argument "
                                        f"{updated[0]!r}. This input cannot have requires_grad True.")

        def call():
            if (keyset & torch._C._after_autograd_keyset).highestPriorityTypeId() == _CPU:
                return implementation(**kwargs)
            hidden = getattr(getattr(getattr(torch.ops, HIDDEN), name), overload)
            return hidden(**{entry.hidden_names.get(n, n): v for n, v in kwargs.items()})

        result = _NoBackward.apply(call, name, *_named(kwargs, wanting)) if wanting else call()
        if overload == "default":
            return result
        given = tuple(kwargs[n] for n in entry.opdef.outputs)
        return given if len(given) > 1 else given[0]

    return run


def _output_dtype(entry: Registered, kwargs: dict, output: str) -> torch.dtype:
    leader = kwargs.get(entry.opdef.outputs[output].dtype)
    return leader.dtype if isinstance(leader, torch.Tensor) else torch.float32


def _shapes_only(op: OpDef, kwargs: dict) -> dict:
    """The call with every tensor replaced by a tilegrad.Spec-like array: shapes and dtypes, no data."""
    arrays = {}
    for name, value in kwargs.items():
        if isinstance(value, torch.Tensor):
            if value.dtype not in _DTYPE_NAMES:
                raise DTypeError(f"{op.name}: tensor {name!r} has dtype {value.dtype}")
            value = Spec(tuple(int(d) for d in value.shape), _DTYPE_NAMES[value.dtype]).array()
        arrays[name] = value
    return arrays


def _fake(name: str) -> Callable:
    """The meta implementation: the binding's checks and output shapes, no kernel (torch.compile)."""

    def run(**kwargs):
        entry = _REGISTERED[name]
        target, kwargs = _split(entry, kwargs)
        op = entry.opdef
        _refuse_shared_writes(op, kwargs)
        outputs = {n: kwargs.pop(n) for n in list(kwargs) if n in op.outputs and n not in op.tensors}
        binding = op.bind(get_target(target), (), _shapes_only(op, kwargs))
        if outputs:
            return None  # the hidden .out overload returns nothing
        like = next(v for v in kwargs.values() if isinstance(v, torch.Tensor))
        tensors = tuple(like.new_empty(binding.output_shapes[n], dtype=_TORCH_DTYPES[binding.output_dtypes[n].name])
                        if n in binding.output_shapes else like.new_empty(0, dtype=_output_dtype(entry, kwargs, n))
                        for n in op.outputs)
        return tensors if len(tensors) > 1 else tensors[0]

    return run


# ---- autograd of the torch ops: none, said at the backward ----------------------------------------
def _no_backward(op: str, argument: str, like: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    raise TorchUnsupportedError(
        f"{op}: torch.ops.tilegrad.{op} has no backward, so autograd cannot differentiate it with respect to "
        f"{argument!r}; pair a forward with a tilegrad backward op with tilegrad.torch.function(forward, backward, "
        f"args=..., grads=...) (docs/torch.md), or call the op under torch.no_grad() or on detached tensors")


def _no_backward_fake(op: str, argument: str, like: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(like)


class _NoBackward(torch.autograd.Function):
    """Outputs of a torch.ops.tilegrad call whose inputs require grad: the backward is an op that
    raises when it runs, so eager and torch.compile alike refuse at loss.backward(), not before."""

    @staticmethod
    def forward(ctx, run: Callable, op: str, names: tuple[str, ...], *tensors: torch.Tensor):
        ctx.op, ctx.names = op, names
        ctx.save_for_backward(*tensors)
        return run()

    @staticmethod
    def backward(ctx, *grads):
        # `grad` ties the op to the backward: torch.compile's partitioner moves an op of forward inputs alone
        # into the forward graph, which would raise there
        no_backward = getattr(torch.ops, HIDDEN).no_backward
        return (None, None, None, *(no_backward(op=ctx.op, argument=n, like=t, grad=grads[0])
                                    for n, t in zip(ctx.names, ctx.saved_tensors)))


def _requiring_grad(kwargs: dict) -> list[str]:
    """The tensor arguments autograd would differentiate the call for."""
    if not torch.is_grad_enabled():
        return []
    return [n for n, v in kwargs.items() if isinstance(v, torch.Tensor) and v.requires_grad]


def _named(kwargs: dict, names: list[str]) -> tuple:
    return (tuple(names), *(kwargs[n] for n in names))


_CPU = torch._C.DispatchKey.CPU


def _autograd(name: str, overload: torch._ops.OpOverload, implementation: Callable) -> Callable:
    """The Autograd kernel of a functional overload: outputs that would need a gradient get
    _NoBackward's. A call whose next dispatch key is the CPU backend runs `implementation` (the
    CPU kernel) at once: redispatching there through Python costs as much as the kernel call."""

    def run(keyset, **kwargs):
        rest = keyset & torch._C._after_autograd_keyset

        def below():
            if rest.highestPriorityTypeId() == _CPU:
                return implementation(**kwargs)
            with torch._C._AutoDispatchBelowAutograd():
                return overload.redispatch(rest, **kwargs)

        wanting = _requiring_grad(kwargs)
        return _NoBackward.apply(below, name, *_named(kwargs, wanting)) if wanting else below()

    return run


# ---- registering ---------------------------------------------------------------------------------
def register(op: str | OpDef, target: str = "cpu") -> Callable:
    """Make `op` (a name or a user opdef) `torch.ops.tilegrad.<name>`, running on `target` unless a
    call passes `target=`. Returns the op's overload packet. Importing tilegrad.torch registers
    every op already defined, and ops defined later with @tg.op register themselves."""
    opdef = op if isinstance(op, OpDef) else get_op(op)
    get_target(target)  # an unknown target is refused here, not at the first call
    functional, out, target_keyword = schemas(opdef)
    schema = f"{functional} / {out}"
    with _LOCK:
        entry = _REGISTERED.get(opdef.name)
        if entry is not None:
            if entry.schema != schema:
                entry.stale = True
                raise DefinitionError(f"op {opdef.name} is already a torch op with the schema {entry.schema}; "
                                      f"torch cannot change it in this process (restart, or use another name)")
            entry.opdef, entry.target, entry.stale = opdef, get_target(target).name, False
            return getattr(torch.ops.tilegrad, opdef.name)
        names = hidden_names(opdef, target_keyword)
        hidden_functional, hidden_out = hidden_schemas(opdef, target_keyword, names)
        updates = any(spec.updated for spec in opdef.tensors.values())
        _LIBRARY.define(f"{opdef.name}{functional}")
        _LIBRARY.define(f"{opdef.name}.out{out}")
        _HIDDEN_LIBRARY.define(f"{opdef.name}.out{hidden_out}")
        if updates:
            _HIDDEN_LIBRARY.define(f"{opdef.name}{hidden_functional}")
        _REGISTERED[opdef.name] = Registered(opdef, schema, get_target(target).name, target_keyword, names,
                                             {h: n for n, h in names.items() if h != n})
        # a functional call that writes running statistics runs through the hidden overload, as .out does
        if updates:
            implementation = _functional(opdef.name, True)
            _LIBRARY.impl(opdef.name, _through(opdef.name, "default", implementation), "CompositeImplicitAutograd",
                          with_keyset=True)
            _HIDDEN_LIBRARY.impl(opdef.name, implementation, "CompositeExplicitAutograd")
            torch.library.register_fake(f"{HIDDEN}::{opdef.name}", _fake(opdef.name), lib=_HIDDEN_LIBRARY)
        else:
            implementation = _functional(opdef.name, False)
            _LIBRARY.impl(opdef.name, implementation, "CompositeExplicitAutograd")
            _LIBRARY.impl(opdef.name, _autograd(opdef.name, getattr(torch.ops.tilegrad, opdef.name).default,
                                                implementation), "Autograd", with_keyset=True)
            torch.library.register_fake(f"{NAMESPACE}::{opdef.name}", _fake(opdef.name), lib=_LIBRARY)
        implementation = _out(opdef.name)
        _LIBRARY.impl(f"{opdef.name}.out", _through(opdef.name, "out", implementation), "CompositeImplicitAutograd",
                      with_keyset=True)
        _HIDDEN_LIBRARY.impl(f"{opdef.name}.out", implementation, "CompositeExplicitAutograd")
        torch.library.register_fake(f"{HIDDEN}::{opdef.name}.out", _fake(opdef.name), lib=_HIDDEN_LIBRARY)
    return getattr(torch.ops.tilegrad, opdef.name)


_HIDDEN_LIBRARY.define("no_backward(*, str op, str argument, Tensor like, Tensor grad) -> Tensor")
_HIDDEN_LIBRARY.impl("no_backward", _no_backward, "CompositeExplicitAutograd")
torch.library.register_fake(f"{HIDDEN}::no_backward", _no_backward_fake, lib=_HIDDEN_LIBRARY)


def _on_new_op(opdef: OpDef) -> None:
    """Defining an op never fails because torch cannot take it; it is then not a torch op."""
    try:
        register(opdef)
    except DefinitionError:
        pass  # redefined with another signature: marked stale, a call through torch says why
    except Exception as err:
        warnings.warn(f"tilegrad.torch: op {opdef.name} is not a torch op: {type(err).__name__}: {err}",
                      stacklevel=3)


for _name in list_ops():
    register(_name)
opdefs.on_register(_on_new_op)


# ---- autograd ------------------------------------------------------------------------------------
def function(forward: Callable | str | OpDef, backward: str | OpDef, *, args: Callable,
             grads: str | Sequence[str | None], returns: int | None = None, target: str = "cpu") -> Callable:
    """A callable whose gradient is a tilegrad backward op, as an autograd.Function.

    forward: a torch function, or a tilegrad op (its positional inputs are the op's tensors in
        order, keywords its attributes). The callable takes what forward takes.
    args: (*inputs, *outputs, *grad_outputs, **keywords) -> the backward op's keyword arguments;
        inputs and keywords are the forward's, outputs all of the forward's results.
    grads: for each positional input, the backward output that is its gradient (or None); a
        single name is the first input's.
    returns: how many leading forward results the callable returns (the rest, e.g. saved
        statistics, only feed the backward); default all.

        relu = tilegrad.torch.function(torch.relu, "activation_backward",
                                       args=lambda x, y, dy: dict(x=x, y=y, dy=dy, mode="relu"), grads="dx")
    """
    backward_def = backward if isinstance(backward, OpDef) else get_op(backward)
    backward_op = register(backward_def, target)
    backward_outputs = list(backward_def.outputs)
    backward_target = {_REGISTERED[backward_def.name].target_keyword: target}
    if isinstance(forward, (str, OpDef)):
        forward_def = forward if isinstance(forward, OpDef) else get_op(forward)
        forward_op = register(forward_def, target)
        tensor_names = list(forward_def.tensors)

        def run_forward(*inputs, **keywords):
            return forward_op(**dict(zip(tensor_names, inputs)), **keywords, target=target)
    else:
        run_forward = forward
    grads = (grads,) if isinstance(grads, str) else tuple(grads)
    unknown = [g for g in grads if g is not None and g not in backward_outputs]
    if unknown:
        raise ArgumentError(f"grads names {unknown}, which the backward op does not produce; it produces "
                            f"{', '.join(backward_outputs)}")

    class Function(torch.autograd.Function):
        @staticmethod
        def forward(ctx, keywords, *inputs):
            with torch.no_grad():
                result = run_forward(*inputs, **keywords)
            outputs = result if isinstance(result, tuple) else (result,)
            saved = (*inputs, *outputs)
            ctx.tensor_positions = [i for i, v in enumerate(saved) if isinstance(v, torch.Tensor)]
            ctx.others = {i: v for i, v in enumerate(saved) if not isinstance(v, torch.Tensor)}
            ctx.save_for_backward(*(saved[i] for i in ctx.tensor_positions))
            ctx.keywords, ctx.count = keywords, len(saved)
            shown = outputs if returns is None else outputs[:returns]
            return shown if len(shown) > 1 else shown[0]

        @staticmethod
        def backward(ctx, *grad_outputs):
            saved = [ctx.others.get(i) for i in range(ctx.count)]
            for position, tensor in zip(ctx.tensor_positions, ctx.saved_tensors):
                saved[position] = tensor
            call = args(*saved, *grad_outputs, **ctx.keywords)
            result = backward_op(**{**backward_target, **call})
            results = dict(zip(backward_outputs, result if isinstance(result, tuple) else (result,)))
            wanted = [results[g] if g is not None else None for g in grads]
            inputs = len(ctx.needs_input_grad) - 1
            return (None, *wanted, *([None] * (inputs - len(wanted))))

    def call(*inputs, **keywords):
        return Function.apply(keywords, *inputs)

    call.__name__ = getattr(forward, "__name__", str(forward))
    call.__doc__ = f"{call.__name__}, differentiated by tilegrad's {backward_def.name}"
    return call
