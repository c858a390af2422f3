"""The op library, one module per family; importing it registers every op."""

from tilegrad.opdefs import embedding, linear_cross_entropy, loss, mcdnn, spatial_transformer  # noqa: F401
