"""Targets are data: define a scratchpad accelerator and compile the library for it."""

import numpy as np

import tilegrad

tiny = tilegrad.register_target(tilegrad.Target(
    name="tiny-npu", cores=3, ub_bytes=8192, ub_align=32, vector_bytes=32,
    dtypes=("float32", "float16"), staged=True, ub_reserve_bytes=1024,
    description="a made-up 3-core NPU with 8 KiB of UB"), replace=True)

rng = np.random.default_rng(0)
x = rng.uniform(0.05, 0.95, 1000).astype(np.float32)
y = rng.uniform(0, 1, 1000).astype(np.float32)
g = np.ones(1000, np.float32)
kernel = tilegrad.compile("binary_cross_entropy_grad", "tiny-npu")
print(kernel.plan(input_x=x, input_y=y, dloss=g, reduction="none"))
got = kernel(input_x=x, input_y=y, dloss=g, reduction="none")
reference = tilegrad.compile("binary_cross_entropy_grad", "cpu")(input_x=x, input_y=y, dloss=g, reduction="none")
print("same as cpu:", np.array_equal(got, reference))
