#!/usr/bin/env python3
"""bench_kda.py - Cake's KDA forward against fla's chunk_kda, in one run, on the
same inputs, on the GPU machine.

Inputs come from the anchor harness (../shared/bench/fla_bench.py, copied into
.anchor/): its make_case() builds the Kimi-Linear layer inputs ('layer': softplus
gate, q/k L2 norm and beta sigmoid in the kernels; 'safe': the bounded gate).
Cake is called through libcakert's generic path with ctypes (the kda_fwd variant
of the gate with q/k norm and beta logits in the kernel, vblock forced by
--vblock or chosen by the spec's prefer clause (cake_package_choose, with the
current GPU's multiprocessors); a plan with the default scale and lower bound;
cake_launch with bindings by name) on the same torch tensors. Both are timed
with triton.testing.do_bench (median, L2 flushed between runs); Cake's stages
are timed through the one-stage entries fwd_prep and fwd_chain. Cake's output
is also compared with fla's (error ratio) as a sanity check.

    python3 benchmarks/bench_kda.py --fla .anchor/fla --anchor .anchor \
        --package .carry/package --lib .carry/lib/libcakert.so --out /tmp/cake-out
    python3 benchmarks/bench_kda.py --anchor .anchor --package PKG --lib LIB --dry-run

--dry-run needs neither torch nor a GPU: it loads the package, plans every case
(the variant chosen with 132 multiprocessors) and checks the bindings of fwd,
fwd_prep and fwd_chain (cake_validate, with stand-in addresses).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cakert import BF16, F32, K, V, Cake, cu_of, kernel_times, load_anchor, shape_name, stand_ins, tensor  # noqa: E402

PROGRAM = 'kda_fwd'
# the harness's variants as kda_fwd's options: 'core' takes the log-decay (f32), normalised q and k and
# beta as values from the caller
OPTIONS = {'layer': 'gate=softplus,qk_norm=true,beta_logits=true', 'safe': 'gate=safe,qk_norm=true,beta_logits=true',
           'core': 'gate=external,qk_norm=false,beta_logits=false'}
ENTRIES = ('fwd', 'fwd_prep', 'fwd_chain')


def choose(cake, args, variant, T, H, cu, sms=0):
    """The kda_fwd variant: vblock forced by --vblock, else the runtime's choice from the spec's
    prefer clause; sms 0: $CAKE_DEVICE_SMS, the current GPU's, or 132."""
    opts = OPTIONS[variant]
    if args.vblock != '0':
        opts += f',vblock=v{args.vblock}'
    return cake.choose(PROGRAM, opts, dict(T=T, H=H, HV=H), len(cu) - 1 if cu else 0, sms)


def tensor_specs(T, H, variant='layer'):
    """name -> (cake dtype, shape) of every tensor bound (h0, ht absent)."""
    if variant == 'core':  # the log-decay itself, no gate parameters
        return dict(q=(BF16, (T, H, K)), k=(BF16, (T, H, K)), v=(BF16, (T, H, V)), g=(F32, (T, H, K)),
                    beta=(BF16, (T, H)), o=(BF16, (T, H, V)))
    return dict(q=(BF16, (T, H, K)), k=(BF16, (T, H, K)), v=(BF16, (T, H, V)), g=(BF16, (T, H, K)),
                beta=(BF16, (T, H)), A_log=(F32, (H,)), dt_bias=(F32, (H, K)), o=(BF16, (T, H, V)))


