#!/usr/bin/env python3
"""bench_parts.py - time every variant of one program of a package through
libcakert's generic path, on random inputs, with triton.testing.do_bench.
Used with benchmarks/kda_prep_parts.cake to find where a stage spends its time
(a variant cut after each part; differences between variants are the parts).

    python3 benchmarks/bench_parts.py --lib .carry/lib/libcakert.so \
        --package .carry/parts --program kda_prep_parts --dims T=32768,H=16
"""
import argparse
import ctypes as C
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_kda import Cake, Tensor, tensor  # noqa: E402


class Binding(C.Structure):
    _fields_ = [('name', C.c_char_p), ('tensor', Tensor)]


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
    L, pkg, check = cake.lib, cake.pkg, cake.check
    L.cake_plan_chunk_count.restype = C.c_int64
    L.cake_launch.argtypes = [C.c_void_p, C.c_char_p, C.c_void_p, C.c_int, C.c_uint64, C.c_size_t, C.c_uint64,
                              C.c_size_t, C.c_void_p]
    manifest = json.load(open(os.path.join(args.package, 'manifest.json')))
    dims = dict(kv.split('=') for kv in args.dims.split(','))
    dt = {'bf16': torch.bfloat16, 'f16': torch.float16, 'f32': torch.float32, 'i32': torch.int32}
    for prog in manifest['programs']:
        if prog['name'] != args.program:
            continue
        p = C.c_void_p()
        check(L.cake_package_variant(pkg, prog['name'].encode(), prog['variant'].encode(), C.byref(p)), 'variant')
        plan = C.c_void_p()
        check(L.cake_plan_create(p, C.byref(plan)), 'plan')
        for k, v in dims.items():
            check(L.cake_plan_set_dim(plan, k.encode(), C.c_int64(int(v))), f'dim {k}')
        check(L.cake_plan_finalize(plan), 'finalize')
        ws = C.c_size_t()
        check(L.cake_plan_workspace_bytes(plan, C.byref(ws)), 'ws')
        env = dict((k, int(v)) for k, v in dims.items())
        env['chunks'] = L.cake_plan_chunk_count(plan)
        env['N'] = 1
        keep, binds = [], []
        for t in prog['tensors']:
            if t['role'] not in ('in', 'out') or t['optional']:
                continue
            shape = [env[s] if isinstance(s, str) else s for s in t['shape']]
            x = torch.randn(*shape, device='cuda').to(dt[t['dtype']])
            keep.append(x)
            binds.append(Binding(t['name'].encode(), tensor(x)))
        arr = (Binding * len(binds))(*binds)
        work = torch.empty(max(ws.value, 256), dtype=torch.uint8, device='cuda')
        stream = torch.cuda.current_stream().cuda_stream

        def run():
            check(L.cake_launch(plan, b'fwd', arr, len(binds), work.data_ptr(), ws.value, 0, 0, stream), 'launch')

        run()
        torch.cuda.synchronize()
        ms = triton.testing.do_bench(run, warmup=20, rep=args.rep)
        print(f'{prog["variant"]:<24} {ms:8.3f} ms', flush=True)


if __name__ == '__main__':
    main()
