#!/usr/bin/env python3
"""dmm_accuracy.py - decay_mm / decay_mm_t as lowered (lowering/lower_decay_grad.c),
replayed step by step in NumPy float32 against the float64 result, on inputs
drawn like test_ops' (tests/gpu/ops.cake: m_dmm, m_dmmt under strong decay,
m_dmm1, m_dmmt1 under weak decay, C = 64, K = 128; grads, K = 32).

Schemes: 'elem' (f32 element by element), 'bf16' (blocked, bf16 operands off
the diagonal blocks), 'bf16x3' (blocked, both operands split into bf16 hi and
lo, lo*hi + hi*lo + hi*hi). Every f32 operation rounds once, as here; exp is
ex2.approx.ftz(f32(x * log2 e)) with a random relative error up to 2^-22
(results below 2^-126 flushed to 0); one mma.sync k-step adds its exact
products to the f32 accumulator with one rounding (to nearest, or toward zero
with 'rz'). The GPU's m = tril(bf16 @ bf16) is its f32 rounding, its cumsum a
sequential f32 sum.

usage: scripts/dmm_accuracy.py SCHEME [SEEDS] [rz]   (needs numpy)
Prints RMS(error) / RMS(reference) per output, as test_ops' err_ratio.
"""
import numpy as np, sys
f32 = np.float32
rng_ex = None

def bf16(x):
    x = np.asarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    r = ((u >> 16) & 1) + 0x7FFF
    u2 = ((u + r) & 0xFFFF0000).astype(np.uint32)
    return u2.view(np.float32)

def exp32(d):
    """lk_exp: ex2.approx.ftz(f32(d * log2e)); the approximation as a relative error of up to 2^-22"""
    t = (np.asarray(d, np.float32) * f32(1.4426950408889634)).astype(np.float64)
    e = np.exp2(t) * (1 + rng_ex.uniform(-1, 1, np.shape(t)) * 2.0**-22)
    e = e.astype(np.float32)
    e[e < 2.0**-126] = 0
    return e

def mma(c, a, b, rz=False):
    """one k16 step: f32 C + exact products, rounded once (rz: toward zero)"""
    d = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    if not rz:
        return d.astype(np.float32)
    r = d.astype(np.float32)
    over = np.abs(r.astype(np.float64)) > np.abs(d)
    r[over] = np.nextafter(r[over], f32(0))
    return r

def split(v):
    h = bf16(v)
    l = bf16((v - h).astype(np.float32))
    return h, l

def offdiag_prod(c, a, b, scheme, rz):
    if scheme == 'bf16':
        return mma(c, bf16(a), bf16(b), rz)
    ah, al = split(a)
    bh, bl = split(b)
    c = mma(c, al, bh, rz)
    c = mma(c, ah, bl, rz)
    return mma(c, ah, bh, rz)

def blocked(m, x, g, t, scheme, rz=False):
    C, K = x.shape
    nb = C // 16
    out = np.zeros((C, K), np.float32)
    d = np.ones((C, K), np.float32)
    for B in range(nb):
        R0 = 16 * B
        for i in range(1, 16):
            d[R0 + i] = exp32(g[R0 + i] - g[R0 + i - 1])
    # diagonal blocks
    for B in range(nb):
        R0 = 16 * B
        acc_t = [None] * 16
        for r in range(16):
            e = None
            if not t:
                acc = m[R0 + r, R0 + r] * x[R0 + r]
            else:
                acc_t[r] = m[R0 + r, R0 + r] * x[R0 + r]
            for j in range(r - 1, -1, -1):
                e = d[R0 + r] if j == r - 1 else e * d[R0 + j + 1]
                if not t:
                    acc = acc + m[R0 + r, R0 + j] * (x[R0 + j] * e)
                else:
                    acc_t[j] = acc_t[j] + m[R0 + r, R0 + j] * (x[R0 + r] * e)
            if not t:
                out[R0 + r] = acc
        if t:
            for j in range(16):
                out[R0 + j] = acc_t[j]
    if nb == 1:
        return out
    xp = np.zeros((C, K), np.float32)
    step = np.zeros((nb, K), np.float32)
    for B in range(nb):
        R0 = 16 * B
        if not t and B < nb - 1:
            p = exp32(g[R0 + 16] - g[R0 + 15])
            for i in range(15, -1, -1):
                if i < 15:
                    p = p * d[R0 + i + 1]
                xp[R0 + i] = x[R0 + i] * p
            step[B] = p
        if t:
            P = [np.ones(K, np.float32)]
            for i in range(1, 16):
                P.append(d[R0 + 1] if i == 1 else P[i - 1] * d[R0 + i])
            if B > 0:
                for i in range(16):
                    xp[R0 + i] = x[R0 + i] * P[i] if i else x[R0 + i]
            if B < nb - 1:
                step[B] = P[15] * exp32(g[R0 + 16] - g[R0 + 15])
    for ob in range(nb - 1):
        acc = np.zeros((16, K), np.float32)
        if not t:
            I = ob + 1
            for J in range(I):
                acc = offdiag_prod(acc * step[J], m[16 * I:16 * I + 16, 16 * J:16 * J + 16],
                                   xp[16 * J:16 * J + 16], scheme, rz)
            rows = np.arange(16 * I, 16 * I + 16)
            out[rows] = out[rows] + exp32(g[rows] - g[16 * I]) * acc
        else:
            J = ob
            for k, I in enumerate(range(nb - 1, J, -1)):
                sc = step[I] if k else np.ones(K, np.float32)
                acc = offdiag_prod(acc * sc, m[16 * I:16 * I + 16, 16 * J:16 * J + 16].T,
                                   xp[16 * I:16 * I + 16], scheme, rz)
            rows = np.arange(16 * J, 16 * J + 16)
            out[rows] = out[rows] + exp32(g[16 * (J + 1)] - g[rows]) * acc
    return out

