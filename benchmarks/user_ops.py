"""The user-op table (same as `tilegrad bench --user`): backward ops written in the DSL as a user
writes them (tilegrad/user_ops.py), at training sizes, against torch's fastest CPU form, interleaved
in one process, with the float32 FMA peak measured in the same run beside the GEMMs' GFLOP/s.

    python benchmarks/user_ops.py [--quick] [--plans] [--json] [CASE ...]

CASE: a case's label or a part of it ("conv2d", "linear backward bfloat16"), or a pattern. --plans
adds each op's plan on ascend910b at the same size (cores busy, element-sized copies per stage).
"""

import sys

from tilegrad.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", "--user", *sys.argv[1:]]))
