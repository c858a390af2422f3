"""The op library, one module per family; importing it registers every op."""

from tilegrad.opdefs import (  # noqa: F401
    batch_norm,
    embedding,
    linear_cross_entropy,
    loss,
    mcdnn,
    normalization,
    spatial_transformer,
)
