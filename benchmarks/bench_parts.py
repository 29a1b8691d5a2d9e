#!/usr/bin/env python3
"""bench_parts.py - time every variant of one program of a package through
libcakert's generic path, on random inputs, with triton.testing.do_bench.
Used with benchmarks/kda_prep_parts.cake to find where a stage spends its time
(a variant cut after each part; differences between variants are the parts).

    python3 benchmarks/bench_parts.py --lib .carry/lib/libcakert.so \
        --package .carry/parts --program kda_prep_parts --dims T=32768,H=16
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cakert import Cake, tensor  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--lib', required=True)
    ap.add_argument('--package', required=True)
    ap.add_argument('--program', required=True)
    ap.add_argument('--dims', required=True)
    ap.add_argument('--rep', type=int, default=100)
    args = ap.parse_args()
    import torch
    import triton.testing
    cake = Cake(args.lib, args.package)
    manifest = cake.manifest()
    dims = dict(kv.split('=') for kv in args.dims.split(','))
    dt = {'bf16': torch.bfloat16, 'f16': torch.float16, 'f32': torch.float32, 'i32': torch.int32}
    for prog in manifest['programs']:
        if prog['name'] != args.program:
            continue
        p, _ = cake.variant(prog['name'], prog['variant'])
        plan = cake.plan(p, {k: int(v) for k, v in dims.items()})
        env = dict((k, int(v)) for k, v in dims.items())
        env['chunks'] = plan.chunks
        env['N'] = 1
        keep, binds = [], []
        for t in prog['tensors']:
            if t['role'] not in ('in', 'out') or t['optional']:
                continue
            shape = [env[s] if isinstance(s, str) else s for s in t['shape']]
            x = torch.randn(*shape, device='cuda').to(dt[t['dtype']])
            keep.append(x)
            binds.append((t['name'], tensor(x)))
        work = torch.empty(max(plan.workspace_bytes, 256), dtype=torch.uint8, device='cuda')
        run = plan.launcher('fwd', binds, work.data_ptr(), 0, torch.cuda.current_stream().cuda_stream)
        run()
        torch.cuda.synchronize()
        ms = triton.testing.do_bench(run, warmup=20, rep=args.rep)
        print(f'{prog["variant"]:<24} {ms:8.3f} ms', flush=True)


if __name__ == '__main__':
    main()
