#!/usr/bin/env python3
"""bench_kda.py - Cake's KDA forward against fla's chunk_kda, in one run, on the
same inputs, on the GPU machine.

Inputs come from the anchor harness (../shared/bench/fla_bench.py, copied into
.anchor/): its make_case() builds the Kimi-Linear layer inputs ('layer': softplus
gate, q/k L2 norm and beta sigmoid in the kernels; 'safe': the bounded gate).
Cake is called through libcakert with ctypes on the same torch tensors. Both are
timed with triton.testing.do_bench (median, L2 flushed between runs); Cake's
stages are timed from the torch profiler. Cake's output is also compared with
fla's (error ratio) as a sanity check.

    python3 benchmarks/bench_kda.py --fla .anchor/fla --anchor .anchor \
        --package .carry/package --lib .carry/lib/libcakert.so --out /tmp/cake-out
"""
import argparse
import ctypes as C
import importlib.util
import json
import math
import os
import sys
import time

K = V = 128


class Tensor(C.Structure):
    _fields_ = [('data', C.c_uint64), ('dtype', C.c_int), ('rank', C.c_int),
                ('shape', C.c_int64 * 6), ('strides', C.c_int64 * 6)]


class KdaOptions(C.Structure):
    _fields_ = [('gate', C.c_char_p), ('qk_norm', C.c_int), ('beta_logits', C.c_int),
                ('scale', C.c_double), ('lower_bound', C.c_double), ('vblock', C.c_int)]


class KdaTensors(C.Structure):
    _fields_ = [(n, Tensor) for n in ('q', 'k', 'v', 'g', 'beta', 'A_log', 'dt_bias', 'h0', 'o', 'ht')]


BF16, F16, F32, I32 = 0, 1, 2, 3


def tensor(t, shape=None):
    import torch
    if t is None:
        return Tensor()
    assert t.is_contiguous()
    dt = {torch.bfloat16: BF16, torch.float16: F16, torch.float32: F32, torch.int32: I32}[t.dtype]
    shape = list(shape if shape is not None else t.shape)
    x = Tensor()
    x.data, x.dtype, x.rank = t.data_ptr(), dt, len(shape)
    for i, s in enumerate(shape):
        x.shape[i] = s
    return x


class Cake:
    def __init__(self, lib, package):
        self.lib = C.CDLL(lib)
        L = self.lib
        L.cake_last_error.restype = C.c_char_p
        L.cake_package_load.argtypes = [C.c_char_p, C.c_void_p, C.POINTER(C.c_void_p)]
        L.cake_kda_plan.argtypes = [C.c_void_p, C.POINTER(KdaOptions), C.c_int64, C.c_int64,
                                    C.POINTER(C.c_int32), C.c_int64, C.POINTER(C.c_void_p)]
        L.cake_plan_workspace_bytes.argtypes = [C.c_void_p, C.POINTER(C.c_size_t)]
        L.cake_kda_launch.argtypes = [C.c_void_p, C.c_char_p, C.POINTER(KdaTensors), C.c_uint64, C.c_size_t,
                                      C.c_void_p]
        L.cake_plan_free.argtypes = [C.c_void_p]
        self.pkg = C.c_void_p()
        self.check(L.cake_package_load(package.encode(), None, C.byref(self.pkg)), 'cake_package_load')

    def check(self, rc, what):
        if rc != 0:
            raise RuntimeError(f'{what}: {self.lib.cake_last_error().decode()}')

    def plan(self, gate, T, H, cu, vblock=0):
        opt = KdaOptions(gate.encode(), 1, 1, 0.0, 0.0, vblock)
        p = C.c_void_p()
        if cu is not None:
            arr = (C.c_int32 * len(cu))(*cu)
            self.check(self.lib.cake_kda_plan(self.pkg, C.byref(opt), T, H, arr, len(cu) - 1, C.byref(p)), 'plan')
        else:
            self.check(self.lib.cake_kda_plan(self.pkg, C.byref(opt), T, H, None, 0, C.byref(p)), 'plan')
        ws = C.c_size_t()
        self.check(self.lib.cake_plan_workspace_bytes(p, C.byref(ws)), 'workspace')
        return p, ws.value


def load_anchor(path):
    spec = importlib.util.spec_from_file_location('fla_bench', os.path.join(path, 'fla_bench.py'))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


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
    from torch.profiler import ProfilerActivity, profile

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
            plan, ws = cake.plan(gate, T, H, cu, args.vblock)
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