def dry_run(args, fb, cake):
    """Plan every case on the CPU and validate the bindings with stand-in addresses."""
    for variant in args.variants.split(','):
        for skey in args.shapes.split(','):
            shape = fb.SHAPES[skey]
            T, H = shape['T'], shape['H']
            cu = cu_of(shape)
            prog, vs = choose(cake, args, variant, T, H, cu, 132)
            plan = cake.plan(prog, dict(T=T, H=H, HV=H), cu)
            named = list(stand_ins(tensor_specs(T, H, variant)).items())
            for entry in ENTRIES:
                plan.validate(entry, named)
            print(f'{shape_name(shape):<22} {variant:<6} variant "{vs}"  docs {plan.dim("N")} '
                  f'chunks {plan.chunks:5d}  workspace {plan.workspace_bytes:>12,d} B  {", ".join(ENTRIES)} bindings valid')
            plan.free()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--fla', default='.anchor/fla')
    ap.add_argument('--anchor', required=True)
    ap.add_argument('--package', required=True)
    ap.add_argument('--lib', required=True)
    ap.add_argument('--out', default='/tmp/cake-bench')
    ap.add_argument('--shapes', default='b,c,a,d')
    ap.add_argument('--variants', default='layer,safe')
    ap.add_argument('--no-fla', action='store_true')
    ap.add_argument('--rep', type=int, default=300)
    ap.add_argument('--vblock', default='0', help='the vblock option without its v (16, 16x1, 32, ...); 0: the runtime chooses')
    ap.add_argument('--dump', default='', help="save Cake's output of each case here (o_<variant>_<shape>.pt), to compare builds")
    ap.add_argument('--compare', default='',
                    help="compare Cake's output of each case bit for bit with the one saved in this folder by --dump")
    ap.add_argument('--kernels', action='store_true',
                    help="also each kernel's device time (torch profiler), Cake's and fla's")
    ap.add_argument('--dry-run', action='store_true', help='plan and validate only: no torch, no GPU')
    args = ap.parse_args()
    for v in args.variants.split(','):
        assert v in OPTIONS, f'variant {v}: one of {", ".join(OPTIONS)}'
    fb = load_anchor(args.anchor)
    cake = Cake(args.lib, args.package)
    if args.dry_run:
        dry_run(args, fb, cake)
        return
    os.makedirs(args.out, exist_ok=True)
    import torch
    import triton.testing

    chunk_kda = None
    if not args.no_fla:
        chunk_kda, _, fla_version = fb.import_fla(args.fla)
    dev = torch.cuda.get_device_properties(0)
    print(f'# {dev.name}, {dev.multi_processor_count} SMs, torch {torch.__version__}, triton {triton.__version__}'
          + ('' if args.no_fla else f', fla {fla_version}'), flush=True)
    rows = []
    results = open(os.path.join(args.out, 'bench_kda.jsonl'), 'a')

    def bench(fn):
        return triton.testing.do_bench(fn, warmup=50, rep=args.rep, quantiles=[0.5, 0.2, 0.8])

    for variant in args.variants.split(','):
        for skey in args.shapes.split(','):
            shape = fb.SHAPES[skey]
            case = fb.make_case(shape, variant, seed=1)
            L = case['leaves']
            B, T, H = shape['B'], shape['T'], shape['H']
            assert B == 1
            cu = [int(x) for x in case['cu_cpu'].tolist()] if case['cu_cpu'] is not None else None
            assert cu == cu_of(shape)
            prog, vs = choose(cake, args, variant, T, H, cu)
            plan = cake.plan(prog, dict(T=T, H=H, HV=H), cu)  # scale, lower_bound: the spec's defaults
            work = torch.empty(max(plan.workspace_bytes, 256), dtype=torch.uint8, device='cuda')
            o = torch.empty(T, H, V, dtype=torch.bfloat16, device='cuda')
            specs = tensor_specs(T, H, variant)
            ts = dict(L, o=o)
            named = [(n, tensor(ts[n], specs[n][1])) for n in specs]  # no h0, ht: absent
            stream = torch.cuda.current_stream().cuda_stream
            launch = {e: plan.launcher(e, named, work.data_ptr(), 0, stream) for e in ENTRIES}
            ours = launch['fwd']

            ours()
            torch.cuda.synchronize()
            rec = dict(variant=variant, shape=skey, T=T, H=H, seqlens=shape.get('seqlens'), cake_variant=vs)
            if args.dump:
                os.makedirs(args.dump, exist_ok=True)
                torch.save(o.cpu(), os.path.join(args.dump, f'o_{variant}_{skey}.pt'))
            if args.compare:
                other = torch.load(os.path.join(args.compare, f'o_{variant}_{skey}.pt'))
                same = torch.equal(o.cpu().view(torch.int16), other.view(torch.int16))
                rec['bitwise_same_as_compare'] = same
                if not same:
                    d = (o.cpu().double() - other.double()).abs()
                    rec['max_abs_diff_vs_compare'] = d.max().item()
            rec['cake_ms'] = bench(ours)
            rec['cake_prep_ms'] = bench(launch['fwd_prep'])
            rec['cake_chain_ms'] = bench(launch['fwd_chain'])
            if chunk_kda is not None:
                with torch.no_grad():
                    ref = fb.call_fla(chunk_kda, case)[0]
                    torch.cuda.synchronize()
                    rec['fla_ms'] = bench(lambda: fb.call_fla(chunk_kda, case))
                    ours()
                    torch.cuda.synchronize()
                    d = (o.double() - ref.reshape(T, H, V).double())
                    rec['vs_fla_err_ratio'] = (d.pow(2).mean().sqrt() / ref.double().pow(2).mean().sqrt()).item()
            if args.kernels:
                rec['cake_kernels_ms'] = {n: round(ms, 4) for n, (ms, _) in kernel_times(ours).items()}
                if chunk_kda is not None:
                    with torch.no_grad():
                        kt = kernel_times(lambda: fb.call_fla(chunk_kda, case))
                    rec['fla_kernels_ms'] = {n[:60]: round(ms, 4) for n, (ms, _) in kt.items()}
            # bytes of the minimal traffic: read q, k, v, g (f32 in core), beta; write o
            gbytes = T * H * (2 * K * 3 + (4 if variant == 'core' else 2) * K + 2) + T * H * V * 2
            rec['min_traffic_ms_at_4.28TBps'] = gbytes / 4.28e12 * 1e3
            print(json.dumps(rec), flush=True)
            results.write(json.dumps(rec) + '\n')
            results.flush()
            rows.append(rec)
            plan.free()
            del case, L, ts, named, launch, ours, work, o
            torch.cuda.empty_cache()

    print('\n| shape | variant | fla fwd ms | cake fwd ms | fla / cake | cake prep | cake chain | cake vs fla err |')
    print('|---|---|---|---|---|---|---|---|')
    for r in rows:
        fla = r.get('fla_ms', [float('nan')])[0]
        ck = r['cake_ms'][0]
        name = shape_name(r)
        print(f"| {name} | {r['variant']} | {fla:.3f} | {ck:.3f} | {fla / ck:.2f} | {r['cake_prep_ms'][0]:.3f} | "
              f"{r['cake_chain_ms'][0]:.3f} | {r.get('vs_fla_err_ratio', float('nan')):.2e} |")


if __name__ == '__main__':
    main()