def elem(m, x, g, t):
    C, K = x.shape
    out = np.zeros((C, K), np.float32)
    for i in range(C):
        acc = np.zeros(K, np.float32)
        for tt in (range(0, i + 1) if not t else range(i, C)):
            dd = g[i] - g[tt] if not t else g[tt] - g[i]
            mv = m[i, tt] if not t else m[tt, i]
            acc = acc + (mv * x[tt]) * exp32(dd)
        out[i] = acc
    return out

def exact(m, x, g, t):
    E = np.exp(g[:, None, :] - g[None, :, :])  # [r, j, K]
    mm = np.tril(m)[:, :, None] * E
    return np.einsum('rjk,jk->rk', mm, x) if not t else np.einsum('rjk,rk->jk', mm, x)

def cumsum32(v):
    out = np.zeros_like(v, dtype=np.float32)
    s = np.zeros(v.shape[1], np.float32)
    for i in range(v.shape[0]):
        s = s + v[i]
        out[i] = s
    return out

def run(scheme, seed, rz=False):
    global rng_ex
    rng = np.random.default_rng(seed)
    rng_ex = np.random.default_rng(seed + 1000)
    cu = [0, 100, 101, 300]
    H, C, DK, D = 3, 64, 128, 32
    T = 300
    xk = rng.standard_normal((T, H, DK)).astype(np.float32)
    yk = rng.standard_normal((T, H, DK)).astype(np.float32)
    fx = ((np.floor(rng.uniform(0, 1, (T, H, D)) * 128) - 64 + 0.5) / 16).astype(np.float32)
    fy = rng.standard_normal((T, H, D)).astype(np.float32)
    se = {k: 0.0 for k in ('m_dmm', 'm_dmmt', 'm_dmm1', 'm_dmmt1', 'grads')}
    sr = dict(se)
    for n in range(3):
        for c0 in range(cu[n], cu[n + 1], C):
            nv = min(C, cu[n + 1] - c0)
            for h in range(H):
                def tile(arr, w):
                    t_ = np.zeros((C, w), np.float32)
                    t_[:nv] = arr[c0:c0 + nv, h]
                    return t_
                a, b = tile(xk, DK), tile(yk, DK)
                md64 = np.tril(bf16(a).astype(np.float64) @ bf16(b).astype(np.float64).T) * 0.0625
                md = md64.astype(np.float32)
                valid = (np.arange(C) < nv)[:, None]
                gs64 = np.cumsum(np.where(valid, -4.5 - np.abs(b.astype(np.float64)) * 0.5, 0.0), 0)
                gw64 = np.cumsum(np.where(valid, -np.abs(a.astype(np.float64)) * 0.1, 0.0), 0)
                gs = cumsum32(np.where(valid, f32(-4.5) - np.abs(b) * f32(0.5), f32(0)).astype(np.float32))
                gw = cumsum32(np.where(valid, -np.abs(a) * f32(0.1), f32(0)).astype(np.float32))
                for name, x, g, g64, t in (('m_dmm', b, gs, gs64, 0), ('m_dmmt', a, gs, gs64, 1),
                                           ('m_dmm1', b, gw, gw64, 0), ('m_dmmt1', a, gw, gw64, 1)):
                    ref = exact(md64, x.astype(np.float64), g64, t)[:nv]
                    got = (elem(md, x, g, t) if scheme == 'elem' else blocked(md, x, g, t, scheme, rz))[:nv]
                    se[name] += ((got - ref) ** 2).sum()
                    sr[name] += (ref ** 2).sum()
                # grads (elementwise kernel): D = 32
                a, b = tile(fx, D), tile(fy, D)
                md64 = np.tril(bf16(a).astype(np.float64) @ bf16(b).astype(np.float64).T) * 0.125
                md = md64.astype(np.float32)
                gd64 = np.cumsum(-np.abs(b.astype(np.float64)) * 0.25, 0)
                gd = cumsum32((-np.abs(b) * f32(0.25)).astype(np.float32))
                ref = (exact(md64, b.astype(np.float64), gd64, 0) - exact(md64, a.astype(np.float64), gd64, 1))[:nv]
                if scheme == 'elem':
                    got = elem(md, b, gd, 0) - elem(md, a, gd, 1)
                else:
                    got = blocked(md, b, gd, 0, scheme, rz) - blocked(md, a, gd, 1, scheme, rz)
                got = got[:nv]
                se['grads'] += ((got - ref) ** 2).sum()
                sr['grads'] += (ref ** 2).sum()
    return {k: np.sqrt(se[k] / sr[k]) for k in se}

if __name__ == '__main__':
    scheme = sys.argv[1]
    rz = len(sys.argv) > 3 and sys.argv[3] == 'rz'
    for seed in range(int(sys.argv[2]) if len(sys.argv) > 2 else 1):
        r = run(scheme, seed, rz)
        print(scheme + (' rz' if rz else ''), seed, ' '.join(f'{k} {v:.2e}' for k, v in r.items()), flush=True)
