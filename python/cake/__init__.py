"""cake - Python bindings of Cake: the runtime (libcakert) and the compiler (libcake), through
ctypes; pure Python, no compiled extension. torch is optional and imported only when a torch
tensor is passed.

    import cake
    pkg = cake.compile('specs/first/first.cake', archs='sm_90a')   # or cake.load('build/package')
    plan = pkg.plan('first', dims={'T': 8192, 'H': 16}, cu_seqlens=None)
    ws = torch.empty(plan.workspace_bytes(), dtype=torch.uint8, device='cuda')
    plan.launch('fwd', {'x': x, 'y': y, 'w': w, 'z': z}, workspace=ws)

Training programs run under autograd through cake.autograd.TrainingOp (cake.kda for KDA), on
the GPU from a package or on the CPU through the interpreter (cake.cpu.run, `cakec run`).

The shared libraries are found through $CAKE_LIBRARY_PATH, the build tree (build/lib beside
python/), or the system loader (see cake._lib).
"""
from . import autograd, cpu
from .compiler import CompileError, compile, default_archs, emit, version
from .layers import kda
from .runtime import (BF16, DTYPES, ERR_ARGUMENT, ERR_COMM, ERR_CUDA, ERR_IO, ERR_MEMORY, ERR_NOT_FOUND, ERR_PACKAGE,
                      ERR_PLAN, ERR_TENSOR, F16, F32, I32, LAYOUTS, OK, Comm, Error, Package, Plan, Program,
                      launch_group, load, partition, tensor)

__all__ = ['BF16', 'DTYPES', 'ERR_ARGUMENT', 'ERR_COMM', 'ERR_CUDA', 'ERR_IO', 'ERR_MEMORY', 'ERR_NOT_FOUND',
           'ERR_PACKAGE', 'ERR_PLAN', 'ERR_TENSOR', 'F16', 'F32', 'I32', 'LAYOUTS', 'OK', 'CompileError', 'Comm', 'Error',
           'Package', 'Plan', 'Program', 'autograd', 'compile', 'cpu', 'default_archs', 'emit', 'kda', 'launch_group', 'load',
           'partition', 'tensor', 'version']
__version__ = '0.1.0'
