#!/usr/bin/env python3
"""bench_gdn.py - Cake's Gated DeltaNet forward (specs/gdn/gdn_fwd.cake) against
fla's chunk_gated_delta_rule forward, in one run, on the same inputs, on the GPU
machine.

Inputs (made here with torch, seed 1; K = V = 128, bf16 activations):
q, k, v ~ N(0, 1) bf16 [T, H, *]; g = logsigmoid(N(0, 1)) f32 [T, H] (the
log-decay); beta = sigmoid(N(0, 1)) bf16 [T, H] (values: fla's default,
use_beta_sigmoid_in_kernel=False). Variants:
  layer  the GatedDeltaNet layer's call: use_qk_l2norm_in_kernel=True
         (Cake: qk_norm=true, beta_logits=false)
  core   q, k L2-normalised by the caller (Cake: qk_norm=false, beta_logits=false)
No initial or final state (fla: initial_state None, output_final_state False;
Cake: h0 and ht absent); fla's default scale 1/sqrt(K) (Cake's default too).
Packed shapes pass cu_seqlens (and cu_seqlens_cpu) to fla and cake_plan_set_docs
to Cake. Cake is called through libcakert's generic path (cake_package_variant,
a plan, cake_launch with bindings by name) with ctypes on the same torch
tensors, on torch's current stream. Both are timed with triton.testing.do_bench
(median, L2 flushed between runs); Cake's stages through the one-stage entries
fwd_prep and fwd_chain. Cake's output is compared with fla's (error ratio
RMS(cake - fla) / RMS(fla) in float64; fla's own error against float64 is part
of it). Each row also gives the floors: the minimal traffic (read q, k, v, g,
beta; write o) at 4.28 TB/s and the chunked form's matmul work at 989 TFLOP/s
(bf16 dense).

    python3 benchmarks/bench_gdn.py --fla .anchor/fla --package .carry/package \
        --lib .carry/lib/libcakert.so --out /tmp/cake-out
    python3 benchmarks/bench_gdn.py --package PKG --lib LIB --dry-run

--dry-run needs neither torch nor a GPU: it loads the package, plans every case
(the variant chosen as for a run, with 132 multiprocessors) and checks the
bindings of fwd, fwd_prep and fwd_chain (cake_validate, with stand-in
addresses), printing the chunks, the workspace and the floors.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cakert import BF16, F32, K, V, Cake, cu_of, fla_packages, shape_name, stand_ins  # noqa: E402
from cakert import tensor as cake_tensor  # noqa: E402

PROGRAM = 'gdn_fwd'
C = 64
# the anchor shapes (../shared/anchors.md)
SHAPES = {
    'a': dict(T=8192, H=16),
    'b': dict(T=32768, H=16),
    'c': dict(T=65536, H=16, seqlens=[15945, 21845, 27746]),
    'd': dict(T=8192, H=32),
}
VARIANTS = {
    'layer': dict(qk_norm=True),
    'core': dict(qk_norm=False),
}
ENTRIES = ('fwd', 'fwd_prep', 'fwd_chain')
HBM_BPS = 4.28e12      # the H200's measured copy rate (as bench_kda.py)
BF16_FLOPS = 989e12    # H200 bf16 dense tensor cores


def choose(cake, args, variant, T, H, cu, sms):
    """The variant: vblock forced by --vblock, else the runtime's choice from the spec's prefer
    clause (16 columns per chain block when blocks of 32 would not keep two per multiprocessor busy)."""
    tf = {True: 'true', False: 'false'}
    opts = f"qk_norm={tf[VARIANTS[variant]['qk_norm']]},beta_logits=false"
    if args.vblock != '0':
        opts += f",vblock=v{args.vblock}"
    return cake.choose(PROGRAM, opts, dict(T=T, H=H), len(cu) - 1 if cu else 0, sms)


def tensor_specs(T, H):
    """name -> (cake dtype, shape) of every tensor bound (h0, ht absent)."""
    return dict(q=(BF16, (T, H, K)), k=(BF16, (T, H, K)), v=(BF16, (T, H, V)), g=(F32, (T, H)),
                beta=(BF16, (T, H)), o=(BF16, (T, H, V)))


def floors(T, H):
    """(minimal traffic ms, matmul work ms): read q, k, v (bf16), g (f32), beta (bf16), write o (bf16);
    per chunk and head the chunked form's matmuls QK^T, KK^T, W, U~, P U (2 C C d each, dense tiles)
    and W S, Q S, K^T U (2 C K V each): per token and head 10 C d + 6 K V, as fla_bench's model."""
    nbytes = T * H * (2 * K * 2 + 2 * V + 4 + 2 + 2 * V)
    flops = T * H * (2 * C * K * 5 + 2 * K * V * 3)
    return nbytes / HBM_BPS * 1e3, flops / BF16_FLOPS * 1e3


