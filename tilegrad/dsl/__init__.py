"""The authoring front end: declare an op's math; the compiler does the rest."""

from tilegrad.dsl.expr import (
    cast,
    reduce_max,
    reduce_max_over,
    reduce_min,
    reduce_min_over,
    reduce_sum,
    reduce_sum_over,
)
from tilegrad.dsl.functions import (
    abs_,
    erf,
    exp,
    floor,
    log,
    maximum,
    minimum,
    power,
    sigmoid,
    sign,
    sqrt,
    tanh,
    where,
)
from tilegrad.dsl.opdef import (
    INDEX_DTYPES,
    ONE,
    attr,
    get_op,
    like,
    list_ops,
    op,
    params_dtype,
    rule,
    schedule,
    shaped,
    shaped_by,
    tensor,
)
from tilegrad.dsl.scans import cumsum, scan
from tilegrad.dsl.trace import check, output, scatter_add, temp
from tilegrad.schedule import (
    ComputeWith,
    Distribute,
    Fuse,
    Inline,
    Outline,
    Parallel,
    Partition,
    Reorder,
    RFactor,
    Scan,
    ScheduleHint,
    Specialize,
    Split,
    Stage,
    Store,
    Unroll,
    UnrollJam,
    Vectorize,
)

__all__ = [
    "INDEX_DTYPES", "ONE", "abs_", "attr", "cast", "check", "cumsum", "erf", "exp", "floor", "get_op", "like",
    "list_ops", "log", "maximum", "minimum", "op", "output", "params_dtype", "power", "reduce_max", "reduce_max_over",
    "reduce_min", "reduce_min_over", "reduce_sum", "reduce_sum_over", "rule", "scan", "scatter_add",
    "shaped", "shaped_by", "sigmoid", "sign", "sqrt", "tanh", "temp", "tensor", "where",
    # schedules (tilegrad.schedule): `@tg.op(schedule=...)`, `tg.schedule(op, target)`
    "schedule", "ScheduleHint", "ComputeWith", "Distribute", "Fuse", "Inline", "Outline", "Parallel", "Partition",
    "Reorder", "RFactor", "Scan", "Specialize", "Split", "Stage", "Store", "Unroll", "UnrollJam", "Vectorize",
]
