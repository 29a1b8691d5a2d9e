"""cakert.py - libcakert (runtime/cake_runtime.h) through ctypes, and the pieces
the benchmarks share: the C structs, the generic path (variant or choice, plan,
validate, launch with bindings by name), the anchor harness's import and the
per-stage device times from the torch profiler.

Only the torch helpers (tensor(), kernel_times()) need torch; loading a
package and planning work on a machine without a GPU.
"""
import ctypes as C
import importlib.util
import json
import os
import re
import sys

K = V = 128
BF16, F16, F32, I32 = 0, 1, 2, 3  # cake_dtype
DTYPES = {'bf16': BF16, 'f16': F16, 'f32': F32, 'i32': I32}
ELEM_BYTES = {BF16: 2, F16: 2, F32: 4, I32: 4}


# the C structs and the declarations of libcakert come from the Python package (python/cake)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'python'))
from cake._lib import MAX_RANK, Binding, DeviceFacts, DimValue, Tensor, declare_runtime  # noqa: E402,F401
from cake.runtime import _check  # noqa: E402


def raw_tensor(data, dtype, shape):
    """A cake_tensor of a device address (contiguous)."""
    x = Tensor()
    x.data, x.dtype, x.rank = data, dtype, len(shape)
    for i, s in enumerate(shape):
        x.shape[i] = s
    return x


def stand_ins(specs, addr=1 << 40):
    """{name: cake_tensor} at stand-in device addresses (4 KiB apart, never overlapping) for
    specs {name: (cake dtype, shape)}: bindings cake_validate can check without a GPU."""
    out = {}
    for n, (dt, shape) in specs.items():
        out[n] = raw_tensor(addr, dt, shape)
        nbytes = ELEM_BYTES[dt]
        for s in shape:
            nbytes *= s
        addr += (nbytes + 4095) // 4096 * 4096
    return out


def cu_of(shape):
    """The cu_seqlens (host offsets) of a shape {T, H, seqlens}; None for one document."""
    sl = shape.get('seqlens')
    if not sl:
        return None
    cu = [0]
    for n in sl:
        cu.append(cu[-1] + n)
    assert cu[-1] == shape['T']
    return cu


def shape_name(shape):
    return f"T={shape['T']} H={shape['H']}" + (' packed' if shape.get('seqlens') else '')


def tensor(t, shape=None):
    """A cake_tensor of a contiguous torch tensor, optionally viewed with another shape; None: absent."""
    import torch
    if t is None:
        return Tensor()
    assert t.is_contiguous()
    dt = {torch.bfloat16: BF16, torch.float16: F16, torch.float32: F32, torch.int32: I32}[t.dtype]
    return raw_tensor(t.data_ptr(), dt, list(shape if shape is not None else t.shape))


def bindings(named):
    """A cake_binding array of (name, cake_tensor) pairs."""
    arr = (Binding * max(len(named), 1))()
    for i, (n, t) in enumerate(named):
        arr[i].name, arr[i].tensor = n.encode(), t
    return arr, len(named)


class Plan:
    """A finalized plan of the generic path, with its workspace and saved sizes."""

    def __init__(self, cake, handle):
        self.cake, self.handle = cake, handle
        L = cake.lib
        ws, sv = C.c_size_t(), C.c_size_t()
        cake.check(L.cake_plan_workspace_bytes(handle, C.byref(ws)), 'cake_plan_workspace_bytes')
        cake.check(L.cake_plan_saved_bytes(handle, C.byref(sv)), 'cake_plan_saved_bytes')
        self.workspace_bytes, self.saved_bytes = ws.value, sv.value
        self.chunks = L.cake_plan_chunk_count(handle)

    def dim(self, name):
        v = C.c_int64()
        self.cake.check(self.cake.lib.cake_plan_get_dim(self.handle, name.encode(), C.byref(v)), f'dim {name}')
        return v.value

    def validate(self, entry, named):
        arr, n = bindings(named)
        self.cake.check(self.cake.lib.cake_validate(self.handle, entry.encode(), arr, n), f'validate {entry}')

    def launcher(self, entry, named, workspace, saved, stream):
        """A function launching `entry` with these bindings (kept alive with it); workspace and
        saved are device addresses of at least workspace_bytes and saved_bytes (256-byte aligned)."""
        arr, n = bindings(named)
        L, h, e = self.cake.lib, self.handle, entry.encode()
        ws, sv, check = self.workspace_bytes, self.saved_bytes, self.cake.check

        def launch():
            check(L.cake_launch(h, e, arr, n, workspace, ws, saved, sv, stream), f'launch {entry}')

        launch.keep = arr
        return launch

    def free(self):
        if self.handle:
            self.cake.lib.cake_plan_free(self.handle)
            self.handle = None