def import_fla_gdn(fla_root):
    """fla's chunk_gated_delta_rule without fla/__init__.py (which pulls fla.layers, fla.models and so
    transformers); returns (function, fla version)."""
    ver = fla_packages(fla_root)
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule
    return chunk_gated_delta_rule, ver


def dry_run(args, cake):
    """Plan every case on the CPU and validate the bindings with stand-in addresses."""
    for variant in args.variants.split(','):
        for skey in args.shapes.split(','):
            shape = SHAPES[skey]
            T, H = shape['T'], shape['H']
            cu = cu_of(shape)
            prog, vs = choose(cake, args, variant, T, H, cu, 132)
            plan = cake.plan(prog, dict(T=T, H=H), cu)
            named = list(stand_ins(tensor_specs(T, H)).items())
            for entry in ENTRIES:
                plan.validate(entry, named)
            mt, mm = floors(T, H)
            print(f'{shape_name(shape):<22} {variant:<6} variant "{vs}"  docs {plan.dim("N")} chunks {plan.chunks:5d}  '
                  f'workspace {plan.workspace_bytes:>12,d} B ({plan.workspace_bytes / (T * H):7.1f} B/token/head)  '
                  f'floors: traffic {mt:.3f} ms, matmul {mm:.3f} ms  {", ".join(ENTRIES)} bindings valid')
            plan.free()


def run_case(args, cake, fla_gdn, variant, skey, sms):
    import torch
    import torch.nn.functional as F
    import triton.testing

    shape = SHAPES[skey]
    T, H = shape['T'], shape['H']
    cu = cu_of(shape)
    gen = torch.Generator(device='cuda')
    gen.manual_seed(1)

    def rn(*s):
        return torch.randn(*s, generator=gen, device='cuda', dtype=torch.float32)

    q, k, v = rn(T, H, K), rn(T, H, K), rn(T, H, V)
    if not VARIANTS[variant]['qk_norm']:
        q, k = F.normalize(q, p=2, dim=-1), F.normalize(k, p=2, dim=-1)
    q, k, v = q.to(torch.bfloat16), k.to(torch.bfloat16), v.to(torch.bfloat16)
    g = F.logsigmoid(rn(T, H)).contiguous()
    beta = torch.sigmoid(rn(T, H)).to(torch.bfloat16)
    o = torch.full((T, H, V), float('nan'), dtype=torch.bfloat16, device='cuda')

    prog, vs = choose(cake, args, variant, T, H, cu, sms)
    plan = cake.plan(prog, dict(T=T, H=H), cu)
    work = torch.empty(max(plan.workspace_bytes, 256), dtype=torch.uint8, device='cuda')
    specs = tensor_specs(T, H)
    ts = dict(q=q, k=k, v=v, g=g, beta=beta, o=o)
    named = [(n, cake_tensor(ts[n], specs[n][1])) for n in specs]
    stream = torch.cuda.current_stream().cuda_stream
    launch = {e: plan.launcher(e, named, work.data_ptr(), 0, stream) for e in ENTRIES}

    def bench(fn):
        return triton.testing.do_bench(fn, warmup=args.warmup, rep=args.rep, quantiles=[0.5, 0.2, 0.8])

    launch['fwd']()
    torch.cuda.synchronize()
    rec = dict(variant=variant, shape=skey, T=T, H=H, seqlens=shape.get('seqlens'), cake_variant=vs,
               chunks=plan.chunks, workspace_bytes=plan.workspace_bytes)
    rec['cake_nonfinite'] = int((~torch.isfinite(o.float())).sum().item())
    rec['cake_ms'] = bench(launch['fwd'])
    rec['cake_prep_ms'] = bench(launch['fwd_prep'])
    rec['cake_chain_ms'] = bench(launch['fwd_chain'])
    if fla_gdn is not None:
        kw = dict(scale=K ** -0.5, initial_state=None, output_final_state=False,
                  use_qk_l2norm_in_kernel=VARIANTS[variant]['qk_norm'])
        if cu is not None:
            kw.update(cu_seqlens=torch.tensor(cu, dtype=torch.long, device='cuda'),
                      cu_seqlens_cpu=torch.tensor(cu, dtype=torch.long))

        def fla():
            return fla_gdn(q[None], k[None], v[None], g[None], beta[None], **kw)

        with torch.no_grad():
            t0 = time.time()
            ref = fla()[0]
            torch.cuda.synchronize()
            rec['fla_first_call_s'] = round(time.time() - t0, 2)
            rec['fla_ms'] = bench(fla)
            launch['fwd']()
            torch.cuda.synchronize()
            r = ref.reshape(T, H, V).double()
            d = o.double() - r
            rec['vs_fla_err_ratio'] = (d.pow(2).mean().sqrt() / r.pow(2).mean().sqrt()).item()
    rec['min_traffic_ms'], rec['matmul_ms'] = floors(T, H)
    plan.free()
    return rec


