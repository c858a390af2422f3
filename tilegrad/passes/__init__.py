"""The compiler passes: one module per xDSL ModulePass, plus the helpers they share (common, loop_utils, loop_affine,
tiling_plan, ub_staging, ub_run_staging) and the registry that lists them all."""
