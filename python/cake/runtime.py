"""runtime.py - packages, plans and launches over libcakert (runtime/cake_runtime.h).

Loading a package, choosing a variant, planning and validating need no GPU;
launching does (the runtime opens libcuda.so.1 on the first launch).
"""
import ctypes as C
import json
import os
import weakref

from . import _lib

# cake_status
OK, ERR_ARGUMENT, ERR_IO, ERR_PACKAGE, ERR_NOT_FOUND, ERR_TENSOR, ERR_PLAN, ERR_CUDA, ERR_MEMORY, ERR_COMM = range(10)
# cake_dtype
BF16, F16, F32, I32 = range(4)
DTYPES = {'bf16': BF16, 'f16': F16, 'f32': F32, 'i32': I32}
ELEM_BYTES = {BF16: 2, F16: 2, F32: 4, I32: 4}


class Error(RuntimeError):
    """A failed call of the runtime or the compiler: `status` (a cake_status, or the compiler's
    return code for CompileError), `status_name` and `message` (cake_last_error()'s text)."""

    def __init__(self, status, message, status_name=None, what=None):
        self.status, self.message = int(status), message
        self.status_name = status_name or str(status)
        self.what = what
        super().__init__(f'{what}: {message}' if what else message)


def _check(L, rc, what=None):
    if rc != OK:
        msg = L.cake_last_error()
        name = L.cake_status_name(rc)
        raise Error(rc, msg.decode(errors='replace') if msg else '(no message)',
                    name.decode() if name else None, what)


def _b(s):
    return None if s is None else str(s).encode()


def _options_text(options):
    """'name=value,...' of a dict (or a string as given; None: '')."""
    if options is None:
        return ''
    if isinstance(options, str):
        return options
    return ','.join(f'{k}={_opt_value(v)}' for k, v in options.items())


def _opt_value(v):
    return ('true' if v else 'false') if isinstance(v, bool) else str(v)


def load(package_dir):
    """Load a package directory (manifest.json and its files, each checked against its sha256)."""
    return Package(package_dir)


class Package:
    """A loaded package (cake_package). Programs and plans keep it alive."""

    def __init__(self, path, _cleanup=None):
        self._L = L = _lib.runtime()
        self.path = os.fspath(path)
        h = C.c_void_p()
        _check(L, L.cake_package_load(os.fsencode(self.path), None, C.byref(h)), f'load {self.path}')
        self._h = h
        self._finalizer = weakref.finalize(self, _free_package, L, h.value, _cleanup)
        self._manifest = None

    def close(self):
        """Free the package now (plans made from it must not be used afterwards)."""
        self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _handle(self):
        if not self._finalizer.alive:
            raise Error(ERR_ARGUMENT, 'the package is closed')
        return self._h

    @property
    def manifest(self):
        """manifest.json, parsed (read from the package directory on first use)."""
        if self._manifest is None:
            with open(os.path.join(self.path, 'manifest.json')) as f:
                self._manifest = json.load(f)
        return self._manifest

    def programs(self):
        """The names of the programs, each once, in manifest order."""
        L, h = self._L, self._handle()
        names = []
        for i in range(L.cake_package_program_count(h)):
            n = L.cake_package_program_name(h, i).decode()
            if n not in names:
                names.append(n)
        return names

    def variants(self, program):
        """The variant strings of `program` ("" for a program without options)."""
        out = [p.get('variant', '') for p in self.manifest['programs'] if p['name'] == program]
        if not out:
            raise Error(ERR_NOT_FOUND, f"no program '{program}' in {self.path}")
        return out

    def program(self, name, options=None, dims=None, ndocs=0, sms=0):
        """The Program (variant) of `name`: options given win, the others come from the spec's
        prefer clauses over `dims` ({name: value}), `ndocs` documents and `sms` multiprocessors
        (0: $CAKE_DEVICE_SMS, the current GPU, or 132), else their defaults (cake_package_choose)."""
        L, h = self._L, self._handle()
        dims = dict(dims or {})
        arr = (_lib.DimValue * max(len(dims), 1))(*[_lib.DimValue(k.encode(), int(v)) for k, v in dims.items()])
        facts = _lib.DeviceFacts(int(sms))
        p = C.c_void_p()
        _check(L, L.cake_package_choose(h, name.encode(), _options_text(options).encode(), arr, len(dims),
                                        int(ndocs), C.byref(facts), C.byref(p)), f'program {name}')
        return Program(self, p, name)

    def variant(self, name, options=None):
        """The Program of `name` with exactly these options (the others: defaults; cake_package_variant)."""
        L, h = self._L, self._handle()
        p = C.c_void_p()
        _check(L, L.cake_package_variant(h, name.encode(), _options_text(options).encode(), C.byref(p)),
               f'variant {name}')
        return Program(self, p, name)

    def plan(self, program, options=None, dims=None, cu_seqlens=None, params=None, sms=0, partition=None):
        """A finalized Plan: the variant chosen as by program() (dims and the number of documents
        feed the prefer clauses), then its dims, documents (cu_seqlens: host offsets 0..T, a
        sequence of ints or anything with tolist(); None: one document) and params. partition:
        one rank's part of a context-parallel program (see Program.plan)."""
        ndocs = 0 if cu_seqlens is None else len(_host_offsets(cu_seqlens)) - 1
        prog = self.program(program, options, dims, ndocs, sms)
        return prog.plan(dims, cu_seqlens, params, partition)


