"""Spatial transformer backward (SPEC 6.14): the affine grid generator and the bilinear sampler,
align_corners=True, zeros outside the input."""

import tilegrad.dsl as tg
from tilegrad.opdefs.mcdnn import blend


def _coordinate(index, size):
    """align_corners=True: index 0..size-1 -> -1..1 (a size of 1 uses coordinate 0)."""
    return tg.where(size > 1, -1.0 + 2.0 * tg.cast(index, "f") / tg.cast(tg.maximum(size - 1, 1), "f"), 0.0)


@tg.op(outputs={"dtheta": tg.shaped("N", 2, 3, dtype="dgrid")})
def spatial_tf_grid_generator_backward(dgrid=tg.tensor("N H W 2")):
    """grid[n,h,w,i] = Σ_j theta[n,i,j] * (x_w, y_h, 1)_j, so dtheta[n,i,j] = Σ_{h,w} dgrid[n,h,w,i] * base_j."""
    height, width = dgrid.shape[1], dgrid.shape[2]

    def base(h, w, j):
        return tg.where(j.eq(0), _coordinate(w, width), tg.where(j.eq(1), _coordinate(h, height), 1.0))

    return lambda n, i, j: tg.reduce_sum(height, lambda h: tg.reduce_sum(
        width, lambda w: dgrid[n, h, w, i] * base(h, w, j)))


@tg.op(outputs={"dx": tg.like("x"), "dgrid": tg.like("grid")})
def spatial_tf_sampler_backward(
    x=tg.tensor("N C H W"),
    grid=tg.tensor("N OH OW 2", dtype="x"),
    dy=tg.tensor("N C OH OW", dtype="x"),
    alpha=tg.attr(1.0, runtime=True, special=(1.0,)),
    beta=tg.attr(0.0, runtime=True, special=(0.0,)),
    alpha_dgrid=tg.attr(1.0, runtime=True, special=(1.0,)),
    beta_dgrid=tg.attr(0.0, runtime=True, special=(0.0,)),
):
    """Bilinear sampling y[n,c,o] = Σ_corners x[n,c,corner] * weight (zero outside): dx scatters
    dy * weight to the four corners; dgrid sums dy * ∂y/∂grid over the channels."""
    channels, height, width = x.shape[1], x.shape[2], x.shape[3]

    def sample_point(n, oh, ow):
        ix = (grid[n, oh, ow, 0] + 1.0) * 0.5 * tg.cast(width - 1, "f")
        iy = (grid[n, oh, ow, 1] + 1.0) * 0.5 * tg.cast(height - 1, "f")
        x0, y0 = tg.floor(ix), tg.floor(iy)
        return x0, y0, ix - x0, iy - y0

    def corner(n, oh, ow, k):  # corner k = 2*dy + dx: its index and bilinear weight
        k = tg.cast(k, "i")
        x0, y0, tx, ty = sample_point(n, oh, ow)
        cx, cy = tg.cast(x0, "i") + k % 2, tg.cast(y0, "i") + k // 2
        wx = tg.where((k % 2).eq(1), tx, 1.0 - tx)
        wy = tg.where((k // 2).eq(1), ty, 1.0 - ty)
        inside = (cx >= 0) & (cx < width) & (cy >= 0) & (cy < height)
        return cx, cy, wx, wy, inside

    # A sample point adds to the same cell of each of its channel planes. Planes whose size is a
    # multiple of 4 KB (64x64 float32) put those cells in one L1 set, which holds 8 lines, so the 16
    # channels evict each other; one unused row per plane spreads them over the sets (1.16x at
    # N=16 C=16 64x64, bench). The spare rows are zero-filled and never read.
    acc = tg.temp("acc", (x.shape[0], channels, height + 1, width))
    acc.fill(0.0)

    def target_cell(n, oh, ow, c, k):
        cx, cy, _, _, _ = corner(n, oh, ow, k)
        return (n, c, cy, cx)

    def contribution(n, oh, ow, c, k):
        _, _, wx, wy, _ = corner(n, oh, ow, k)
        return dy[n, c, oh, ow] * wx * wy

    # channels inside the sample point: its corners and weights are computed once for all of them;
    # each (n, c) plane still receives its terms in (oh, ow, k) order
    n_, c_, oh_, ow_ = dy.shape
    tg.scatter_add(acc, (n_, oh_, ow_, c_, 4), index=target_cell, value=contribution,
                   when=lambda n, oh, ow, c, k: corner(n, oh, ow, k)[4], message=None)
    dx = blend("dx", lambda n, c, h, w: acc[n, c, h, w], alpha, beta)
    tg.output("dx").assign(dx)

    def dgrid(n, oh, ow, axis):
        def along(c):
            total = 0.0
            for k in range(4):
                cx, cy, wx, wy, inside = corner(n, oh, ow, k)
                value = tg.where(inside, x[n, c, cy, cx], 0.0)
                sign_x = 1.0 if k % 2 else -1.0
                sign_y = 1.0 if k // 2 else -1.0
                slope = tg.where(axis.eq(0), sign_x * wy, sign_y * wx)
                total = total + value * slope
            return dy[n, c, oh, ow] * total

        half_extent = tg.where(axis.eq(0), tg.cast(width - 1, "f"), tg.cast(height - 1, "f")) * 0.5
        return tg.reduce_sum(channels, along) * half_extent

    tg.output("dgrid").assign(blend("dgrid", dgrid, alpha_dgrid, beta_dgrid))
