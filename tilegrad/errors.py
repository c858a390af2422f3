"""The exceptions tilegrad raises: each names the argument and the rule it broke."""


class TilegradError(Exception):
    """Base class of every error tilegrad raises on purpose."""


class ShapeError(TilegradError, ValueError):
    """A tensor's shape breaks the op's declared shape rules."""


class DTypeError(TilegradError, TypeError):
    """A tensor's dtype is not one the op accepts for that argument."""


class AttributeValueError(TilegradError, ValueError):
    """An attribute is missing, unknown, or outside its allowed values."""


class UnsupportedError(TilegradError):
    """The target does not support the op or dtype; the message lists what it does support."""


class UBCapacityError(TilegradError):
    """A tiling does not fit the target's unified buffer."""


class IndexOutOfRangeError(TilegradError, IndexError):
    """An index tensor holds a value outside the range the op allows."""


class ArgumentError(TilegradError, TypeError):
    """A call passes an unknown argument, the wrong kind of value, or one twice."""


class DefinitionError(TilegradError):
    """An op's definition is wrong (e.g. returns fewer values than it declares outputs);
    the message names the op and the line."""


class ScheduleError(DefinitionError, ValueError):
    """A schedule directive is malformed, or cannot apply to the op's loops (the message names the
    directive and the reason)."""


class OutOfBoundsError(TilegradError, IndexError):
    """The guard build caught an access outside its buffer (op, stage, buffer and index named)."""


class InternalError(TilegradError):
    """A bug in tilegrad, not in the caller's input: please report it with the traceback."""
