#!/usr/bin/env python3
"""ops_accuracy.py - the GPU formulas of tanh, log1p, expm1, logsigmoid and
silu (lowering/lower_math.c), replayed step by step in NumPy float32, against
the functions in float64 (the interpreter's), over a sweep of x.

Every f32 operation of the lowering (add, mul, div, fma, min, max, select,
copysign) rounds once, as here. The two fast units are modelled by their
documented bounds: ex2.approx.ftz.f32 with a relative error up to 2^-22
(results below 2^-126 flushed to 0), lg2.approx.f32 with an absolute error up
to 2^-22.6 on the logarithm of the mantissa. Each model is run with the unit
errors at 0, random within the bound, and at +bound and -bound. The result is
compared with the float64 value rounded to f32 (what the interpreter stores).

usage: scripts/ops_accuracy.py [--points N]   (needs numpy)
Prints the largest relative error of each function and where it occurs.
"""
import argparse
import math

import numpy as np

f32 = np.float32
MODEL = {"mode": "none", "rng": np.random.default_rng(1)}


def unit_error(shape, bound):
    mode = MODEL["mode"]
    if mode == "none":
        return np.zeros(shape)
    if mode == "+bound":
        return np.full(shape, bound)
    if mode == "-bound":
        return np.full(shape, -bound)
    return MODEL["rng"].uniform(-bound, bound, shape)


def ex2(y):
    """ex2.approx.ftz.f32"""
    y = np.asarray(y, np.float32)
    r = np.exp2(y.astype(np.float64)) * (1 + unit_error(y.shape, 2.0**-22))
    r = r.astype(np.float32)
    return np.where(np.abs(r) < 2.0**-126, f32(0), r)


def lg2(x):
    """lg2.approx.f32"""
    x = np.asarray(x, np.float32)
    x64 = x.astype(np.float64)
    m, e = np.frexp(x64)  # x = (2m) 2^(e-1), 2m in [1, 2)
    r = (e - 1) + np.log2(2 * m) + unit_error(x.shape, 2.0**-22.6)
    r = np.where(x > 0, r, np.log2(x64))  # 0 -> -inf, negative -> NaN
    r = np.where(np.isposinf(x64), np.inf, r)
    return r.astype(np.float32)


def fma(a, b, c):
    return (np.asarray(a, np.float64) * np.asarray(b, np.float64) + np.asarray(c, np.float64)).astype(np.float32)


def rnd(v):
    return np.asarray(v).astype(np.float32)


L2E = f32(1.4426950408889634)
L2E_LO = f32(1.4426950408889634 - float(L2E))
LN2 = f32(0.6931471805599453)
EXPM1_C = [1 / 40320, 1 / 5040, 1 / 720, 1 / 120, 1 / 24, 1 / 6, 1 / 2, 1]
ATANH_C = [1 / 13, 1 / 11, 1 / 9, 1 / 7, 1 / 5, 1 / 3, 1]


def horner(z, c):
    p = np.full_like(z, f32(c[0]))
    for k in c[1:]:
        p = fma(p, z, f32(k))
    return p


def exp_acc(x):
    xc = np.minimum(np.maximum(x, f32(-104)), f32(89))
    y = rnd(xc * L2E)
    err = fma(xc, L2E, -y)
    err = fma(xc, L2E_LO, err)
    t = rnd(err * LN2)
    return rnd(ex2(y) * rnd(t + f32(1)))


def expm1(x):
    h = rnd(x * f32(0.5))
    p = rnd(h * horner(h, EXPM1_C))
    small = rnd(p * rnd(p + f32(2)))
    big = rnd(exp_acc(x) - f32(1))
    return np.where(np.abs(x) < f32(1), small, big)


def log1p_series(x):
    s = rnd(x / rnd(x + f32(2)))
    q = horner(rnd(s * s), ATANH_C)
    return rnd(rnd(s + s) * q), s


def log1p(x):
    series, s = log1p_series(x)
    big = rnd(lg2(rnd(x + f32(1))) * LN2)
    return np.where(np.abs(s) <= f32(1 / 3), series, big)


def tanh(x):
    t = np.minimum(np.abs(x), f32(10))
    m = expm1(rnd(t + t))
    return np.copysign(rnd(m / rnd(m + f32(2))), x).astype(np.float32)


def logsigmoid(x):
    l, _ = log1p_series(exp_acc(-np.abs(x)))
    return rnd(-rnd(np.maximum(-x, f32(0)) + l))


