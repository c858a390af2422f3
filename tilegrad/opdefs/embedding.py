"""embedding_dense_backward (SPEC 6.3, seed 002, aclnnEmbeddingDenseBackward)."""

import tilegrad.dsl as tg
from tilegrad.schedule import ScheduleHint

EMBEDDING_INDEX_DTYPES = ("int32", "int64", "int16", "int8", "uint8", "bool", "float16", "float32", "float64")


@tg.op(
    outputs={"out": tg.shaped("num_weights", "E", dtype="grad")},
    targets=("ascend910", "ascend910b", "cpu", "metax-c500"),
    rules=[
        tg.rule(lambda s, a: 2 <= len(s["grad"]) <= 8, "must have 2 to 8 dims", "grad"),
        tg.rule(lambda s, a: 1 <= len(s["indices"]) <= 8, "must have 1 to 8 dims", "indices"),
        tg.rule(lambda s, a: _numel(s["indices"]) == _numel(s["grad"][:-1]),
                "must have as many elements as grad without its last axis", "indices"),
        tg.rule(lambda s, a: a["num_weights"] >= 0, "must be >= 0", "num_weights"),
        tg.rule(lambda s, a, d: not a["scale_grad_by_freq"] or d["indices"] == "int64"
                or _numel(s["indices"]) < 2**31,
                "with scale_grad_by_freq, counts are index-sized as in the vendor kernel, so int32 (or "
                "narrower) indices allow at most 2**31 - 1 of them; use int64 indices", "indices"),
    ],
    schedule=lambda target, binding: _vendor_layout(target, binding),
)
def embedding_dense_backward(
    grad=tg.tensor("*B E", collapse=True),
    indices=tg.tensor("*I", dtype=EMBEDDING_INDEX_DTYPES, collapse=True, values=(0, "num_weights")),
    num_weights=tg.attr(int),
    padding_idx=tg.attr(-1, runtime=True),
    scale_grad_by_freq=tg.attr(False),
):
    """out[k] = Σ grad rows n with indices[n] == k (k != padding_idx), / count of k when scaling."""
    rows, E = grad.shape  # grad seen as [rows, E], indices as [rows]
    out = tg.output("out")

    def index(n):
        return tg.cast(indices[n], "i")

    def keep(n, *e):  # any negative padding_idx means none
        return (padding_idx < 0) | index(n).ne(padding_idx)

    message = "indices: a value is outside [0, num_weights)"
    # half types accumulate in float32 and round once, on the final store
    acc = out if grad.dtype.itemsize >= 4 else tg.temp("acc", (num_weights, E), "float32")
    acc.fill(0.0)
    if scale_grad_by_freq:
        counts_dtype = indices.dtype.name if indices.dtype.name in ("int32", "int64") else "int32"
        counts = tg.temp("counts", (num_weights,), counts_dtype)
        counts.fill(0)
        tg.scatter_add(counts, (rows,), index=lambda n: (index(n),), value=lambda n: 1, message=message)
        value = lambda n, e: grad[n, e] / counts[index(n)]  # noqa: E731
    else:
        value = lambda n, e: grad[n, e]  # noqa: E731
    tg.scatter_add(acc, (rows, E), index=lambda n, e: (index(n), e), value=value, when=keep, message=message)
    if acc is not out:
        out.assign(lambda k, e: acc[k, e])


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _vendor_layout(target, binding) -> ScheduleHint:
    """On Atlas training (ascend910) with scale_grad_by_freq, lay out UB as the vendor kernel does
    (seed 002): per core a counts buffer for its rows, then for each 32-byte block of indices
    (8 int32 / 4 int64) that many whole grad rows and one accumulation row, packed, the rows split
    over cores the vendor way. So the scatter's rows are tiled by a block of indices and its E axis
    is one whole tile. This is what makes the documented bound `36*E < 180192 - 4*counts_size`
    come out of the UB model."""
    if target.name != "ascend910" or not binding.attrs["scale_grad_by_freq"]:
        return ScheduleHint()
    rows_per_index_block = max(1, 32 // binding.dtypes["indices"].itemsize)
    return ScheduleHint(tile_role="scatter", tile_sizes=(rows_per_index_block, int(binding.symbols["E"])),
                        whole_axes=1, packed=True, vendor_split=True)
