"""compiler.py - compiling .cake specs into packages through libcake (compiler/cake.h)."""
import ctypes as C
import os
import shutil
import tempfile

from . import _lib
from .runtime import Error, Package, _options_text


class CompileError(Error):
    """The specs have errors (status 1), bad options or I/O (2), an internal error (3);
    `diagnostics` holds the compiler's messages."""

    def __init__(self, status, diagnostics):
        self.diagnostics = diagnostics
        names = {1: 'spec errors', 2: 'bad options or I/O', 3: 'internal error'}
        super().__init__(status, diagnostics.strip() or '(no diagnostics)', names.get(status, str(status)),
                         'compile')


def _sources(specs):
    out = []
    for s in specs if isinstance(specs, (list, tuple)) else [specs]:
        if isinstance(s, tuple):  # (name, text)
            out.append(_lib.Source(os.fsencode(s[0]), s[1].encode()))
        elif isinstance(s, os.PathLike) or (isinstance(s, str) and '\n' not in s and os.path.isfile(s)):
            out.append(_lib.Source(os.fsencode(s), None))
        else:
            out.append(_lib.Source(b'<string>.cake', str(s).encode()))
    return out


def _run(specs, emit, archs=None, output=None, options=None, jobs=0, cache_dir=None, cuda_root=None,
         max_errors=0):
    L = _lib.compiler()
    src = _sources(specs)
    arr = (_lib.Source * len(src))(*src)
    opt = _lib.Options(emit=emit.encode(), archs=_arch_text(archs), output=None if output is None else
                       os.fsencode(output), max_errors=int(max_errors),
                       cuda_root=None if cuda_root is None else os.fsencode(cuda_root),
                       options=None if options is None else _options_text(options).encode(), jobs=int(jobs),
                       cache_dir=None if cache_dir is None else os.fsencode(cache_dir), timing=0)
    r = C.c_void_p()
    rc = L.cake_compile(arr, len(src), C.byref(opt), C.byref(r))
    try:
        diag = (L.cake_result_diagnostics(r) or b'').decode(errors='replace')
        text = (L.cake_result_text(r) or b'').decode(errors='replace')
    finally:
        L.cake_result_free(r)
    if rc != 0:
        raise CompileError(rc, diag)
    return text


def _arch_text(archs):
    if archs is None:
        return None
    return (archs if isinstance(archs, str) else ','.join(archs)).encode()


def compile(specs, archs=None, options=None, output=None, jobs=0, cache_dir=None, cuda_root=None):
    """Compile specs into a package and load it. specs: a path (str or os.PathLike) of a .cake
    file, the text of a spec, a (name, text) pair, or a list of those. archs: "sm_90a,sm_100a"
    or a list (None: the compiler's default targets). options: fixes options ("gate=safe" or a
    dict); the others take every value. output: the package directory (None: a temporary one,
    removed when the Package is collected). jobs: kernels compiled at once (0: the online CPUs).
    cache_dir: None: $CAKE_CACHE_DIR; "": no cache. Raises CompileError with the diagnostics."""
    tmp = None
    if output is None:
        output = tmp = tempfile.mkdtemp(prefix='cake-')
    try:
        _run(specs, 'package', archs, output, options, jobs, cache_dir, cuda_root)
        return Package(output, _cleanup=(lambda: shutil.rmtree(tmp, ignore_errors=True)) if tmp else None)
    except BaseException:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        raise


def emit(specs, form, archs=None, options=None):
    """The text of an intermediate form of the specs: 'ast', 'cir', 'mlir', 'llvm', 'ptx', 'header'."""
    return _run(specs, form, archs, None, options, 1)


def version():
    return _lib.compiler().cake_version().decode()


def default_archs():
    return _lib.compiler().cake_default_archs().decode()
