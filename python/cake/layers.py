"""cake.layers - layer ops over the shipped training programs. cake.kda: KDA (Kimi Delta
Attention) training, forward and backward of the kda_train program through
cake.autograd.TrainingOp, with the forward's options.

    o, ht = cake.kda(q, k, v, g, beta, A_log=A_log, dt_bias=dt_bias, cu_seqlens=cu,
                     output_final_state=True)
    loss(o, ht).backward()        # dq, dk, dv, dg, dbeta, dA_log, ddt_bias, dh0

Shapes: q, k [T, H, K]; v [T, HV, V]; g [T, HV, K]; beta [T, HV]; A_log [HV]; dt_bias [HV, K];
initial_state [N, HV, K, V] (N documents); a leading batch axis of 1 is accepted and given
back. CUDA tensors run the package (`package`: a cake.Package or its path; default
$CAKE_PACKAGE, else build/package of this source tree); CPU tensors run the spec on the
interpreter in exact double precision (`spec`: default specs/kda/kda_train.cake here).
"""
import os

from .autograd import TrainingOp
from .runtime import ERR_ARGUMENT, Error, load

_HERE = os.path.dirname(os.path.abspath(__file__))
_PACKAGES = {}


def _package(package):
    if package is None:
        package = os.environ.get('CAKE_PACKAGE') or os.path.join(_HERE, '..', '..', 'build', 'package')
    if isinstance(package, (str, os.PathLike)):
        key = os.path.abspath(package)
        if key not in _PACKAGES:
            _PACKAGES[key] = load(key)
        return _PACKAGES[key]
    return package


def kda(q, k, v, g, beta, A_log=None, dt_bias=None, *, gate='softplus', qk_norm=True, beta_logits=True,
        scale=None, lower_bound=None, initial_state=None, output_final_state=False, cu_seqlens=None,
        save='ckpt', package=None, spec=None):
    """Returns (o, ht): ht is None unless output_final_state. gate: 'safe' (lower_bound *
    sigmoid), 'softplus', or 'external' (g is the log-decay; no A_log, dt_bias). save: 'ckpt'
    (the forward keeps nothing for the backward) or 'states' (it keeps every chunk's start
    state); both give the same bits."""
    batched = q.dim() == 4
    if batched:
        if q.shape[0] != 1:
            raise Error(ERR_ARGUMENT, f'kda: a batch axis must be 1 (pack documents with cu_seqlens), got '
                        f'{q.shape[0]}', 'CAKE_ERR_ARGUMENT')
        q, k, v, g, beta = (x.squeeze(0) for x in (q, k, v, g, beta))
    ins = dict(q=q, k=k, v=v, g=g, beta=beta)
    if gate != 'external':
        if A_log is None or dt_bias is None:
            raise Error(ERR_ARGUMENT, f"kda: gate '{gate}' needs A_log and dt_bias", 'CAKE_ERR_ARGUMENT')
        ins.update(A_log=A_log, dt_bias=dt_bias)
    elif A_log is not None or dt_bias is not None:
        raise Error(ERR_ARGUMENT, "kda: gate 'external' takes no A_log or dt_bias", 'CAKE_ERR_ARGUMENT')
    if initial_state is not None:
        ins['h0'] = initial_state
    params = {}
    if scale is not None:
        params['scale'] = scale
    if lower_bound is not None:
        params['lower_bound'] = lower_bound
    options = dict(gate=gate, qk_norm='true' if qk_norm else 'false',
                   beta_logits='true' if beta_logits else 'false', save=save)
    if q.is_cuda:
        op = TrainingOp('kda_train', package=_package(package), options=options, params=params)
    else:
        op = TrainingOp('kda_train', spec=spec or os.path.join(_HERE, '..', '..', 'specs', 'kda', 'kda_train.cake'),
                        options=options, params=params)
    outs = ('o', 'ht') if output_final_state else ('o',)
    res = op(ins, outputs=outs, cu_seqlens=cu_seqlens)
    o, ht = (res if output_final_state else (res, None))
    return (o.unsqueeze(0) if batched else o), ht


__all__ = ['kda']
