"""From LLVM IR to a callable: the JIT driver, the compile cache, the argument launcher and the native call path."""