class Cake:
    """libcakert and one loaded package."""

    def __init__(self, lib, package):
        self.lib = declare_runtime(C.CDLL(lib))
        self.package = package
        L = self.lib
        vp = C.c_void_p
        self.pkg = vp()
        self.check(L.cake_package_load(package.encode(), None, C.byref(self.pkg)), 'cake_package_load')

    def check(self, rc, what):
        """Raises cake.Error (a RuntimeError) with the runtime's message when rc is not CAKE_OK."""
        _check(self.lib, rc, what)

    def manifest(self):
        with open(os.path.join(self.package, 'manifest.json')) as f:
            return json.load(f)

    def variant(self, program, options):
        """The program variant of `options` ("gate=safe,save=ckpt"); returns (handle, its variant string)."""
        p = C.c_void_p()
        self.check(self.lib.cake_package_variant(self.pkg, program.encode(), options.encode(), C.byref(p)),
                   f'variant {program} {options}')
        return p, self.lib.cake_program_variant(p).decode()

    def choose(self, program, options, dims, ndocs=0, sms=0):
        """The variant the runtime chooses (cake_package_choose): `options` as given ("" for none),
        the others by the spec's prefer clauses over dims {name: value} (not the docs dim), ndocs
        documents (0: one) and sms multiprocessors (0: $CAKE_DEVICE_SMS, the current GPU, or 132),
        else their defaults; returns (handle, its variant string)."""
        p = C.c_void_p()
        arr = (DimValue * max(len(dims), 1))(*[DimValue(k.encode(), int(v)) for k, v in dims.items()])
        facts = DeviceFacts(int(sms))
        self.check(self.lib.cake_package_choose(self.pkg, program.encode(), options.encode(), arr, len(dims),
                                                int(ndocs), C.byref(facts), C.byref(p)),
                   f'choose {program} {options} {dims}')
        return p, self.lib.cake_program_variant(p).decode()

    def plan(self, prog, dims, cu=None, params=None):
        """A finalized Plan of program handle `prog`: dims {name: value}, cu (host offsets, or None:
        one document), params {name: value}."""
        h = C.c_void_p()
        self.check(self.lib.cake_plan_create(prog, C.byref(h)), 'cake_plan_create')
        try:
            for k, v in dims.items():
                self.check(self.lib.cake_plan_set_dim(h, k.encode(), int(v)), f'dim {k}')
            if cu is not None:
                arr = (C.c_int32 * len(cu))(*cu)
                self.check(self.lib.cake_plan_set_docs(h, arr, len(cu) - 1), 'cake_plan_set_docs')
            for k, v in (params or {}).items():
                self.check(self.lib.cake_plan_set_param(h, k.encode(), float(v)), f'param {k}')
            self.check(self.lib.cake_plan_finalize(h), 'cake_plan_finalize')
        except Exception:
            self.lib.cake_plan_free(h)
            raise
        return Plan(self, h)


def fla_packages(fla_root, *names):
    """Makes fla's source tree at fla_root importable without running the
    __init__.py of the packages `names` (fla's pulls in its layers, models and
    transformers): each becomes an empty package over its folder, fla with the
    tree's __version__. Returns that version."""
    import types
    fla_root = os.path.abspath(fla_root)
    if fla_root not in sys.path:
        sys.path.insert(0, fla_root)
    init = os.path.join(fla_root, 'fla', '__init__.py')
    with open(init) as f:
        ver = re.search(r'__version__\s*=\s*["\']([^"\']+)', f.read())
    for name in ('fla',) + tuple(n for n in names if n != 'fla'):
        if name not in sys.modules:
            pkg = types.ModuleType(name)
            pkg.__path__ = [os.path.join(fla_root, *name.split('.'))]
            pkg.__file__ = os.path.join(pkg.__path__[0], '__init__.py')
            sys.modules[name] = pkg
    if not hasattr(sys.modules['fla'], '__version__'):
        sys.modules['fla'].__version__ = ver.group(1) if ver else 'unknown'
    return sys.modules['fla'].__version__


def load_anchor(path):
    """The anchor harness (fla_bench.py in `path`) as a module."""
    spec = importlib.util.spec_from_file_location('fla_bench', os.path.join(path, 'fla_bench.py'))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def kernel_times(fn, n=5):
    """Device time of each kernel (and copy) that fn() runs, from the torch profiler:
    {name: (ms per call of fn, launches per call of fn)}."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
    rows = {}
    for e in prof.key_averages():
        dt = getattr(e, 'self_device_time_total', None)
        if dt is None:
            dt = getattr(e, 'self_cuda_time_total', 0)
        if dt and dt > 0:
            rows[e.key] = (dt / n / 1000.0, e.count / n)
    return rows


def stage_of(kernel, program=None):
    """The stage of a generated kernel's name, <stage>_<20-hex digest> (programs share kernels, so
    the name carries no program); None for others."""
    m = re.fullmatch(r'(\w+?)_[0-9a-f]{20}', kernel)
    return m.group(1) if m else None


def stage_times(rows, program=None):
    """kernel_times() rows summed per stage of a generated kernel; everything else (the runtime's chunk
    table copy, for one) under its own name."""
    out = {}
    for name, (ms, _) in rows.items():
        key = stage_of(name, program) or name[:60]
        out[key] = out.get(key, 0.0) + ms
    return out