def _free_package(L, h, cleanup):
    L.cake_package_free(h)
    if cleanup:
        cleanup()


def _offsets_i32(cu_seqlens, what):
    """cu_seqlens as a ctypes int32 array (every offset checked to fit)."""
    cu = _host_offsets(cu_seqlens)
    bad = [(i, v) for i, v in enumerate(cu) if not -2**31 <= v < 2**31]
    if bad:
        raise Error(ERR_PLAN, f'cu_seqlens[{bad[0][0]}] = {bad[0][1]} is not a 32-bit offset', 'CAKE_ERR_PLAN', what)
    return (C.c_int32 * len(cu))(*cu)


def _host_offsets(cu):
    if hasattr(cu, 'tolist'):  # numpy, torch (a device tensor is copied to the host)
        if hasattr(cu, 'cpu'):
            cu = cu.cpu()
        cu = cu.tolist()
    cu = [int(v) for v in cu]
    if not cu:
        raise Error(ERR_ARGUMENT, 'cu_seqlens is empty (it holds ndocs + 1 offsets)', 'CAKE_ERR_ARGUMENT', 'docs')
    return cu


class Program:
    """One variant of a program (borrowed from its Package, which it keeps alive)."""

    def __init__(self, package, handle, name):
        self.package, self._h, self.name = package, handle, name

    @property
    def variant(self):
        """Its options as "name=value,..." ("" for a program without options)."""
        self.package._handle()
        return self.package._L.cake_program_variant(self._h).decode()

    def __repr__(self):
        return f'<cake.Program {self.name} [{self.variant}]>'

    def plan(self, dims=None, cu_seqlens=None, params=None, partition=None):
        """A finalized Plan of this variant: dims {name: value}, cu_seqlens (host offsets; None: one
        document), params {name: value}. partition (a context-parallel program): a dict with R, rank
        and optionally layout (default 'zigzag'), align (default 0) and T (default cu_seqlens[-1]);
        cu_seqlens are then the global documents, split as cake.partition does
        (cake_plan_set_partition: the rank's local tokens, documents, R, F and fragment table)."""
        L = self.package._L
        self.package._handle()
        h = C.c_void_p()
        _check(L, L.cake_plan_create(self._h, C.byref(h)), 'plan')
        plan = Plan(self, h)  # frees h when collected, also on the errors below
        for k, v in (dims or {}).items():
            _check(L, L.cake_plan_set_dim(h, k.encode(), int(v)), f'dim {k}')
        if partition is not None:
            _set_partition(L, h, cu_seqlens, partition)
        elif cu_seqlens is not None:
            arr = _offsets_i32(cu_seqlens, 'docs')
            _check(L, L.cake_plan_set_docs(h, arr, len(arr) - 1), 'docs')
        for k, v in (params or {}).items():
            _check(L, L.cake_plan_set_param(h, k.encode(), float(v)), f'param {k}')
        _check(L, L.cake_plan_finalize(h), 'finalize')
        return plan


