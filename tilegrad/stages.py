"""The stages of the pipeline a user can print, in order (a name list: importing it loads no compiler)."""

STAGES = ("op", "loops", "tiled", "llvm", "asm")