def silu(x):
    e = exp_acc(-np.abs(x))
    s = rnd(np.where(x >= 0, f32(1), e) / rnd(e + f32(1)))
    return np.where(x == -np.inf, f32(-0.0), rnd(x * s))


# the interpreter's definitions (compiler/interp.c), in float64
REF = {
    "tanh": np.tanh,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "logsigmoid": lambda x: -(np.maximum(-x, 0) + np.log1p(np.exp(-np.abs(x)))),
    "silu": lambda x: np.where(x == -np.inf, -0.0, x / (1 + np.exp(-x))),
}
GPU = {"tanh": tanh, "log1p": log1p, "expm1": expm1, "logsigmoid": logsigmoid, "silu": silu}


def sweep(points):
    mags = 2.0 ** np.linspace(-40, 7, points)
    near = np.concatenate([-1 + 2.0 ** -np.arange(1, 25), [88.72, 88.7228, 88.73, 87.3, 87.34]])
    return np.unique(np.concatenate([-mags, [0.0], mags, near]).astype(np.float32))


SPECIAL = np.array([np.nan, 0.0, -0.0, np.inf, -np.inf, -1.0, -2.0, 1e-30, -1e-30, 1e30, -1e30, 100, -100],
                   np.float32)


def special_mismatches(name):
    """inputs where the GPU formula and the interpreter differ in value, NaN-ness or the sign of 0"""
    got = GPU[name](SPECIAL).astype(np.float64)
    ref = REF[name](SPECIAL.astype(np.float64)).astype(np.float32).astype(np.float64)
    out = []
    for x, g, r in zip(SPECIAL, got, ref):
        same = (np.isnan(g) and np.isnan(r)) or (g == r and np.signbit(g) == np.signbit(r))
        if not same and not (np.isfinite(r) and r != 0 and abs(g - r) <= 2.0**-20 * abs(r)):
            out.append(f"{name}({x:g}) = {g:g}, interpreter {r:g}")
    return out


def relative_errors(got, ref):
    ref = ref.astype(np.float32).astype(np.float64)  # stored as f32
    got = got.astype(np.float64)
    same = (got == ref) | (np.isnan(got) & np.isnan(ref))
    rel = np.abs(got - ref) / np.maximum(np.abs(ref), 2.0**-126)
    return np.where(same, 0.0, rel), same


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=200001, help="magnitudes per sign, 2^-40 .. 2^7")
    args = ap.parse_args()
    xs = sweep(args.points)
    np.seterr(all="ignore")
    # e^-|x| < 2^-126 flushes: logsigmoid(x > 87.3) and silu(x < -87.3) are -0 there
    flush = {"logsigmoid": lambda x: x > 87.33, "silu": lambda x: x < -87.33}
    worst = {}
    for mode in ["none", "random", "+bound", "-bound"]:
        MODEL["mode"] = mode
        print(f"fast units: {mode}")
        for name in GPU:
            x = xs
            ref = REF[name](x.astype(np.float64))
            got = GPU[name](x)
            rel, same = relative_errors(got, ref)
            bad_special = ~np.isfinite(rel) | (np.isnan(got) != np.isnan(ref.astype(np.float32)))
            keep = ~flush[name](x) if name in flush else np.ones_like(x, bool)
            r = np.where(keep & np.isfinite(rel), rel, 0)
            i = int(np.argmax(r))
            flushed = np.max(np.abs(got.astype(np.float64) - ref)[~keep]) if (~keep).any() else 0.0
            print(f"  {name:10s} max rel err {r[i]:.3e} = {r[i] / 2**-24:4.1f} x 2^-24 at x = {x[i]:.9g}"
                  f"; NaN/inf mismatches {int(bad_special.sum())}"
                  + (f"; flushed range max abs err {flushed:.1e}" if name in flush else ""))
            worst[name] = max(worst.get(name, 0), r[i])
    MODEL["mode"] = "none"
    mism = [m for name in GPU for m in special_mismatches(name)]
    print("special values (NaN, +-0, +-inf, -1, -2, +-1e-30, +-1e30, +-100): " + ("; ".join(mism) or "all as the interpreter"))
    print("worst over the models: " + ", ".join(f"{k} {v:.2e} ({v / 2**-24:.1f} x 2^-24)" for k, v in worst.items()))


if __name__ == "__main__":
    main()