def _set_partition(L, h, cu_seqlens, part):
    unknown = set(part) - {'R', 'rank', 'layout', 'align', 'T'}
    if unknown or 'R' not in part or 'rank' not in part:
        raise Error(ERR_ARGUMENT, f'partition takes R, rank, layout, align and T (R and rank required); got '
                    f'{sorted(part)}', 'CAKE_ERR_ARGUMENT', 'partition')
    if cu_seqlens is None:
        raise Error(ERR_ARGUMENT, 'a partition needs the global cu_seqlens', 'CAKE_ERR_ARGUMENT', 'partition')
    layout = part.get('layout', 'zigzag')
    if layout not in LAYOUTS:
        raise Error(ERR_ARGUMENT, f"unknown layout '{layout}' (one of {', '.join(LAYOUTS)})", 'CAKE_ERR_ARGUMENT',
                    'partition')
    arr = _offsets_i32(cu_seqlens, 'partition')
    T = arr[len(arr) - 1] if part.get('T') is None else int(part['T'])
    _check(L, L.cake_plan_set_partition(h, arr, len(arr) - 1, T, int(part['R']), int(part['rank']),
                                        LAYOUTS.index(layout), int(part.get('align', 0))), 'partition')


class Plan:
    """A finalized plan (cake_plan): the problem's dims, documents, chunk tables and the byte-exact
    workspace and saved layout. It keeps its Program, hence its Package, alive."""

    def __init__(self, program, handle):
        self.program, self._h = program, handle
        self._L = program.package._L
        self._finalizer = weakref.finalize(self, self._L.cake_plan_free, handle.value)

    def _handle(self):
        self.program.package._handle()
        return self._h

    def close(self):
        self._finalizer()

    def dim(self, name):
        v = C.c_int64()
        _check(self._L, self._L.cake_plan_get_dim(self._handle(), name.encode(), C.byref(v)), f'dim {name}')
        return v.value

    @property
    def chunk_count(self):
        """The number of chunks over all documents."""
        return self._L.cake_plan_chunk_count(self._handle())

    def workspace_bytes(self):
        """Bytes of device workspace every entry of the plan needs (256-byte aligned)."""
        v = C.c_size_t()
        _check(self._L, self._L.cake_plan_workspace_bytes(self._handle(), C.byref(v)), 'workspace_bytes')
        return v.value

    def saved_bytes(self):
        """Bytes of the saved area (tensors kept from a forward entry for a backward one)."""
        v = C.c_size_t()
        _check(self._L, self._L.cake_plan_saved_bytes(self._handle(), C.byref(v)), 'saved_bytes')
        return v.value

    def item(self, name):
        """(offset, bytes) of a workspace item (a temp tensor, "chunk_table", "doc_table") or a
        saved tensor inside its area."""
        off, n = C.c_size_t(), C.c_size_t()
        _check(self._L, self._L.cake_plan_item(self._handle(), name.encode(), C.byref(off), C.byref(n)),
               f'item {name}')
        return off.value, n.value

    def comm_bytes(self, entry):
        """(sent, received): what this rank of a context-parallel plan moves in the exchanges of
        `entry`, in bytes (cake_plan_comm_bytes); (0, 0) for an entry without exchanges."""
        sent, recv = C.c_uint64(), C.c_uint64()
        _check(self._L, self._L.cake_plan_comm_bytes(self._handle(), entry.encode(), C.byref(sent), C.byref(recv)),
               f'comm_bytes {entry}')
        return sent.value, recv.value

    def set_timing(self, on=True):
        """Record a driver event before and after every stage of later launches (cake_plan_set_timing)."""
        _check(self._L, self._L.cake_plan_set_timing(self._handle(), 1 if on else 0), 'set_timing')

    def stage_times(self, entry):
        """[(stage, ms)] of the last timed launch of `entry`, in order (cake_plan_stage_times; waits
        for the last stage)."""
        n = C.c_int()
        _check(self._L, self._L.cake_plan_stage_times(self._handle(), entry.encode(), None, None, 0, C.byref(n)),
               f'stage_times {entry}')
        names, ms = (C.c_char_p * max(n.value, 1))(), (C.c_float * max(n.value, 1))()
        _check(self._L, self._L.cake_plan_stage_times(self._handle(), entry.encode(), names, ms, n.value,
                                                      C.byref(n)), f'stage_times {entry}')
        return [(names[i].decode(), ms[i]) for i in range(n.value)]

    def launch_comm(self, entry, tensors, comm, workspace=None, saved=None, stream=None):
        """Launch `entry` of a context-parallel plan as this rank of the NCCL communicator `comm`
        (cake_launch_comm): arguments as launch()."""
        arr, n, keep = _bindings(tensors)
        ws, ws_n = _area(workspace, self.workspace_bytes(), 'workspace')
        sv, sv_n = _area(saved, self.saved_bytes(), 'saved')
        _check(self._L, self._L.cake_launch_comm(self._handle(), entry.encode(), arr, n, ws, ws_n, sv, sv_n,
                                                 comm._handle(), _stream(stream)), f'launch_comm {entry}')
        del keep

    def validate(self, entry, tensors):
        """Check the tensors {name: tensor} of `entry` against the plan (host only, no GPU needed)."""
        arr, n, keep = _bindings(tensors)
        _check(self._L, self._L.cake_validate(self._handle(), entry.encode(), arr, n), f'validate {entry}')
        del keep

    def finalize(self):
        """Finalize again (cake_plan_finalize): after set_param-like changes, and before launching
        on a workspace whose memory was used for something else since the last launch at that
        address (the next launch then writes the chunk tables again)."""
        _check(self._L, self._L.cake_plan_finalize(self._handle()), 'finalize')

    def launch(self, entry, tensors, workspace=None, saved=None, stream=None):
        """Launch `entry` on `stream` in the current CUDA context. tensors: {name: tensor}, each a
        torch tensor, an object with __cuda_array_interface__ or __dlpack__ (device memory), a
        cake Tensor struct, or None (an optional tensor left out). workspace and saved: a device
        address (int, of at least workspace_bytes() / saved_bytes() bytes, 256-byte aligned) or a
        tensor-like object holding them; None when the plan needs none. stream: a CUstream as an int,
        an object with .cuda_stream (torch.cuda.Stream) or __cuda_stream__; None: torch's current
        stream when torch is imported, else the default stream."""
        arr, n, keep = _bindings(tensors)
        ws, ws_n = _area(workspace, self.workspace_bytes(), 'workspace')
        sv, sv_n = _area(saved, self.saved_bytes(), 'saved')
        _check(self._L, self._L.cake_launch(self._handle(), entry.encode(), arr, n, ws, ws_n, sv, sv_n,
                                            _stream(stream)), f'launch {entry}')
        del keep


