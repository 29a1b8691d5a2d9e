"""cake.autograd - a training program (a forward entry and a backward entry) as a
torch.autograd.Function, on the GPU through a package or on the CPU through the interpreter.

The convention that pairs the two entries is the language's naming one: the backward takes the
gradient of each forward output `x` as an input `dx` and returns the gradient of each forward
input `y` as an output `dy`; tensors of role `save` written by the forward are handed to the
backward (they live in the saved area on the GPU). Nothing here knows a particular program.

    op = cake.autograd.TrainingOp('kda_train', package=pkg, options={'gate': 'softplus'})
    o, ht = op(dict(q=q, k=k, v=v, g=g, beta=beta, A_log=A_log, dt_bias=dt_bias),
               outputs=('o', 'ht'), cu_seqlens=cu)
    (o.float().square().sum() + ht.sum()).backward()

Inputs are converted to the program's dtypes (bf16, f32, ...) and made contiguous (a copy when
they are not); each gradient comes back in the dtype of the tensor the caller passed. On the CPU
(`spec=` and CPU tensors) the interpreter runs in exact double precision (`cakec run --exact`):
the program's math without rounding, so `torch.autograd.gradcheck` can check the backward entry
against finite differences of the forward entry.
"""
import os

from . import cpu as _cpu
from .runtime import ERR_ARGUMENT, Error

_TORCH_DTYPES = {'bf16': 'bfloat16', 'f16': 'float16', 'f32': 'float32', 'i32': 'int32'}


def _torch():
    import torch
    return torch


class TrainingOp:
    """program: the program's name. package: a cake.Package (GPU). spec: the .cake path or text
    (CPU interpreter). options, params: the variant and the param values. fwd, bwd: the entries."""

    def __init__(self, program, package=None, spec=None, options=None, params=None, fwd='fwd', bwd='bwd',
                 cakec=None):
        if package is None and spec is None:
            raise Error(ERR_ARGUMENT, 'TrainingOp needs a package (GPU) or a spec (CPU)', 'CAKE_ERR_ARGUMENT')
        self.program, self.package, self.spec = program, package, spec
        self.options, self.params = dict(options or {}), dict(params or {})
        self.fwd, self.bwd, self.cakec = fwd, bwd, cakec

    def __call__(self, inputs, outputs=('o',), cu_seqlens=None, dims=None):
        """Runs the forward entry on `inputs` ({name: tensor}; optional inputs left out, or given
        as None, are absent) and returns the forward outputs named in `outputs` (a name or a
        sequence), in that order, connected to autograd: their gradients flow back to every input
        that requires one. Forward outputs not asked for get a zero gradient."""
        _torch()
        if isinstance(outputs, str):
            outputs = (outputs,)
        inputs = {n: t for n, t in inputs.items() if t is not None}
        names = sorted(inputs)
        tensors = [inputs[n] for n in names]
        if not tensors:
            raise Error(ERR_ARGUMENT, 'TrainingOp: no inputs', 'CAKE_ERR_ARGUMENT')
        bad = [n for n, t in inputs.items() if not hasattr(t, 'is_cuda')]
        if bad:
            raise Error(ERR_ARGUMENT, f'TrainingOp: {bad} are not torch tensors', 'CAKE_ERR_ARGUMENT')
        on_gpu = tensors[0].is_cuda
        if any(t.is_cuda != on_gpu for t in tensors):
            raise Error(ERR_ARGUMENT, 'TrainingOp: inputs on the CPU and on the GPU mixed', 'CAKE_ERR_ARGUMENT')
        if on_gpu and len({t.device for t in tensors}) > 1:
            raise Error(ERR_ARGUMENT, 'TrainingOp: inputs on different GPUs', 'CAKE_ERR_ARGUMENT')
        if on_gpu and self.package is None:
            raise Error(ERR_ARGUMENT, 'TrainingOp: CUDA inputs need a package', 'CAKE_ERR_ARGUMENT')
        if not on_gpu and self.spec is None:
            raise Error(ERR_ARGUMENT, 'TrainingOp: CPU inputs need a spec (the interpreter runs it)',
                        'CAKE_ERR_ARGUMENT')
        runner = (_GpuRunner if on_gpu else _CpuRunner)(self, tuple(outputs), cu_seqlens, dims)
        out = _function().apply(runner, tuple(names), *tensors)
        return out if len(outputs) > 1 else out[0]


_FN = None


