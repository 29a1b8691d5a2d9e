"""_lib.py - finding and declaring the shared libraries: libcakert (runtime/cake_runtime.h)
and libcake (compiler/cake.h), through ctypes.

Where a library is looked for, first found wins:
  1. $CAKE_LIBRARY_PATH: a directory holding it (or ':'-separated directories), or the file itself;
  2. the build tree this package sits in: <repo>/build/lib (python/cake/ in a checkout);
  3. next to this package when installed beside the libraries (<prefix>/lib);
  4. the system loader (libcakert.so.0, libcake.so.0, then the unversioned names).
"""
import ctypes as C
import os
import threading

MAX_RANK = 6


class Tensor(C.Structure):  # cake_tensor
    _fields_ = [('data', C.c_uint64), ('dtype', C.c_int), ('rank', C.c_int),
                ('shape', C.c_int64 * MAX_RANK), ('strides', C.c_int64 * MAX_RANK)]


class Fragment(C.Structure):  # cake_fragment
    _fields_ = [('start', C.c_int64), ('end', C.c_int64), ('local_start', C.c_int64), ('doc', C.c_int32),
                ('continues', C.c_int32), ('continued', C.c_int32), ('prev_rank', C.c_int32),
                ('next_rank', C.c_int32)]


class Binding(C.Structure):  # cake_binding
    _fields_ = [('name', C.c_char_p), ('tensor', Tensor)]


class DimValue(C.Structure):  # cake_dim_value
    _fields_ = [('name', C.c_char_p), ('value', C.c_int64)]


class DeviceFacts(C.Structure):  # cake_device_facts
    _fields_ = [('sms', C.c_int64)]


class Source(C.Structure):  # cake_source
    _fields_ = [('name', C.c_char_p), ('text', C.c_char_p)]


class Options(C.Structure):  # cake_options
    _fields_ = [('emit', C.c_char_p), ('archs', C.c_char_p), ('output', C.c_char_p), ('max_errors', C.c_int),
                ('cuda_root', C.c_char_p), ('options', C.c_char_p), ('jobs', C.c_int),
                ('cache_dir', C.c_char_p), ('timing', C.c_int)]


# the layouts of the C headers on LP64 (x86-64, aarch64)
assert C.sizeof(Tensor) == 112 and Tensor.dtype.offset == 8 and Tensor.rank.offset == 12
assert Tensor.shape.offset == 16 and Tensor.strides.offset == 64
assert C.sizeof(Binding) == 120 and Binding.tensor.offset == 8
assert C.sizeof(Options) == 72 and Options.jobs.offset == 48 and Options.timing.offset == 64


def _candidates(stem):
    names = [f'lib{stem}.so', f'lib{stem}.so.0']
    out = []
    env = os.environ.get('CAKE_LIBRARY_PATH')
    if env:
        for d in env.split(os.pathsep):
            if os.path.isfile(d) and os.path.basename(d).startswith(f'lib{stem}.so'):
                out.append(d)
            elif os.path.isdir(d):
                out += [os.path.join(d, n) for n in names]
    here = os.path.dirname(os.path.abspath(__file__))
    out += [os.path.join(here, '..', '..', 'build', 'lib', n) for n in names]
    out += [os.path.join(here, '..', '..', '..', n) for n in names]  # <prefix>/lib/pythonX.Y/site-packages/cake
    return out


def _open(stem):
    tried = []
    for path in _candidates(stem):
        if os.path.isfile(path):
            return C.CDLL(os.path.abspath(path))
        tried.append(path)
    errors = []
    for name in (f'lib{stem}.so.0', f'lib{stem}.so'):
        try:
            return C.CDLL(name)
        except OSError as e:
            errors.append(str(e))
    raise OSError(f'lib{stem}.so not found: set CAKE_LIBRARY_PATH to the directory holding it '
                  f'(a build\'s lib/); the system loader said: {"; ".join(errors)}')


_lock = threading.Lock()
_loaded = {}


def _library(stem, declare):
    """lib<stem>, opened and declared once."""
    with _lock:
        if stem not in _loaded:
            _loaded[stem] = declare(_open(stem))
        return _loaded[stem]


def runtime():
    """libcakert, declared (loaded once)."""
    return _library('cakert', _declare_runtime)


def compiler():
    """libcake, declared (loaded once)."""
    return _library('cake', _declare_compiler)


def _apply(L, decl):
    for name, (res, args) in decl.items():
        try:
            f = getattr(L, name)
        except AttributeError:  # not exported by this build (older builds lack cake_build_id, cake_target_table)
            continue
        f.restype, f.argtypes = res, args


