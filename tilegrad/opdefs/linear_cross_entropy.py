"""fused_linear_cross_entropy_loss_grad (SPEC 6.2, seed 001): the gradient of a vocab-sharded
linear layer followed by cross-entropy, given the forward's softmax statistics."""

import tilegrad.dsl as tg


def _has_statistics(shapes, attrs) -> bool:
    return "softmax" in shapes or ("logits_max" in shapes and "sum_exp_logits" in shapes)


@tg.op(
    outputs={"grad_input": tg.shaped("BT", "H", dtype="input"), "grad_weight": tg.shaped("V", "H", dtype="input")},
    dtypes=("float32", "float16", "bfloat16"),
    targets=("ascend910b", "cpu", "metax-c500"),
    rules=[
        tg.rule(_has_statistics, "give softmax, or both logits_max and sum_exp_logits", "softmax"),
        tg.rule(lambda s, a: s["target_mask"][0] * 8 >= s["grad"][0], "needs one bit per row", "target_mask"),
    ],
)
def fused_linear_cross_entropy_loss_grad(
    grad=tg.tensor("BT", dtype=("float32",)),
    input=tg.tensor("BT H"),
    weight=tg.tensor("V H", dtype="input"),
    target_mask=tg.tensor("M", dtype=("uint8",)),
    masked_target=tg.tensor("BT", dtype=("int32", "int64"), values=(0, "V")),
    logits_max=tg.tensor("BT", dtype=("float32",), optional=True),
    sum_exp_logits=tg.tensor("BT", dtype=("float32",), optional=True),
    softmax=tg.tensor("BT V", dtype=("float32",), optional=True),
):
    """P = softmax or exp(input @ weight.T - logits_max) / sum_exp_logits; P[i, masked_target[i]]
    -= 1 - m[i] with m[i] bit i of target_mask (LSB first); G = (P * grad[:, None]) in input's
    dtype; grad_input = G @ weight, grad_weight = G.T @ input."""
    rows, hidden = input.shape
    vocab = weight.shape[0]

    def probability(i, v):
        if softmax is not None:
            return softmax[i, v]
        logit = tg.reduce_sum(hidden, lambda h: input[i, h] * weight[v, h])
        return tg.exp(logit - logits_max[i]) / sum_exp_logits[i]

    def in_shard(i):  # 1 - m[i]: the row's target lies in this vocab shard
        return 1 - ((target_mask[i // 8] >> (i % 8)) & 1)

    g = tg.temp("G", (rows, vocab), input.dtype.name)  # the product is rounded to input's dtype
    tg.check(masked_target.shape, lambda i: (masked_target[i] >= 0) & (masked_target[i] < vocab),
             "masked_target: a value is outside [0, V)")
    g.assign(lambda i, v: (probability(i, v) - tg.where(v.eq(masked_target[i]), tg.cast(in_shard(i), "f"), 0.0))
             * grad[i])
    return (lambda i, h: tg.reduce_sum(vocab, lambda v: g[i, v] * weight[v, h]),
            lambda v, h: tg.reduce_sum(rows, lambda i: g[i, v] * input[i, h]))