def _function():
    """The torch.autograd.Function, made on first use so that importing cake needs no torch."""
    global _FN
    if _FN is not None:
        return _FN
    torch = _torch()

    class _Training(torch.autograd.Function):
        @staticmethod
        def forward(ctx, runner, names, *tensors):
            ins = dict(zip(names, tensors))
            outs, state = runner.forward(ins)
            ret = tuple(outs[n] for n in runner.outputs)
            # the returned outputs go back to the backward through save_for_backward (never
            # through ctx attributes: an output kept there would keep itself and its graph alive)
            ctx.runner, ctx.names, ctx.state = runner, names, state
            ctx.save_for_backward(*tensors, *ret)
            return ret

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, *grads):
            saved = ctx.saved_tensors
            n_in = len(ctx.names)
            ins = dict(zip(ctx.names, saved[:n_in]))
            outs = dict(zip(ctx.runner.outputs, saved[n_in:]))
            gin = {'d' + n: g for n, g in zip(ctx.runner.outputs, grads) if g is not None}
            d = ctx.runner.backward(ins, outs, gin, ctx.state)  # (again with retain_graph: the same)
            res = []
            for i, n in enumerate(ctx.names):
                g = d.get('d' + n) if ctx.needs_input_grad[2 + i] else None
                if ctx.needs_input_grad[2 + i] and g is None:
                    raise Error(ERR_ARGUMENT, f"the backward entry '{ctx.runner.op.bwd}' writes no 'd{n}': "
                                f"input '{n}' cannot require a gradient", 'CAKE_ERR_ARGUMENT')
                res.append(None if g is None else g.to(ins[n].dtype))
            return (None, None) + tuple(res)

    _FN = _Training
    return _FN


def _zero_grads(tensors, outputs, given, like):
    """d<X> = zeros for every forward output X not asked for whose gradient the backward needs
    (tensors: {name: (role, dtype, optional)}); optional ones stay absent."""
    torch = _torch()
    out = {}
    for x, t in like.items():
        d = 'd' + x
        if x in outputs or d in given or d not in tensors:
            continue
        role, _, optional = tensors[d]
        if role == 'in' and not optional:
            out[d] = torch.zeros_like(t)
    return out


class _GpuRunner:
    """The package path: plan, validate and launch on the device of the inputs, on torch's current
    stream there."""

    def __init__(self, op, outputs, cu_seqlens, dims):
        self.op, self.outputs, self.cu, self.dims_given = op, outputs, cu_seqlens, dict(dims or {})

    def _meta(self, prog):
        variant = prog.variant
        for p in self.op.package.manifest['programs']:
            if p['name'] == self.op.program and p.get('variant', '') == variant:
                return p
        raise Error(ERR_ARGUMENT, f'no manifest entry for {self.op.program} [{variant}]', 'CAKE_ERR_ARGUMENT')

    def _infer_dims(self, ins):
        """Dims from the inputs' shapes, over the tensors of every variant of the program."""
        dims = dict(self.dims_given)
        metas = [p for p in self.op.package.manifest['programs'] if p['name'] == self.op.program]
        if not metas:
            raise Error(ERR_ARGUMENT, f"no program '{self.op.program}' in {self.op.package.path}", 'CAKE_ERR_ARGUMENT')
        roles = {d['name']: d['role'] for m in metas for d in m['dims']}
        tens = {t['name']: t for m in metas for t in m['tensors']}
        for n, x in ins.items():
            t = tens.get(n)
            if t is None:
                raise Error(ERR_ARGUMENT, f"program '{self.op.program}' has no tensor '{n}'", 'CAKE_ERR_ARGUMENT')
            if len(t['shape']) != x.dim():
                raise Error(ERR_ARGUMENT, f"'{n}' has {x.dim()} axes, the program declares {len(t['shape'])} "
                            f"({t['shape']})", 'CAKE_ERR_ARGUMENT')
            for ax, (e, size) in enumerate(zip(t['shape'], x.shape)):
                if isinstance(e, str) and roles.get(e) not in ('docs', 'chunks'):
                    if e in dims and dims[e] != size:
                        raise Error(ERR_ARGUMENT, f"dim {e}: '{n}' axis {ax} is {size}, another tensor said "
                                    f"{dims[e]}", 'CAKE_ERR_ARGUMENT')
                    dims[e] = int(size)
        return dims

    @staticmethod
    def _touched(meta, entry):
        """The tensors the stages of `entry` take as arguments."""
        stages = next(e['stages'] for e in meta['entries'] if e['name'] == entry)
        return {a['name'] for s in meta['stages'] if s['name'] in stages for a in s.get('args', [])}

    def _alloc(self, meta, plan, entry, role, skip):
        """Empty tensors for what `entry` writes with `role` (optional ones unless in skip)."""
        torch = _torch()
        touched = self._touched(meta, entry)
        out = {}
        for t in meta['tensors']:
            if t['role'] != role or t['name'] not in touched or t['name'] in skip:
                continue
            shape = [plan.dim(e) if isinstance(e, str) else e for e in t['shape']]
            out[t['name']] = torch.empty(shape, dtype=getattr(torch, _TORCH_DTYPES[t['dtype']]), device=self.device)
        return out

    def _convert(self, meta, xs):
        tens = {t['name']: t for t in meta['tensors']}
        torch = _torch()
        missing = [n for n in xs if n not in tens]
        if missing:
            raise Error(ERR_ARGUMENT, f"variant [{meta.get('variant', '')}] of '{self.op.program}' has no tensor "
                        f"{missing}", 'CAKE_ERR_ARGUMENT')
        return {n: x.detach().to(getattr(torch, _TORCH_DTYPES[tens[n]['dtype']])).contiguous() for n, x in xs.items()}

    def forward(self, ins):
        torch = _torch()
        op = self.op
        pkg = op.package
        self.device = next(iter(ins.values())).device
        with torch.cuda.device(self.device):
            dims = self._infer_dims(ins)
            plan = pkg.plan(op.program, op.options, dims, self.cu, op.params)
            meta = self._meta(plan.program)
            x = self._convert(meta, ins)
            opt_out = {t['name'] for t in meta['tensors'] if t['role'] == 'out' and t.get('optional')}
            outs = self._alloc(meta, plan, op.fwd, 'out', opt_out - set(self.outputs))
            missing = [n for n in self.outputs if n not in outs]
            if missing:
                raise Error(ERR_ARGUMENT, f"the entry '{op.fwd}' writes no {missing}", 'CAKE_ERR_ARGUMENT')
            saved = torch.empty(max(plan.saved_bytes(), 1), dtype=torch.uint8, device=self.device)
            ws = torch.empty(max(plan.workspace_bytes(), 1), dtype=torch.uint8, device=self.device)
            use = self._touched(meta, op.fwd)
            plan.launch(op.fwd, {n: t for n, t in {**x, **outs}.items() if n in use}, workspace=ws, saved=saved,
                        stream=torch.cuda.current_stream(self.device))
        # what the backward needs besides the inputs and the returned outputs (those come back
        # through save_for_backward): the plan, the saved area, and outputs not returned
        return outs, (plan, meta, saved, {n: t for n, t in outs.items() if n not in self.outputs})

    def backward(self, ins, outs, grads, state):
        torch = _torch()
        plan, meta, saved, others = state
        fwd_outs = {**others, **outs}
        tens = {t['name']: (t['role'], t['dtype'], t.get('optional', False)) for t in meta['tensors']}
        with torch.cuda.device(self.device):
            x = self._convert(meta, ins)
            g = self._convert(meta, {n: t for n, t in grads.items() if n in tens})
            g.update(self._convert(meta, _zero_grads(tens, self.outputs, g, fwd_outs)))
            # optional gradient outputs of absent inputs (dh0 without h0) are left unbound
            skip = {t['name'] for t in meta['tensors']
                    if t['role'] == 'out' and t.get('optional') and t['name'][1:] not in ins}
            bouts = self._alloc(meta, plan, self.op.bwd, 'out', skip | set(fwd_outs))
            ws = torch.empty(max(plan.workspace_bytes(), 1), dtype=torch.uint8, device=self.device)
            # a fresh workspace: finalizing again makes the launch write the chunk tables into it
            # (an allocator may hand out the forward's address again, with other data in it)
            plan.finalize()
            use = self._touched(meta, self.op.bwd)
            bind = {n: t for n, t in {**fwd_outs, **x, **g, **bouts}.items() if n in use}
            plan.launch(self.op.bwd, bind, workspace=ws, saved=saved, stream=torch.cuda.current_stream(self.device))
        return bouts


