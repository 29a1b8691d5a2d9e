#!/usr/bin/env python3
"""bench_conv1d.py - Cake's causal depthwise conv1d (specs/conv1d/conv1d.cake,
cp = none) against fla's Triton causal_conv1d, forward and forward + backward,
in one run, on the same inputs, on the GPU machine.

Inputs (made here with torch, seed 1; width 4, D channels):
x, dy ~ N(0, 1) bf16 [T, D]; weight ~ N(0, 1/4) f32 [D, 4]; bias ~ N(0, 1)
f32 [D]; activation silu. Packed shapes pass cu_seqlens (and cu_seqlens_cpu)
to fla and cake_plan_set_docs to Cake. Cake is called through libcakert's
generic path (a plan, cake_launch with bindings by name) on the same torch
tensors, on torch's current stream: `fwd` (y) and `bwd` (dx, dw, dbias). fla
runs causal_conv1d(backend='triton') under no_grad for the forward and with
torch.autograd.grad for forward + backward. Both are timed with
triton.testing.do_bench (median, L2 flushed between runs). Cake's y, dx, dw
and dbias are compared with fla's (error ratio RMS(cake - fla) / RMS(fla)).
Each row gives the traffic floor at 4.28 TB/s: the forward reads x and
writes y (4 B per element), the backward reads x and dy and writes dx (6 B).

    python3 benchmarks/bench_conv1d.py --fla .anchor/fla --package .carry/package \
        --lib .carry/lib/libcakert.so --out /tmp/cake-out
    python3 benchmarks/bench_conv1d.py --package PKG --lib LIB --dry-run
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cakert import BF16, F32, Cake, cu_of, fla_packages, stand_ins  # noqa: E402
from cakert import tensor as cake_tensor  # noqa: E402

PROGRAM = 'conv1d'
W, BD = 4, 64
# the anchor's KCP workload is conv over 4096 channels of the packed sequence
SHAPES = {
    'c': dict(T=65536, D=4096, seqlens=[15945, 21845, 27746]),
    'b': dict(T=32768, D=4096),
    's': dict(T=65536, D=4096, seqlens=[256] * 256),
}
HBM_BPS = 4.28e12


def shape_name(s):
    n = f"T={s['T']} D={s['D']}"
    if s.get('seqlens'):
        n += f" {len(s['seqlens'])} docs"
    return n


def floors(T, D):
    """Traffic floors (ms) of the forward and of the backward."""
    return T * D * 4 / HBM_BPS * 1e3, T * D * 6 / HBM_BPS * 1e3


def tensor_specs(T, D):
    G = D // BD
    return dict(x=(BF16, (T, G, BD)), w=(F32, (G, BD, W)), bias=(F32, (G, BD)), y=(BF16, (T, G, BD)),
                dy=(BF16, (T, G, BD)), dx=(BF16, (T, G, BD)), dw=(F32, (G, BD, W)), dbias=(F32, (G, BD)))


def import_fla_conv(fla_root):
    """fla's causal_conv1d (the Triton autograd function) without fla/__init__.py and
    fla/modules/__init__.py (which pull in the layers and transformers)."""
    fla_packages(fla_root, 'fla.modules')
    from fla.modules.conv.causal_conv1d import causal_conv1d
    return causal_conv1d


def make_plan(cake, shape):
    T, D = shape['T'], shape['D']
    cu = cu_of(shape)
    prog, vs = cake.variant(PROGRAM, 'activation=silu,cp=none')
    return cake.plan(prog, dict(T=T, G=D // BD), cu), vs, cu


def dry_run(args, cake):
    for skey in args.shapes.split(','):
        shape = SHAPES[skey]
        plan, vs, _ = make_plan(cake, shape)
        named = list(stand_ins(tensor_specs(shape['T'], shape['D'])).items())
        plan.validate('fwd', named)
        plan.validate('bwd', named)
        ff, fb = floors(shape['T'], shape['D'])
        print(f'{shape_name(shape):<26} variant "{vs}" chunks {plan.chunks} workspace {plan.workspace_bytes:,d} B '
              f'floors fwd {ff:.3f} ms bwd {fb:.3f} ms; fwd, bwd bindings valid')
        plan.free()


def run_case(args, cake, fla_conv, skey):
    import torch
    import triton.testing

    shape = SHAPES[skey]
    T, D = shape['T'], shape['D']
    plan, vs, cu = make_plan(cake, shape)
    gen = torch.Generator(device='cuda')
    gen.manual_seed(1)

    def rn(*s, scale=1.0):
        return torch.randn(*s, generator=gen, device='cuda', dtype=torch.float32) * scale

    x = rn(T, D).to(torch.bfloat16)
    dy = rn(T, D).to(torch.bfloat16)
    w = rn(D, W, scale=0.5).contiguous()
    b = rn(D)
    y = torch.full((T, D), float('nan'), dtype=torch.bfloat16, device='cuda')
    dx = torch.full_like(y, float('nan'))
    dw = torch.full_like(w, float('nan'))
    db = torch.full_like(b, float('nan'))
    work = torch.empty(max(plan.workspace_bytes, 256), dtype=torch.uint8, device='cuda')
    specs = tensor_specs(T, D)
    ts = dict(x=x, w=w, bias=b, y=y, dy=dy, dx=dx, dw=dw, dbias=db)
    named = [(n, cake_tensor(ts[n], specs[n][1])) for n in specs]
    stream = torch.cuda.current_stream().cuda_stream
    fwd = plan.launcher('fwd', named, work.data_ptr(), 0, stream)
    bwd = plan.launcher('bwd', named, work.data_ptr(), 0, stream)

    def both():
        fwd()
        bwd()

    def bench(fn):
        return triton.testing.do_bench(fn, warmup=args.warmup, rep=args.rep, quantiles=[0.5, 0.2, 0.8])

    both()
    torch.cuda.synchronize()
    rec = dict(shape=skey, T=T, D=D, docs=len(shape.get('seqlens') or [T]), cake_variant=vs,
               workspace_bytes=plan.workspace_bytes)
    rec['cake_nonfinite'] = int(sum((~torch.isfinite(t.float())).sum().item() for t in (y, dx, dw, db)))
    rec['cake_fwd_ms'] = bench(fwd)
    rec['cake_bwd_ms'] = bench(bwd)
    rec['cake_fwdbwd_ms'] = bench(both)
    if fla_conv is not None:
        kw = dict(activation='silu', backend='triton')
        if cu is not None:
            kw.update(cu_seqlens=torch.tensor(cu, dtype=torch.int32, device='cuda'),
                      cu_seqlens_cpu=torch.tensor(cu, dtype=torch.long))
        xg, wg, bg = x[None].clone().requires_grad_(), w.clone().requires_grad_(), b.clone().requires_grad_()

        def fla_fwd():
            with torch.no_grad():
                return fla_conv(x[None], w, b, **kw)[0]

        def fla_fwdbwd():
            out = fla_conv(xg, wg, bg, **kw)[0]
            return torch.autograd.grad(out, (xg, wg, bg), dy[None])

        t0 = time.time()
        ry = fla_fwd()
        rdx, rdw, rdb = fla_fwdbwd()
        torch.cuda.synchronize()
        rec['fla_first_call_s'] = round(time.time() - t0, 2)
        rec['fla_fwd_ms'] = bench(fla_fwd)
        rec['fla_fwdbwd_ms'] = bench(fla_fwdbwd)
        both()
        torch.cuda.synchronize()
        for name, ours, theirs in (('y', y, ry), ('dx', dx, rdx), ('dw', dw, rdw), ('dbias', db, rdb)):
            r = theirs.reshape(ours.shape).double()
            d = ours.double() - r
            rec[f'vs_fla_{name}'] = (d.pow(2).mean().sqrt() / r.pow(2).mean().sqrt()).item()
    rec['floor_fwd_ms'], rec['floor_bwd_ms'] = floors(T, D)
    plan.free()
    return rec


def table(rows):
    nan = float('nan')
    print('\n| shape | fla fwd | cake fwd | ratio | fla fwd+bwd | cake fwd+bwd | ratio | cake bwd | '
          'floor fwd | floor bwd | vs fla y / dx / dw / dbias |')
    print('|' + '---|' * 11)
    for r in rows:
        ff, fb = r.get('fla_fwd_ms', [nan])[0], r.get('fla_fwdbwd_ms', [nan])[0]
        cf, cb = r['cake_fwd_ms'][0], r['cake_fwdbwd_ms'][0]
        errs = ' / '.join(f"{r.get('vs_fla_' + n, nan):.1e}" for n in ('y', 'dx', 'dw', 'dbias'))
        print(f"| {shape_name(SHAPES[r['shape']])} | {ff:.3f} | {cf:.3f} | {ff / cf:.2f} | {fb:.3f} | {cb:.3f} | "
              f"{fb / cb:.2f} | {r['cake_bwd_ms'][0]:.3f} | {r['floor_fwd_ms']:.3f} | {r['floor_bwd_ms']:.3f} | "
              f"{errs} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--fla', default='.anchor/fla', help="fla's source tree (the folder holding fla/)")
    ap.add_argument('--package', required=True)
    ap.add_argument('--lib', required=True)
    ap.add_argument('--out', default='/tmp/cake-bench')
    ap.add_argument('--shapes', default='c,b,s', help=','.join(SHAPES))
    ap.add_argument('--no-fla', action='store_true', help='Cake only')
    ap.add_argument('--warmup', type=int, default=25, help='do_bench warmup, ms')
    ap.add_argument('--rep', type=int, default=150, help='do_bench repetition time, ms')
    ap.add_argument('--dry-run', action='store_true', help='plan and validate only: no torch, no GPU')
    args = ap.parse_args()
    for s in args.shapes.split(','):
        assert s in SHAPES, f'shape {s}: one of {", ".join(SHAPES)}'
    cake = Cake(args.lib, args.package)
    if args.dry_run:
        dry_run(args, cake)
        return
    import torch
    import triton

    os.makedirs(args.out, exist_ok=True)
    fla_conv = None if args.no_fla else import_fla_conv(args.fla)
    dev = torch.cuda.get_device_properties(0)
    print(f'# {dev.name}, {dev.multi_processor_count} SMs, torch {torch.__version__}, triton {triton.__version__}',
          flush=True)
    rows = []
    for skey in args.shapes.split(','):
        rec = run_case(args, cake, fla_conv, skey)
        torch.cuda.empty_cache()
        print(json.dumps(rec), flush=True)
        rows.append(rec)
    with open(os.path.join(args.out, 'bench_conv1d.json'), 'w') as f:
        json.dump(dict(gpu=dev.name, torch=torch.__version__, triton=triton.__version__, rows=rows), f, indent=1)
    table(rows)


if __name__ == '__main__':
    main()