def _area(obj, need, what):
    if obj is None:
        if need:
            raise Error(ERR_ARGUMENT, f'the plan needs {need} {what} bytes and no {what} was given',
                        'CAKE_ERR_ARGUMENT', what)
        return 0, 0
    if isinstance(obj, int):
        return obj, need
    return _address_and_bytes(obj)


def _prod(xs):
    n = 1
    for x in xs:
        n *= int(x)
    return n


def _address_and_bytes(obj):
    """(device address, bytes) of a buffer of any dtype: torch, __cuda_array_interface__, __dlpack__."""
    mod = type(obj).__module__ or ''
    if mod.startswith('torch') and hasattr(obj, 'data_ptr'):
        if not obj.is_contiguous():
            raise Error(ERR_ARGUMENT, 'a workspace or saved tensor must be contiguous', 'CAKE_ERR_ARGUMENT')
        return obj.data_ptr(), obj.numel() * obj.element_size()
    cai = getattr(obj, '__cuda_array_interface__', None)
    if cai is not None:
        return cai['data'][0], _prod(cai['shape']) * int(cai['typestr'][2:])
    if hasattr(obj, '__dlpack__'):
        cap = obj.__dlpack__()
        dl = _DLTensor.from_address(_capsule_pointer(cap))
        return (dl.data or 0) + dl.byte_offset, _prod(dl.shape[i] for i in range(dl.ndim)) * dl.dtype.bits // 8
    raise TypeError(f'not a device buffer: {type(obj).__name__} (an int address, torch, '
                    '__cuda_array_interface__ or __dlpack__)')


