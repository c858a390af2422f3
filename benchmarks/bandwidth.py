"""How close BCE grad (elementwise, memory-bound) gets to this machine's bandwidth, per core count.

python benchmarks/bandwidth.py
"""

import dataclasses

import numpy as np

import tilegrad
from tilegrad.bench import best_time as best


def main() -> None:
    n = 16 << 20
    rng = np.random.default_rng(0)
    x = rng.uniform(0.01, 0.99, n).astype(np.float32)
    y = rng.uniform(0, 1, n).astype(np.float32)
    w = rng.uniform(0.5, 2, n).astype(np.float32)
    g = np.ones(1, np.float32)
    dx = np.empty_like(x)
    copy = best(lambda: np.copyto(dx, x))
    print(f"numpy copy, one thread: {2 * 4 * n / copy / 1e9:.1f} GB/s (read + write)")
    cpu = tilegrad.get_target("cpu")
    for cores in sorted({1, cpu.cores}):
        target = tilegrad.register_target(dataclasses.replace(cpu, name=f"cpu-{cores}", cores=cores), replace=True)
        kernel = tilegrad.compile("binary_cross_entropy_grad", target)
        for weight in (None, w):
            seconds = best(lambda: kernel(input_x=x, input_y=y, weight=weight, dloss=g, dx=dx))
            streams = 3 if weight is None else 4
            label = "with weight" if weight is not None else "no weight"
            print(f"BCE grad 16M f32 on {cores} core(s), {label}: {seconds * 1e3:.2f} ms, "
                  f"{streams * 4 * n / seconds / 1e9:.1f} GB/s")


if __name__ == "__main__":
    main()