def declare_runtime(L):
    """Declare libcakert's functions on a ctypes.CDLL of it (e.g. one opened by path); returns it."""
    return _declare_runtime(L)


def _declare_runtime(L):
    vp, sz, i64, s, i32 = C.c_void_p, C.c_size_t, C.c_int64, C.c_char_p, C.c_int
    P = C.POINTER
    decl = {
        'cake_last_error': (s, []),
        'cake_status_name': (s, [i32]),
        'cake_fail': (i32, [i32, s]),
        'cake_dtype_name': (s, [i32]),
        'cake_package_load': (i32, [s, vp, P(vp)]),
        'cake_package_free': (None, [vp]),
        'cake_package_program': (i32, [vp, s, P(vp)]),
        'cake_package_variant': (i32, [vp, s, s, P(vp)]),
        'cake_package_choose': (i32, [vp, s, s, P(DimValue), i32, i64, P(DeviceFacts), P(vp)]),
        'cake_program_variant': (s, [vp]),
        'cake_package_program_count': (i32, [vp]),
        'cake_package_program_name': (s, [vp, i32]),
        'cake_plan_create': (i32, [vp, P(vp)]),
        'cake_plan_free': (None, [vp]),
        'cake_plan_set_dim': (i32, [vp, s, i64]),
        'cake_plan_set_docs': (i32, [vp, P(C.c_int32), i64]),
        'cake_plan_set_param': (i32, [vp, s, C.c_double]),
        'cake_plan_finalize': (i32, [vp]),
        'cake_plan_get_dim': (i32, [vp, s, P(i64)]),
        'cake_plan_chunk_count': (i64, [vp]),
        'cake_plan_workspace_bytes': (i32, [vp, P(sz)]),
        'cake_plan_saved_bytes': (i32, [vp, P(sz)]),
        'cake_plan_item': (i32, [vp, s, P(sz), P(sz)]),
        'cake_validate': (i32, [vp, s, P(Binding), i32]),
        'cake_launch': (i32, [vp, s, P(Binding), i32, C.c_uint64, sz, C.c_uint64, sz, vp]),
        'cake_device_sm_count': (i32, [P(i32)]),
        'cake_partition': (i32, [P(C.c_int32), i64, i64, i32, i32, C.c_int, i32, P(Fragment), i64, P(i64),
                                 P(C.c_int32)]),
        'cake_device_target': (i32, [C.c_char_p, sz]),
        'cake_plan_set_partition': (i32, [vp, P(C.c_int32), i64, i64, i32, i32, C.c_int, i32]),
        'cake_plan_comm_bytes': (i32, [vp, s, P(C.c_uint64), P(C.c_uint64)]),
        'cake_plan_set_timing': (i32, [vp, i32]),
        'cake_plan_stage_times': (i32, [vp, s, P(s), P(C.c_float), i32, P(i32)]),
        'cake_comm_unique_id': (i32, [P(C.c_uint8)]),
        'cake_comm_init_nccl': (i32, [P(C.c_uint8), i32, i32, P(vp)]),
        'cake_comm_from_nccl': (i32, [vp, P(vp)]),
        'cake_comm_init_local': (i32, [i32, P(vp)]),
        'cake_comm_destroy': (None, [vp]),
        'cake_comm_rank': (i32, [vp]),
        'cake_comm_size': (i32, [vp]),
        'cake_launch_comm': (i32, [vp, s, P(Binding), i32, C.c_uint64, sz, C.c_uint64, sz, vp, vp]),
        'cake_launch_group': (i32, [P(vp), i32, s, P(P(Binding)), P(i32), P(C.c_uint64), P(sz), P(C.c_uint64),
                                    P(sz), P(vp), P(vp)]),
    }
    _apply(L, decl)
    return L


def _declare_compiler(L):
    vp, s, i32 = C.c_void_p, C.c_char_p, C.c_int
    decl = {
        'cake_compile': (i32, [C.POINTER(Source), i32, C.POINTER(Options), C.POINTER(vp)]),
        'cake_result_diagnostics': (s, [vp]),
        'cake_result_text': (s, [vp]),
        'cake_result_notes': (s, [vp]),
        'cake_result_error_count': (i32, [vp]),
        'cake_result_free': (None, [vp]),
        'cake_version': (s, []),
        'cake_build_id': (s, []),
        'cake_default_archs': (s, []),
        'cake_target_table': (s, []),
    }
    _apply(L, decl)
    return L