def _stream(s):
    if s is None:
        import sys
        torch = sys.modules.get('torch')
        if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
            s = torch.cuda.current_stream()
        else:
            return None
    if isinstance(s, int):
        return s or None
    if hasattr(s, '__cuda_stream__'):
        return s.__cuda_stream__()[1] or None
    if hasattr(s, 'cuda_stream'):
        return s.cuda_stream or None
    raise TypeError(f'not a CUDA stream: {type(s).__name__}')


def _bindings(tensors):
    items = list(tensors.items())
    arr = (_lib.Binding * max(len(items), 1))()
    keep = []
    for i, (name, obj) in enumerate(items):
        t, owner = _tensor(obj)
        nb = name.encode()
        keep += [nb, owner]
        arr[i].name, arr[i].tensor = nb, t
    return arr, len(items), keep


def tensor(data, dtype, shape, strides=None):
    """A cake Tensor of a device address: dtype 'bf16', 'f16', 'f32', 'i32' (or a cake_dtype), shape,
    strides in elements (None: contiguous)."""
    if len(shape) > _lib.MAX_RANK or (strides is not None and len(strides) != len(shape)):
        raise Error(ERR_TENSOR, f'rank {len(shape)} (at most {_lib.MAX_RANK}, strides of the same rank)',
                    'CAKE_ERR_TENSOR')
    x = _lib.Tensor()
    x.data, x.dtype, x.rank = int(data), DTYPES.get(dtype, dtype), len(shape)
    for i, s in enumerate(shape):
        x.shape[i] = int(s)
        if strides is not None:
            x.strides[i] = int(strides[i])
    return x


def _contiguous_strides(shape):
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return out[::-1]


def _strides_or_none(shape, strides):
    """None when the strides are the row-major contiguous ones (axes of extent 1 may have any)."""
    if strides is None:
        return None
    cs = _contiguous_strides(shape)
    return None if all(n == 1 or a == b for n, a, b in zip(shape, strides, cs)) else list(strides)


_TYPESTR = {'<f4': F32, '<f2': F16, '<i4': I32, '<V2': BF16}  # __cuda_array_interface__ ('<V2': bf16 by convention)
_DL = {(2, 32): F32, (2, 16): F16, (0, 32): I32, (4, 16): BF16}  # DLPack (code, bits): kDLFloat 2, kDLInt 0, kDLBfloat 4


