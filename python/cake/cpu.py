"""cake.cpu - one entry of a program on the CPU interpreter (the language's reference semantics),
through the CPU runner `cakec run`: tensors go in and come back as .npy files in a temporary
directory. For checking a spec against a reference without a GPU, and for gradcheck.

    out = cake.cpu.run('specs/kda/kda_fwd.cake', 'fwd', {'q': q, 'k': k, ...},
                       cu_seqlens=[0, 17, 64], options={'gate': 'softplus'}, exact=True)
    out['o']      # a float64 torch tensor (or a cake.cpu.Array without torch)

cakec is $CAKE_CAKEC, else build/bin/cakec of the source tree this package sits in, else the
one on PATH.
"""
import array
import ast
import os
import shutil
import struct
import subprocess
import sys
import tempfile

from .runtime import ERR_ARGUMENT, ERR_IO, Error, _options_text


class Array:
    """A float64 array without numpy or torch: shape and row-major values (array('d'))."""

    def __init__(self, shape, data):
        self.shape, self.data = tuple(shape), data

    def tolist(self):
        return list(self.data)


def cakec_path(cakec=None):
    """The cakec that runs specs (see the module's text)."""
    cands = [cakec, os.environ.get('CAKE_CAKEC'),
             os.path.join(os.path.dirname(__file__), '..', '..', 'build', 'bin', 'cakec')]
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
    found = shutil.which('cakec')
    if found:
        return found
    raise Error(ERR_IO, 'cakec not found: set $CAKE_CAKEC or put cakec on PATH', 'CAKE_ERR_IO')


def _flat(x):
    """(shape, flat list of floats or ints) of a torch tensor, numpy array, Array or nested list."""
    if isinstance(x, Array):
        return x.shape, list(x.data)
    if hasattr(x, 'detach'):  # torch
        x = x.detach().cpu()
        return tuple(x.shape), x.reshape(-1).tolist()
    if hasattr(x, 'shape') and hasattr(x, 'reshape'):  # numpy
        return tuple(x.shape), x.reshape(-1).tolist()
    shape, v = [], x
    while isinstance(v, (list, tuple)):
        shape.append(len(v))
        v = v[0] if v else None
    flat = list(x)
    for _ in range(len(shape) - 1):
        flat = [e for row in flat for e in row]
    return tuple(shape), flat


def _npy_bytes(shape, values):
    ints = all(isinstance(v, int) and not isinstance(v, bool) for v in values) and values
    descr, data = ('<i8', array.array('q', values)) if ints else ('<f8', array.array('d', map(float, values)))
    if sys.byteorder != 'little':
        data.byteswap()
    shp = repr(tuple(int(s) for s in shape))  # numpy's own spelling: (), (5,), (2, 3)
    head = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shp)
    pad = 64 - (10 + len(head) + 1) % 64
    head = head + ' ' * pad + '\n'
    return b'\x93NUMPY\x01\x00' + struct.pack('<H', len(head)) + head.encode('latin1') + data.tobytes()


def _npy_read(path):
    with open(path, 'rb') as f:
        raw = f.read()
    if raw[:6] != b'\x93NUMPY':
        raise Error(ERR_IO, f'{path}: not a .npy file', 'CAKE_ERR_IO')
    major = raw[6]
    n, at = (struct.unpack('<H', raw[8:10])[0], 10) if major == 1 else (struct.unpack('<I', raw[8:12])[0], 12)
    head = ast.literal_eval(raw[at:at + n].decode('latin1'))
    codes = {'<f8': 'd', '<f4': 'f', '<i4': 'i'}
    body = raw[at + n:]
    if head['descr'] == '<f2':  # array has no half type: struct decodes it
        return tuple(head['shape']), array.array('d', struct.unpack(f'<{len(body) // 2}e', body))
    if head['descr'] not in codes:
        raise Error(ERR_IO, f"{path}: dtype {head['descr']} is not read here", 'CAKE_ERR_IO')
    data = array.array(codes[head['descr']])
    data.frombytes(body)
    if sys.byteorder != 'little':
        data.byteswap()
    return tuple(head['shape']), data


def _as_output(shape, data, torch):
    if torch is None:
        return Array(shape, array.array('d', data) if data.typecode != 'd' else data)
    if data.typecode == 'i':  # i32 outputs
        return torch.tensor(list(data), dtype=torch.int32).reshape(shape)
    return torch.tensor(list(data), dtype=torch.float64).reshape(shape)


