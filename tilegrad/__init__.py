"""tilegrad: a Python compiler DSL for deep-learning backward operators.

    k = tilegrad.compile("binary_cross_entropy_grad", target="ascend910b")
    dx = k(input_x=x, input_y=y, dloss=g, reduction="mean")
    print(k.ir("tiled", input_x=x, input_y=y, dloss=g))
"""

from tilegrad.dsl.opdef import add_library as _add_library
from tilegrad.dsl.opdef import get_op, list_ops
from tilegrad.errors import (
    ArgumentError,
    AttributeValueError,
    DefinitionError,
    DTypeError,
    IndexOutOfRangeError,
    InternalError,
    OutOfBoundsError,
    ScheduleError,
    ShapeError,
    TilegradError,
    UBCapacityError,
    UnsupportedError,
)
from tilegrad.kernel import Kernel, Spec, compile
from tilegrad.sizes import (
    batch_norm_backward_ex_workspace_size,
    batch_norm_forward_training_ex_workspace_size,
    batch_norm_training_ex_reserve_space_size,
    dropout_reserve_space_size,
    normalization_backward_workspace_size,
    normalization_forward_training_workspace_size,
    normalization_training_reserve_space_size,
)
from tilegrad.stages import STAGES
from tilegrad.targets import Target, get_target, list_targets, register_target

__version__ = "0.1.0"


def _load_library() -> None:
    import tilegrad.opdefs  # noqa: F401  (registers the library's ops, at the first look-up: `import tilegrad` stays quick)


_add_library(_load_library)

__all__ = [
    "ArgumentError", "AttributeValueError", "DTypeError", "DefinitionError", "IndexOutOfRangeError",
    "InternalError", "Kernel", "OutOfBoundsError", "STAGES", "ScheduleError", "ShapeError",
    "Spec", "Target", "TilegradError", "UBCapacityError", "UnsupportedError", "compile",
    "dropout_reserve_space_size", "batch_norm_backward_ex_workspace_size",
    "batch_norm_forward_training_ex_workspace_size", "batch_norm_training_ex_reserve_space_size",
    "normalization_backward_workspace_size", "normalization_forward_training_workspace_size",
    "normalization_training_reserve_space_size", "get_op", "get_target", "list_ops", "list_targets", "register_target",
]