class _CpuRunner:
    """The interpreter path (`cakec run --exact --no-random`): double precision, no rounding."""

    def __init__(self, op, outputs, cu_seqlens, dims):
        self.op, self.outputs, self.cu, self.dims = op, outputs, cu_seqlens, dict(dims or {})

    def _run(self, entry, tensors):
        op = self.op
        return _cpu.run(op.spec, entry, tensors, dims=self.dims, cu_seqlens=self.cu, options=op.options,
                        params=op.params, exact=True, cakec=op.cakec, no_random=True)

    def forward(self, ins):
        torch = _torch()
        out = self._run(self.op.fwd, ins)
        missing = [n for n in self.outputs if n not in out]
        if missing:
            raise Error(ERR_ARGUMENT, f"the entry '{self.op.fwd}' writes no {missing}", 'CAKE_ERR_ARGUMENT')
        floats = [t.dtype for t in ins.values() if t.is_floating_point()]
        dtype = floats[0] if floats else torch.float64
        for d in floats[1:]:
            dtype = torch.promote_types(dtype, d)
        res = {n: out[n].to(dtype) for n in self.outputs}
        # the backward gets the outputs not returned here (saves, other outs) through the state
        return res, {n: t for n, t in out.items() if n not in self.outputs}

    def backward(self, ins, outs, grads, others):
        tens = _cpu.interface(self.op.spec, self.op.options, self.op.cakec)
        fwd_outs = {**others, **outs}
        zeros = _zero_grads(tens, self.outputs, grads, fwd_outs)
        # every forward output goes along (saves, and outputs a backward may read); cakec run
        # ignores those its entry does not read
        return self._run(self.op.bwd, {**ins, **fwd_outs, **grads, **zeros})


__all__ = ['TrainingOp']
