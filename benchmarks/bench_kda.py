#!/usr/bin/env python3
"""bench_kda.py - Cake's KDA forward against fla's chunk_kda, in one run, on the
same inputs, on the GPU machine.

Inputs come from the anchor harness (../shared/bench/fla_bench.py, copied into
.anchor/): its make_case() builds the Kimi-Linear layer inputs ('layer': softplus
gate, q/k L2 norm and beta sigmoid in the kernels; 'safe': the bounded gate).
Cake is called through libcakert with ctypes on the same torch tensors. Both are
timed with triton.testing.do_bench (median, L2 flushed between runs); Cake's
stages are timed through the one-stage entries fwd_prep and fwd_chain. Cake's output is also compared with
fla's (error ratio) as a sanity check.

    python3 benchmarks/bench_kda.py --fla .anchor/fla --anchor .anchor \
        --package .carry/package --lib .carry/lib/libcakert.so --out /tmp/cake-out
"""
import argparse
import ctypes as C
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cakert import K, V, Cake, KdaTensors, Tensor, load_anchor, tensor  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--fla', required=True)
    ap.add_argument('--anchor', required=True)
    ap.add_argument('--package', required=True)
    ap.add_argument('--lib', required=True)
    ap.add_argument('--out', default='/tmp/cake-bench')
    ap.add_argument('--shapes', default='b,c,a,d')
    ap.add_argument('--variants', default='layer,safe')
    ap.add_argument('--no-fla', action='store_true')
    ap.add_argument('--rep', type=int, default=300)
    ap.add_argument('--vblock', type=int, default=0, help='16 or 32; 0: the runtime chooses')
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import torch
    import triton.testing

    fb = load_anchor(args.anchor)
    chunk_kda = None
    if not args.no_fla:
        chunk_kda, _, fla_version = fb.import_fla(args.fla)
    cake = Cake(args.lib, args.package)
    dev = torch.cuda.get_device_properties(0)
    print(f'# {dev.name}, {dev.multi_processor_count} SMs, torch {torch.__version__}, triton {triton.__version__}'
          + ('' if args.no_fla else f', fla {fla_version}'), flush=True)
    rows = []
    results = open(os.path.join(args.out, 'bench_kda.jsonl'), 'a')

    def bench(fn):
        return triton.testing.do_bench(fn, warmup=50, rep=args.rep, quantiles=[0.5, 0.2, 0.8])

    for variant in args.variants.split(','):
        gate = {'layer': 'softplus', 'safe': 'safe'}[variant]
        for skey in args.shapes.split(','):
            shape = fb.SHAPES[skey]
            case = fb.make_case(shape, variant, seed=1)
            L = case['leaves']
            B, T, H = shape['B'], shape['T'], shape['H']
            assert B == 1
            cu = [int(x) for x in case['cu_cpu'].tolist()] if case['cu_cpu'] is not None else None
            plan, ws = cake.kda_plan(gate, T, H, cu, args.vblock)
            work = torch.empty(max(ws, 256), dtype=torch.uint8, device='cuda')
            o = torch.empty(T, H, V, dtype=torch.bfloat16, device='cuda')
            t = KdaTensors(q=tensor(L['q'], (T, H, K)), k=tensor(L['k'], (T, H, K)), v=tensor(L['v'], (T, H, V)),
                           g=tensor(L['g'], (T, H, K)), beta=tensor(L['beta'], (T, H)),
                           A_log=tensor(L['A_log']), dt_bias=tensor(L['dt_bias'], (H, K)),
                           h0=Tensor(), o=tensor(o), ht=Tensor())
            stream = torch.cuda.current_stream().cuda_stream

            def ours(entry=b'fwd'):
                cake.check(cake.lib.cake_kda_launch(plan, entry, C.byref(t), work.data_ptr(), ws, stream), 'launch')

            ours()
            torch.cuda.synchronize()
            rec = dict(variant=variant, shape=skey, T=T, H=H, seqlens=shape.get('seqlens'))
            rec['cake_ms'] = bench(ours)
            rec['cake_prep_ms'] = bench(lambda: ours(b'fwd_prep'))
            rec['cake_chain_ms'] = bench(lambda: ours(b'fwd_chain'))
            if chunk_kda is not None:
                with torch.no_grad():
                    ref = fb.call_fla(chunk_kda, case)[0]
                    torch.cuda.synchronize()
                    rec['fla_ms'] = bench(lambda: fb.call_fla(chunk_kda, case))
                    ours()
                    torch.cuda.synchronize()
                    d = (o.double() - ref.reshape(T, H, V).double())
                    rec['vs_fla_err_ratio'] = (d.pow(2).mean().sqrt() / ref.double().pow(2).mean().sqrt()).item()
            # bytes of the minimal traffic: read q, k, v, g, beta; write o
            gbytes = T * H * (2 * K * 3 + 2 * K + 2) + T * H * V * 2
            rec['min_traffic_ms_at_4.28TBps'] = gbytes / 4.28e12 * 1e3
            print(json.dumps(rec), flush=True)
            results.write(json.dumps(rec) + '\n')
            results.flush()
            rows.append(rec)
            cake.lib.cake_plan_free(plan)
            del case, L, work, o
            torch.cuda.empty_cache()

    print('\n| shape | variant | fla fwd ms | cake fwd ms | fla / cake | cake prep | cake chain | cake vs fla err |')
    print('|---|---|---|---|---|---|---|---|')
    for r in rows:
        fla = r.get('fla_ms', [float('nan')])[0]
        ck = r['cake_ms'][0]
        name = f"T={r['T']} H={r['H']}" + (' packed' if r['seqlens'] else '')
        print(f"| {name} | {r['variant']} | {fla:.3f} | {ck:.3f} | {fla / ck:.2f} | {r['cake_prep_ms'][0]:.3f} | "
              f"{r['cake_chain_ms'][0]:.3f} | {r.get('vs_fla_err_ratio', float('nan')):.2e} |")


if __name__ == '__main__':
    main()