def table(rows):
    nan = float('nan')
    print('\n| shape | variant | fla fwd ms | cake fwd ms | fla / cake | cake prep | cake chain | traffic floor | '
          'matmul floor | cake vs fla err |')
    print('|' + '---|' * 10)
    for r in rows:
        fla = r.get('fla_ms', [nan])[0]
        ck = r['cake_ms'][0]
        print(f"| {shape_name(r)} | {r['variant']} | {fla:.3f} | {ck:.3f} | {fla / ck:.2f} | "
              f"{r['cake_prep_ms'][0]:.3f} | {r['cake_chain_ms'][0]:.3f} | {r['min_traffic_ms']:.3f} | "
              f"{r['matmul_ms']:.3f} | {r.get('vs_fla_err_ratio', nan):.2e} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--fla', default='.anchor/fla', help="fla's source tree (the folder holding fla/)")
    ap.add_argument('--package', required=True)
    ap.add_argument('--lib', required=True)
    ap.add_argument('--out', default='/tmp/cake-bench')
    ap.add_argument('--shapes', default='b,c,a,d', help=','.join(SHAPES))
    ap.add_argument('--variants', default='layer', help=','.join(VARIANTS))
    ap.add_argument('--no-fla', action='store_true', help='Cake only')
    ap.add_argument('--vblock', default='0', help='the vblock option without its v (16, 16x1, 32, ...); 0: the runtime chooses')
    ap.add_argument('--warmup', type=int, default=50, help='do_bench warmup, ms')
    ap.add_argument('--rep', type=int, default=300, help='do_bench repetition time, ms')
    ap.add_argument('--deadline', type=float, default=400.0,
                    help='seconds since the start after which no further case begins')
    ap.add_argument('--dry-run', action='store_true', help='plan and validate only: no torch, no GPU')
    args = ap.parse_args()
    for v in args.variants.split(','):
        assert v in VARIANTS, f'variant {v}: one of {", ".join(VARIANTS)}'
    for s in args.shapes.split(','):
        assert s in SHAPES, f'shape {s}: one of {", ".join(SHAPES)}'
    cake = Cake(args.lib, args.package)
    if args.dry_run:
        dry_run(args, cake)
        return
    import torch
    import triton

    os.makedirs(args.out, exist_ok=True)
    fla_gdn, fla_version = (None, None) if args.no_fla else import_fla_gdn(args.fla)
    dev = torch.cuda.get_device_properties(0)
    print(f'# {dev.name}, {dev.multi_processor_count} SMs, torch {torch.__version__}, triton {triton.__version__}'
          + ('' if args.no_fla else f', fla {fla_version}'), flush=True)
    t0 = time.time()
    rows = []
    with open(os.path.join(args.out, 'bench_gdn.jsonl'), 'a') as results:
        for variant in args.variants.split(','):
            for skey in args.shapes.split(','):
                if time.time() - t0 > args.deadline:
                    print(f'# skipped {variant} {skey}: past --deadline {args.deadline:.0f} s', flush=True)
                    continue
                rec = run_case(args, cake, fla_gdn, variant, skey, dev.multi_processor_count)
                torch.cuda.empty_cache()
                rec['t_s'] = round(time.time() - t0, 1)
                print(json.dumps(rec), flush=True)
                results.write(json.dumps(rec) + '\n')
                results.flush()
                rows.append(rec)
    with open(os.path.join(args.out, 'bench_gdn.json'), 'w') as f:
        json.dump(dict(gpu=dev.name, sms=dev.multi_processor_count, torch=torch.__version__,
                       triton=triton.__version__, fla=fla_version, rows=rows), f, indent=1)
    table(rows)


if __name__ == '__main__':
    main()
