"""The user-written layer norm backward of examples/07 next to aten.native_layer_norm_backward
(2 threads, interleaved, best of 10): issue 6's column-reduction goal.

python benchmarks/layer_norm.py [N D]   (default 4096 1024)
"""

import importlib
import os
import sys
from pathlib import Path

import numpy as np

from tilegrad import compile
from tilegrad.bench import interleaved_best

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as benchmarks/run.py: no spinning torch workers
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
example = importlib.import_module("07_layer_norm_backward")


def main(rows: int = 4096, features: int = 1024) -> None:
    import torch

    torch.set_num_threads(2)
    a = example.inputs(rows, features, np.random.default_rng(0))
    kernel = compile("layer_norm_backward", "cpu")
    outputs = dict(dx=np.empty_like(a["x"]), dgamma=np.empty_like(a["gamma"]), dbeta=np.empty_like(a["gamma"]))
    t = {name: torch.from_numpy(value) for name, value in a.items()}
    beta = torch.zeros(features)
    best = interleaved_best({
        "tilegrad": lambda: kernel(**a, **outputs),
        "torch": lambda: torch.ops.aten.native_layer_norm_backward(
            t["dy"], t["x"], [features], t["mean"][:, None], t["rstd"][:, None], t["gamma"], beta,
            [True, True, True]),
    }, repeat=10)
    print(f"layer_norm_backward {rows}x{features} f32 (user op): tilegrad {best['tilegrad'] * 1e3:.2f} ms, "
          f"torch native_layer_norm_backward {best['torch'] * 1e3:.2f} ms, "
          f"{best['torch'] / best['tilegrad']:.2f}x; load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main(*(int(v) for v in sys.argv[1:3]))
