"""One op, three targets: the tiled IR and the plan differ by target data alone.

Then the UB bound of embedding_dense_backward on ascend910 with scale_grad_by_freq: the largest
admissible E runs, E + 1 is refused with the vendor's bound in the message.
"""

import numpy as np

import tilegrad

x = tilegrad.Spec((1 << 20,), "float32")
one = tilegrad.Spec((1,), "float32")
for target in ("cpu", "ascend910b", "ft78ne"):
    kernel = tilegrad.compile("binary_cross_entropy_grad", target)
    print(kernel.plan(input_x=x, input_y=x, weight=x, dloss=one))
    tiled = kernel.ir("tiled", input_x=x, input_y=x, weight=x, dloss=one)
    print(f"{target}: {tiled.count('tg.ub_alloc')} UB buffers, {tiled.count('tg.copy')} copies in the tiled IR\n")

num_weights, cores = 1000, tilegrad.get_target("ascend910").cores
counts_size = num_weights // cores + num_weights % cores
largest = (180192 - 4 * counts_size - 1) // 36  # 36*E < 180192 - 4*counts_size
kernel = tilegrad.compile("embedding_dense_backward", "ascend910")
indices = np.arange(64, dtype=np.int32) % num_weights
for e in (largest, largest + 1):
    grad = np.ones((64, e), np.float32)
    try:
        out = kernel(grad=grad, indices=indices, num_weights=num_weights, scale_grad_by_freq=True)
        print(f"E={e}: runs, out[0, :3] = {out[0, :3]}")
    except tilegrad.UBCapacityError as error:
        print(f"E={e}: refused: {error}")