def _spec_path(spec, tmp):
    """A path for `spec`: a path (str or os.PathLike) as given, else the text written to a file."""
    if isinstance(spec, os.PathLike):
        spec = os.fspath(spec)
        if not os.path.isfile(spec):
            raise Error(ERR_IO, f'spec {spec} not found', 'CAKE_ERR_IO')
        return spec
    spec = str(spec)
    if '\n' not in spec and (os.path.isfile(spec) or spec.endswith('.cake')):
        if not os.path.isfile(spec):
            raise Error(ERR_IO, f'spec {spec} not found', 'CAKE_ERR_IO')
        return spec
    path = os.path.join(tmp, 'spec.cake')
    with open(path, 'w') as f:
        f.write(spec)
    return path


def _param_text(v):
    """An i32-looking value as an integer (cakec run takes i32 params only as integers)."""
    if isinstance(v, bool):
        raise Error(ERR_ARGUMENT, f'a parameter value cannot be a bool ({v})', 'CAKE_ERR_ARGUMENT')
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) < 2 ** 53):
        return str(int(v))
    return repr(float(v))


_INTERFACES = {}


def interface(spec, options=None, cakec=None):
    """{name: (role, dtype, optional)} of the tensors of the spec's variant chosen by `options`
    (the first variant when options leave several), from the compiler's checked program."""
    key = (os.fspath(spec) if isinstance(spec, os.PathLike) else str(spec), _options_text(options))
    if key in _INTERFACES:
        return _INTERFACES[key]
    tmp = tempfile.mkdtemp(prefix='cake-if-')
    try:
        args = [cakec_path(cakec), _spec_path(spec, tmp), '--emit=cir']
        if options:
            args += ['--option', _options_text(options)]
        p = subprocess.run(args, capture_output=True, text=True)
        if p.returncode != 0:
            raise Error(ERR_ARGUMENT, p.stderr.strip() or f'cakec exited with {p.returncode}', 'cakec')
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = {}
    for line in p.stdout.splitlines():
        if line.startswith('// variant') and out:
            break
        w = line.split()
        if len(w) >= 5 and w[0] == 'tensor' and w[3] == ':':
            out[w[2]] = (w[1], w[4].split('[')[0], w[-1] == 'optional')
    _INTERFACES[key] = out
    return out


def run(spec, entry, tensors=None, dims=None, cu_seqlens=None, options=None, params=None, exact=False,
        seed=None, cakec=None, temps=False, no_random=False):
    """Runs `entry` of the spec (a path, or the text of a spec) on the interpreter. tensors:
    {name: tensor-like} (torch, numpy, Array or nested lists); inputs not given are random from
    `seed` unless optional (then absent; no_random: an error instead). A tensor given as None is
    left out (--absent). exact: no rounding to bf16/f16/f32 anywhere. Returns
    {name: output} for every out and save tensor the entry writes (temps too with temps=True):
    float64 torch tensors when torch is importable, else Array. Errors raise cake.Error with
    cakec's message."""
    try:
        import torch
    except ImportError:
        torch = None
    tmp = tempfile.mkdtemp(prefix='cake-run-')
    try:
        spec_path = _spec_path(spec, tmp)
        args = [cakec_path(cakec), 'run', spec_path, '--entry', entry, '--out-dir', os.path.join(tmp, 'out')]
        if exact:
            args.append('--exact')
        if no_random:
            args.append('--no-random')
        if temps:
            args.append('--temps')
        if seed is not None:
            args += ['--seed', str(int(seed))]
        for k, v in (dims or {}).items():
            args += ['--dim', f'{k}={int(v)}']
        if cu_seqlens is not None:
            cu = cu_seqlens.tolist() if hasattr(cu_seqlens, 'tolist') else list(cu_seqlens)
            args += ['--cu-seqlens', ','.join(str(int(c)) for c in cu)]
        if options:
            args += ['--option', _options_text(options)]
        for k, v in (params or {}).items():
            args += ['--param', f'{k}={_param_text(v)}']
        for name, x in (tensors or {}).items():
            if x is None:
                args += ['--absent', name]
                continue
            path = os.path.join(tmp, f'in_{name}.npy')
            with open(path, 'wb') as f:
                f.write(_npy_bytes(*_flat(x)))
            args += ['--in', f'{name}={path}']
        p = subprocess.run(args, capture_output=True, text=True)
        if p.returncode != 0:
            raise Error(ERR_ARGUMENT, (p.stderr.strip() or f'cakec run exited with {p.returncode}'),
                        f'cakec run exit {p.returncode}', entry)
        out = {}
        odir = os.path.join(tmp, 'out')
        for fn in sorted(os.listdir(odir)) if os.path.isdir(odir) else []:
            if fn.endswith('.npy'):
                out[fn[:-4]] = _as_output(*_npy_read(os.path.join(odir, fn)), torch)
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


__all__ = ['Array', 'cakec_path', 'interface', 'run']