def _tensor(obj):
    """(cake Tensor, an object to keep alive until the call returns) of a tensor-like object."""
    if obj is None:
        return _lib.Tensor(), None
    if isinstance(obj, _lib.Tensor):
        return obj, None
    mod = type(obj).__module__ or ''
    if mod.startswith('torch') and hasattr(obj, 'data_ptr'):
        import torch
        dt = {torch.bfloat16: BF16, torch.float16: F16, torch.float32: F32, torch.int32: I32}.get(obj.dtype)
        if dt is None:
            raise Error(ERR_TENSOR, f'torch dtype {obj.dtype} is none of bf16, f16, f32, i32', 'CAKE_ERR_TENSOR')
        shape = list(obj.shape)
        return tensor(obj.data_ptr(), dt, shape, _strides_or_none(shape, list(obj.stride()))), obj
    cai = getattr(obj, '__cuda_array_interface__', None)
    if cai is not None:
        dt = _TYPESTR.get(cai['typestr'])
        if dt is None:
            raise Error(ERR_TENSOR, f"typestr {cai['typestr']} is none of bf16, f16, f32, i32", 'CAKE_ERR_TENSOR')
        shape = list(cai['shape'])
        st = cai.get('strides')
        if st is not None:
            st = [s // ELEM_BYTES[dt] for s in st]
        return tensor(cai['data'][0], dt, shape, _strides_or_none(shape, st)), obj
    if hasattr(obj, '__dlpack__'):
        return _from_dlpack(obj)
    raise TypeError(f'not a tensor: {type(obj).__name__} (torch, __cuda_array_interface__ or __dlpack__)')


class _DLDevice(C.Structure):
    _fields_ = [('device_type', C.c_int32), ('device_id', C.c_int32)]


class _DLDataType(C.Structure):
    _fields_ = [('code', C.c_uint8), ('bits', C.c_uint8), ('lanes', C.c_uint16)]


class _DLTensor(C.Structure):  # DLTensor, the head of DLManagedTensor
    _fields_ = [('data', C.c_void_p), ('device', _DLDevice), ('ndim', C.c_int32), ('dtype', _DLDataType),
                ('shape', C.POINTER(C.c_int64)), ('strides', C.POINTER(C.c_int64)), ('byte_offset', C.c_uint64)]


def _capsule_pointer(cap):
    get = C.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = C.c_void_p, [C.py_object, C.c_char_p]
    return get(cap, b'dltensor')


def _from_dlpack(obj):
    # An unversioned "dltensor" capsule, read and not consumed: its destructor returns it to the
    # producer when the capsule is collected, and `obj` itself owns the memory meanwhile.
    cap = obj.__dlpack__()
    dl = _DLTensor.from_address(_capsule_pointer(cap))
    dt = _DL.get((dl.dtype.code, dl.dtype.bits))
    if dt is None or dl.dtype.lanes != 1:
        raise Error(ERR_TENSOR, f'DLPack dtype (code {dl.dtype.code}, bits {dl.dtype.bits}, lanes '
                    f'{dl.dtype.lanes}) is none of bf16, f16, f32, i32', 'CAKE_ERR_TENSOR')
    shape = [dl.shape[i] for i in range(dl.ndim)]
    st = [dl.strides[i] for i in range(dl.ndim)] if dl.strides else None
    return tensor((dl.data or 0) + dl.byte_offset, dt, shape, _strides_or_none(shape, st)), (obj, cap)


LAYOUTS = ('contiguous', 'zigzag', 'zigzag_per_document')  # cake_layout, in order


class Comm:
    """One rank's communicator (cake_comm): Comm.nccl(id, R, rank), Comm.from_nccl(pointer), or
    one of Comm.local_group(R). Destroyed with close() or when collected (a wrapped NCCL
    communicator is left to its owner)."""

    def __init__(self, handle):
        self._L = _lib.runtime()
        self._h = handle
        self._finalizer = weakref.finalize(self, self._L.cake_comm_destroy, handle.value)

    def _handle(self):
        if not self._finalizer.alive:
            raise Error(ERR_ARGUMENT, 'the communicator is closed', 'CAKE_ERR_ARGUMENT')
        return self._h

    def close(self):
        self._finalizer()

    @property
    def rank(self):
        return self._L.cake_comm_rank(self._handle())

    @property
    def size(self):
        return self._L.cake_comm_size(self._handle())

    @staticmethod
    def unique_id():
        """A new NCCL id (bytes) for Comm.nccl; made on one rank and handed to the others."""
        L = _lib.runtime()
        buf = (C.c_uint8 * 128)()
        _check(L, L.cake_comm_unique_id(buf), 'comm_unique_id')
        return bytes(buf)

    @staticmethod
    def nccl(uid, R, rank):
        """Rank `rank` of an NCCL communicator of R ranks (cake_comm_init_nccl)."""
        L = _lib.runtime()
        if len(uid) != 128:
            raise Error(ERR_ARGUMENT, f'the NCCL id has {len(uid)} bytes, not 128', 'CAKE_ERR_ARGUMENT')
        h = C.c_void_p()
        _check(L, L.cake_comm_init_nccl((C.c_uint8 * 128)(*uid), int(R), int(rank), C.byref(h)), 'comm_nccl')
        return Comm(h)

    @staticmethod
    def from_nccl(pointer):
        """Wrap a caller's ncclComm_t (an int address), left alone on close (cake_comm_from_nccl)."""
        L = _lib.runtime()
        h = C.c_void_p()
        _check(L, L.cake_comm_from_nccl(C.c_void_p(int(pointer)), C.byref(h)), 'comm_from_nccl')
        return Comm(h)

    @staticmethod
    def local_group(R):
        """R in-process ranks on the current device (cake_comm_init_local), for launch_group."""
        L = _lib.runtime()
        hs = (C.c_void_p * max(int(R), 1))()
        _check(L, L.cake_comm_init_local(int(R), hs), 'comm_local_group')
        return [Comm(C.c_void_p(hs[i])) for i in range(int(R))]


def launch_group(plans, entry, tensors, workspaces, comms, saveds=None, streams=None):
    """Launch `entry` on an in-process group (cake_launch_group): plans[r], tensors[r] ({name:
    tensor}), workspaces[r], saveds[r] and streams[r] are rank r's (as Plan.launch takes them);
    comms from Comm.local_group. Everything is checked before anything is launched."""
    R = len(plans)
    if not (len(tensors) == len(workspaces) == len(comms) == R) or (saveds is not None and len(saveds) != R) or \
            (streams is not None and len(streams) != R):
        raise Error(ERR_ARGUMENT, f'launch_group: {R} plans, but {len(tensors)} tensor sets, {len(workspaces)} '
                    f'workspaces and {len(comms)} communicators', 'CAKE_ERR_ARGUMENT')
    L = _lib.runtime()
    keep, arrs = [], (C.POINTER(_lib.Binding) * max(R, 1))()
    nb, ws, wsn = (C.c_int * max(R, 1))(), (C.c_uint64 * max(R, 1))(), (C.c_size_t * max(R, 1))()
    sv, svn = (C.c_uint64 * max(R, 1))(), (C.c_size_t * max(R, 1))()
    ph, ch, st = (C.c_void_p * max(R, 1))(), (C.c_void_p * max(R, 1))(), (C.c_void_p * max(R, 1))()
    for r in range(R):
        arr, n, k = _bindings(tensors[r])
        keep.append((arr, k))
        arrs[r], nb[r] = C.cast(arr, C.POINTER(_lib.Binding)), n
        ws[r], wsn[r] = _area(workspaces[r], plans[r].workspace_bytes(), 'workspace')
        sv[r], svn[r] = _area(saveds[r] if saveds is not None else None, plans[r].saved_bytes(), 'saved')
        ph[r], ch[r] = plans[r]._handle().value, comms[r]._handle().value
        st[r] = _stream(streams[r] if streams is not None else None)
    _check(L, L.cake_launch_group(ph, R, entry.encode(), arrs, nb, ws, wsn, sv, svn, ch, st), f'launch_group {entry}')
    del keep


def partition(cu_seqlens, R, rank, layout='zigzag', align=0, T=None):
    """The tokens rank `rank` of `R` owns when the packed sequence `cu_seqlens` (host offsets
    0..T) is split by `layout` (cake_partition): a list of fragments, each a dict with start,
    end (global tokens [start, end)), local_start, doc, continues, continued, prev_rank and
    next_rank, and the rank's local cu_seqlens (one local document per fragment). align: 0, or
    a chunk size: every cut inside a document at a multiple of it from the document's start."""
    L = _lib.runtime()
    if layout not in LAYOUTS:
        raise Error(ERR_ARGUMENT, f"unknown layout '{layout}' (one of {', '.join(LAYOUTS)})", 'CAKE_ERR_ARGUMENT')
    arr = _offsets_i32(cu_seqlens, None)
    ndocs, T = len(arr) - 1, arr[len(arr) - 1] if T is None else int(T)
    n = C.c_int64()
    args = (arr, ndocs, T, int(R), int(rank), LAYOUTS.index(layout), int(align))
    _check(L, L.cake_partition(*args, None, 0, C.byref(n), None), 'partition')
    frags = (_lib.Fragment * max(n.value, 1))()
    local = (C.c_int32 * (n.value + 1))()
    _check(L, L.cake_partition(*args, frags, n.value, C.byref(n), local), 'partition')
    names = [f[0] for f in _lib.Fragment._fields_]
    return [{k: getattr(frags[i], k) for k in names} for i in range(n.value)], list(local)

