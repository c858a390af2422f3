"""The mcDNN size queries (SPEC 7): bytes of workspace and reserve space for a call signature.

tilegrad's kernels allocate their own workspace (cross-core partials, temporaries kept in GM) and
report it per call (`Kernel.workspace_size`); these functions give that figure from shapes alone,
for a target (default `cpu`). The Ex training ops keep no reserve space: their backward recomputes
the activation's slope from `y`, so the reserve sizes are 0. All are pure: same inputs, same answer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tilegrad.kernel import Spec, compile


def dropout_reserve_space_size(shape) -> int:
    """Bytes of the dropout reserve space for a tensor of this shape: one mask byte per element."""
    return math.prod(int(d) for d in shape)


def _params_dtype(dtype: str) -> str:
    return "float64" if dtype == "float64" else "float32"  # cuDNN's rule for parameters and statistics


def _params(x_shape: Sequence[int], per_activation: bool) -> tuple[int, ...]:
    return (1, x_shape[1], *(x_shape[2:] if per_activation else (1,) * (len(x_shape) - 2)))


def _workspace(op: str, target: str, **call) -> int:
    return compile(op, target).workspace_size(**call)


def batch_norm_forward_training_ex_workspace_size(x_shape, mode: str = "spatial", dtype: str = "float32",
                                                  bn_ops: str = "bn", target: str = "cpu") -> int:
    p = Spec(_params(x_shape, mode == "per_activation"), _params_dtype(dtype))
    z = Spec(tuple(x_shape), dtype) if bn_ops == "bn_add_activation" else None
    return _workspace("batch_norm_forward_training_ex", target, x=Spec(tuple(x_shape), dtype), z=z, bn_scale=p,
                      bn_bias=p, mode=mode, bn_ops=bn_ops)


def batch_norm_backward_ex_workspace_size(x_shape, mode: str = "spatial", dtype: str = "float32",
                                          bn_ops: str = "bn", saved: bool = True, target: str = "cpu") -> int:
    x = Spec(tuple(x_shape), dtype)
    p = Spec(_params(x_shape, mode == "per_activation"), _params_dtype(dtype))
    stats = dict(saved_mean=p, saved_inv_variance=p) if saved else {}
    return _workspace("batch_norm_backward_ex", target, x=x, y=x, dy=x, bn_scale=p, bn_bias=p, mode=mode,
                      bn_ops=bn_ops, **stats)


def batch_norm_training_ex_reserve_space_size(x_shape, mode: str = "spatial", bn_ops: str = "bn") -> int:
    return 0


def normalization_forward_training_workspace_size(x_shape, mode: str = "per_channel", dtype: str = "float32",
                                                  group_cnt: int = 1, target: str = "cpu") -> int:
    p = Spec(_params(x_shape, mode == "per_activation"), _params_dtype(dtype))
    return _workspace("normalization_forward_training", target, x=Spec(tuple(x_shape), dtype), bn_scale=p,
                      bn_bias=p, mode=mode, group_cnt=group_cnt)


def normalization_backward_workspace_size(x_shape, mode: str = "per_channel", dtype: str = "float32",
                                          group_cnt: int = 1, saved: bool = True, target: str = "cpu") -> int:
    x = Spec(tuple(x_shape), dtype)
    p = Spec(_params(x_shape, mode == "per_activation"), _params_dtype(dtype))
    stats_shape = (x_shape[0], group_cnt) if group_cnt > 1 else p.shape
    stats = dict(saved_mean=Spec(stats_shape), saved_inv_variance=Spec(stats_shape)) if saved else {}
    return _workspace("normalization_backward", target, x=x, dy=x, bn_scale=p, mode=mode, group_cnt=group_cnt,
                      **stats)


def normalization_training_reserve_space_size(x_shape, mode: str = "per_channel", norm_ops: str = "norm") -> int:
    return 0


__all__ = [
    "batch_norm_backward_ex_workspace_size", "batch_norm_forward_training_ex_workspace_size",
    "batch_norm_training_ex_reserve_space_size", "dropout_reserve_space_size",
    "normalization_backward_workspace_size", "normalization_forward_training_workspace_size",
    "normalization_training_reserve_space_size",
]
