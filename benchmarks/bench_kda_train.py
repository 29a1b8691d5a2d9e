#!/usr/bin/env python3
"""bench_kda_train.py - Cake's KDA training program (specs/kda/kda_train.cake,
entries fwd and bwd) against fla's chunk_kda forward + backward, in one run, on
the same inputs, on the GPU machine.

Inputs come from the anchor harness (../shared/bench/fla_bench.py, copied into
.anchor/): make_case() builds the Kimi-Linear layer inputs ('layer': softplus
gate, q/k L2 norm and beta sigmoid in the kernels; 'safe': the bounded gate,
lower bound -5, A_log = 0), fla is called and timed as the harness does it
(call_fla, set_grad: every leaf requires grad; do_bench of forward + backward
with the grads set to None between runs). Cake runs the kda_train variant of
the same options (gate, qk_norm, beta_logits; scale 1/sqrt(K) and the lower
bound as in the case) with save = ckpt and save = states, through libcakert's
generic path (cake_package_variant, a plan, cake_launch with bindings by name)
on the same torch tensors, on torch's current stream.

Per shape, variant and mode it measures:
- medians (triton.testing.do_bench, L2 flushed between runs) of fla forward,
  fla forward + backward, Cake fwd, Cake bwd and Cake fwd + bwd;
- Cake's device time per stage (torch profiler; kernels are named
  <program>_<stage>_<digest>; the runtime's chunk-table copy is listed apart);
- memory beyond inputs and outputs. Cake: workspace + saved bytes (the plan's
  figures; allocated with torch). fla: with every .grad None, after
  reset_peak_memory_stats, base = memory_allocated(); one forward + backward;
  fla_extra = max_memory_allocated() - base - (bytes of o + bytes of every
  .grad it produced). Also fla_kept = memory_allocated() after the forward
  - base - bytes of o: what fla holds from its forward for the backward
  (Cake's counterpart is the saved area);
- Cake's outputs and gradients against fla's, fla's metric RMS(x - ref) /
  RMS(ref) in float64: o, dq, dk (w.r.t. the raw q and k, before the L2 norm),
  dv, dg (w.r.t. the raw gate g, through the in-kernel gate; fla returns it in
  bf16, Cake in f32), dbeta (w.r.t. the logits, through the sigmoid; fla bf16,
  Cake f32), dA_log, ddt_bias (fla's [H*K] viewed as [H, K]). No initial or
  final state (fla: initial_state None, output_final_state False; Cake: h0,
  ht, dht, dh0 absent). The reference is fla, not exact arithmetic: the ratio
  includes fla's own error (about 3-5e-3 on o against float64);
- save = states against save = ckpt, every output bit for bit (the state pass
  is the same).

    python3 benchmarks/bench_kda_train.py --fla .anchor/fla --anchor .anchor \
        --package .carry/package --lib .carry/lib/libcakert.so --out /tmp/cake-out
    python3 benchmarks/bench_kda_train.py --anchor .anchor --package PKG --lib LIB --dry-run

--dry-run needs neither torch nor a GPU: it loads the package, plans every case
and checks the bindings of fwd and bwd (cake_validate, with stand-in addresses),
printing the workspace and saved bytes.
"""
import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cakert import BF16, F32, K, V, Cake, cu_of, kernel_times, load_anchor, shape_name, stage_times, stand_ins  # noqa: E402
from cakert import tensor as cake_tensor  # noqa: E402

PROGRAM = 'kda_train'
# the harness's variants as kda_train options; checked against make_case's fla arguments
VARIANTS = {
    'layer': dict(gate='softplus', qk_norm=True, beta_logits=True, lower_bound=None),
    'safe': dict(gate='safe', qk_norm=True, beta_logits=True, lower_bound=-5.0),
}
MODES = ('ckpt', 'states')
# the outputs of kda_train compared, and the fla leaf whose .grad is the reference
GRADS = {'dq': 'q', 'dk': 'k', 'dv': 'v', 'dg': 'g', 'dbeta': 'beta', 'dA_log': 'A_log', 'ddt_bias': 'dt_bias'}


def options(variant, save):
    o = VARIANTS[variant]
    tf = {True: 'true', False: 'false'}
    return f"gate={o['gate']},qk_norm={tf[o['qk_norm']]},beta_logits={tf[o['beta_logits']]},save={save}"


def params(variant):
    p = dict(scale=K ** -0.5)
    lb = VARIANTS[variant]['lower_bound']
    if lb is not None:
        p['lower_bound'] = lb
    return p


def check_case(variant, case):
    """The kda_train options of VARIANTS must be the fla arguments make_case chose."""
    kw, o = case['kw'], VARIANTS[variant]
    assert kw.get('use_gate_in_kernel') and o['gate'] != 'external', kw
    assert bool(kw.get('safe_gate')) == (o['gate'] == 'safe'), kw
    assert kw.get('lower_bound') == o['lower_bound'], kw
    assert bool(kw.get('use_qk_l2norm_in_kernel')) == o['qk_norm'], kw
    assert bool(kw.get('use_beta_sigmoid_in_kernel')) == o['beta_logits'], kw
    assert 'scale' not in kw and 'h0' not in case['leaves']  # fla's default scale, no initial state


def tensor_specs(T, H):
    """name -> (cake dtype, shape) of every tensor bound: the inputs of make_case (no h0) and the
    outputs (no ht, dh0); dht absent."""
    return dict(q=(BF16, (T, H, K)), k=(BF16, (T, H, K)), v=(BF16, (T, H, V)), g=(BF16, (T, H, K)),
                beta=(BF16, (T, H)), A_log=(F32, (H,)), dt_bias=(F32, (H, K)), o=(BF16, (T, H, V)),
                do=(BF16, (T, H, V)), dq=(BF16, (T, H, K)), dk=(BF16, (T, H, K)), dv=(BF16, (T, H, V)),
                dg=(F32, (T, H, K)), dbeta=(F32, (T, H)), dA_log=(F32, (H,)), ddt_bias=(F32, (H, K)))


ENTRY_TENSORS = {
    'fwd': ('q', 'k', 'v', 'g', 'beta', 'A_log', 'dt_bias', 'o'),
    'bwd': ('q', 'k', 'v', 'g', 'beta', 'A_log', 'dt_bias', 'do', 'dq', 'dk', 'dv', 'dg', 'dbeta', 'dA_log',
            'ddt_bias'),
}


def entry_stages(cake, variant_string):
    """{entry: [stage, ...]} of the kda_train variant, from the package manifest."""
    for p in cake.manifest()['programs']:
        if p['name'] == PROGRAM and p.get('variant', '') == variant_string:
            return {e['name']: list(e['stages']) for e in p['entries']}
    return {}


def dry_run(args, fb, cake):
    """Plan every case on the CPU and validate the bindings with stand-in addresses."""
    for variant in args.variants.split(','):
        for save in args.modes.split(','):
            prog, vs = cake.variant(PROGRAM, options(variant, save))
            stages = entry_stages(cake, vs)
            print(f'# {variant} save={save}: variant "{vs}"; ' +
                  '; '.join(f'{e}: {", ".join(s)}' for e, s in stages.items()))
            for skey in args.shapes.split(','):
                shape = fb.SHAPES[skey]
                T, H = shape['T'], shape['H']
                plan = cake.plan(prog, dict(T=T, H=H, HV=H), cu_of(shape), params(variant))
                fake = stand_ins(tensor_specs(T, H))
                for entry, names in ENTRY_TENSORS.items():
                    plan.validate(entry, [(n, fake[n]) for n in names])
                th = T * H
                print(f'{shape_name(shape):<22} {variant:<6} {save:<6} docs {plan.dim("N")} chunks {plan.chunks:5d}  '
                      f'workspace {plan.workspace_bytes:>12,d} B ({plan.workspace_bytes / th:7.1f} B/token/head)  '
                      f'saved {plan.saved_bytes:>12,d} B ({plan.saved_bytes / th:6.1f})  '
                      f'total {(plan.workspace_bytes + plan.saved_bytes) / 2**30:6.2f} GiB  fwd, bwd bindings valid')
                plan.free()


def run_case(args, fb, cake, chunk_kda, variant, skey):
    import torch
    shape = fb.SHAPES[skey]
    case = fb.make_case(shape, variant, seed=1)
    check_case(variant, case)
    Lv, do = case['leaves'], case['do']
    B, T, H = shape['B'], shape['T'], shape['H']
    assert B == 1
    cu = cu_of(shape)
    rec = dict(variant=variant, shape=skey, T=T, H=H, seqlens=shape.get('seqlens'))
    bench = lambda fn, **kw: fb.bench(fn, warmup=args.warmup, rep=args.rep, **kw)  # noqa: E731
    nbytes = lambda t: t.numel() * t.element_size()  # noqa: E731

    ref = None
    if chunk_kda is not None:
        fb.set_grad(case)
        leaves = list(Lv.values())

        def fla_fwd():
            return fb.call_fla(chunk_kda, case)[0]

        def fla_fwdbwd():
            fla_fwd().backward(do)

        torch.cuda.synchronize()
        t0 = time.time()
        fla_fwdbwd()
        torch.cuda.synchronize()
        rec['fla_first_call_s'] = round(time.time() - t0, 2)
        # memory beyond inputs and outputs, and the reference outputs (this very call's)
        for x in leaves:
            x.grad = None
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        o = fla_fwd()
        torch.cuda.synchronize()
        kept = torch.cuda.memory_allocated() - base - nbytes(o)
        o.backward(do)
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() - base
        returned = nbytes(o) + sum(nbytes(x.grad) for x in leaves if x.grad is not None)
        rec['fla_bytes'] = dict(extra=peak - returned, peak_increase=peak, returned=returned, kept=kept)
        ref = dict(o=o.detach())
        for out, leaf in GRADS.items():
            ref[out] = Lv[leaf].grad.detach()
        del o
        for x in leaves:
            x.grad = None
        rec['fla_fwd'] = bench(fla_fwd)
        rec['fla_fwdbwd'] = bench(fla_fwdbwd, grad_to_none=leaves)
        for x in leaves:
            x.grad = None
        fb.set_grad(case, False)
        torch.cuda.empty_cache()

    specs = tensor_specs(T, H)
    tdt = {BF16: torch.bfloat16, F32: torch.float32}
    stream = torch.cuda.current_stream().cuda_stream
    inputs = dict(q=Lv['q'], k=Lv['k'], v=Lv['v'], g=Lv['g'], beta=Lv['beta'], A_log=Lv['A_log'],
                  dt_bias=Lv['dt_bias'], do=do)
    prev = None
    rec['cake'] = {}
    for save in args.modes.split(','):
        prog, vs = cake.variant(PROGRAM, options(variant, save))
        stages = entry_stages(cake, vs)
        plan = cake.plan(prog, dict(T=T, H=H, HV=H), cu, params(variant))
        work = torch.empty(max(plan.workspace_bytes, 256), dtype=torch.uint8, device='cuda')
        saved = torch.empty(max(plan.saved_bytes, 256), dtype=torch.uint8, device='cuda')
        outs = {n: torch.full(specs[n][1], float('nan'), dtype=tdt[specs[n][0]], device='cuda')
                for n in ('o',) + tuple(GRADS)}
        ts = dict(inputs, **outs)
        for n, t in ts.items():
            assert t.is_contiguous() and t.dtype == tdt[specs[n][0]] and t.numel() == math.prod(specs[n][1]), n
        named = {e: [(n, cake_tensor(ts[n], specs[n][1])) for n in names] for e, names in ENTRY_TENSORS.items()}
        fwd = plan.launcher('fwd', named['fwd'], work.data_ptr(), saved.data_ptr(), stream)
        bwd = plan.launcher('bwd', named['bwd'], work.data_ptr(), saved.data_ptr(), stream)

        def fwdbwd():
            fwd()
            bwd()

        fwdbwd()
        torch.cuda.synchronize()
        r = dict(variant_options=vs, workspace_bytes=plan.workspace_bytes, saved_bytes=plan.saved_bytes,
                 bytes=plan.workspace_bytes + plan.saved_bytes)
        if ref is not None:
            e = {n: fb.err_ratio(ref[n].reshape(-1), outs[n].reshape(-1)) for n in outs}
            r['err_ratio'] = {n: x[0] for n, x in e.items()}
            r['max_abs'] = {n: x[1] for n, x in e.items()}
        if prev is not None:
            r['bitwise_vs_' + prev[0]] = all(torch.equal(outs[n], prev[1][n]) for n in outs)
        r['fwd'] = bench(fwd)
        r['bwd'] = bench(bwd)
        r['fwdbwd'] = bench(fwdbwd)
        # per stage (device time per call), in the entries' order; other kernels and copies apart
        r['stages'] = {}
        for entry, fn in (('fwd', fwd), ('bwd', bwd)):
            st = stage_times(kernel_times(fn, args.profile_n), PROGRAM)
            order = stages.get(entry, [])
            r['stages'][entry] = {s: st.pop(s) for s in order if s in st}
            r['stages'][entry].update(st)
        rec['cake'][save] = r
        prev = (save, outs)
        plan.free()
        work = saved = named = ts = fwd = bwd = None
        torch.cuda.empty_cache()
    return rec


def table(rows, top):
    nan = float('nan')
    names = ('o',) + tuple(GRADS)
    print('\n| shape | variant | mode | fla fwd+bwd ms | cake fwd+bwd ms | fla / cake | cake fwd ms | cake bwd ms | '
          f'top stages (ms) | cake bytes (ws+saved) | fla bytes (peak - outputs) | err {" ".join(names)} |')
    print('|' + '---|' * 12)
    for r in rows:
        fla = r.get('fla_fwdbwd', {}).get('median_ms', nan)
        fb_ = r.get('fla_bytes', {}).get('extra')
        for save, c in r['cake'].items():
            ck = c['fwdbwd']['median_ms']
            st = [(f'{e}.{s}', ms) for e, d in c['stages'].items() for s, ms in d.items()]
            st.sort(key=lambda x: -x[1])
            tops = ', '.join(f'{s} {ms:.2f}' for s, ms in st[:top])
            err = ' '.join(f'{c["err_ratio"][n]:.1e}' for n in names) if 'err_ratio' in c else '-'
            mode = save + ''.join(f' ({"bitwise =" if v else "differs from"} {k[11:]})'
                                  for k, v in c.items() if k.startswith('bitwise_vs_'))
            print(f"| {shape_name(dict(T=r['T'], H=r['H'], seqlens=r['seqlens']))} | {r['variant']} | {mode} | "
                  f"{fla:.3f} | {ck:.3f} | {fla / ck:.2f} | {c['fwd']['median_ms']:.3f} | "
                  f"{c['bwd']['median_ms']:.3f} | {tops} | {c['bytes'] / 2**30:.2f} GiB | "
                  f"{'-' if fb_ is None else f'{fb_ / 2**30:.2f} GiB'} | {err} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--fla', default='.anchor/fla')
    ap.add_argument('--anchor', default='.anchor')
    ap.add_argument('--package', required=True)
    ap.add_argument('--lib', required=True)
    ap.add_argument('--out', default='/tmp/cake-bench')
    ap.add_argument('--shapes', default='b,c,a,d', help='keys of the harness SHAPES')
    ap.add_argument('--variants', default='layer,safe', help=','.join(VARIANTS))
    ap.add_argument('--modes', default=','.join(MODES), help='save modes of kda_train')
    ap.add_argument('--no-fla', action='store_true', help='Cake only (no times, memory or errors of fla)')
    ap.add_argument('--warmup', type=int, default=25, help='do_bench warmup, ms')
    ap.add_argument('--rep', type=int, default=150, help='do_bench repetition time, ms')
    ap.add_argument('--profile-n', type=int, default=3, help='profiled calls per entry')
    ap.add_argument('--top', type=int, default=3, help='stages in the table')
    ap.add_argument('--deadline', type=float, default=270.0,
                    help='seconds since the start after which no further case begins')
    ap.add_argument('--dry-run', action='store_true', help='plan and validate only: no torch, no GPU')
    args = ap.parse_args()
    for v in args.variants.split(','):
        assert v in VARIANTS, f'variant {v}: one of {", ".join(VARIANTS)}'
    for m in args.modes.split(','):
        assert m in MODES, f'mode {m}: one of {", ".join(MODES)}'
    fb = load_anchor(args.anchor)
    cake = Cake(args.lib, args.package)
    if args.dry_run:
        dry_run(args, fb, cake)
        return
    import torch
    import triton

    os.makedirs(args.out, exist_ok=True)
    chunk_kda, fla_version = None, None
    if not args.no_fla:
        chunk_kda, _, fla_version = fb.import_fla(args.fla)
    dev = torch.cuda.get_device_properties(0)
    print(f'# {dev.name}, {dev.multi_processor_count} SMs, torch {torch.__version__}, triton {triton.__version__}'
          + ('' if args.no_fla else f', fla {fla_version}'), flush=True)
    t0 = time.time()
    rows = []
    with open(os.path.join(args.out, 'bench_kda_train.jsonl'), 'a') as results:
        for variant in args.variants.split(','):
            for skey in args.shapes.split(','):
                if time.time() - t0 > args.deadline:
                    print(f'# skipped {variant} {skey}: past --deadline {args.deadline:.0f} s', flush=True)
                    continue
                rec = run_case(args, fb, cake, chunk_kda, variant, skey)
                torch.cuda.empty_cache()
                rec['t_s'] = round(time.time() - t0, 1)
                print(json.dumps(rec), flush=True)
                results.write(json.dumps(rec) + '\n')
                results.flush()
                rows.append(rec)
    with open(os.path.join(args.out, 'bench_kda_train.json'), 'w') as f:
        json.dump(dict(gpu=dev.name, sms=dev.multi_processor_count, torch=torch.__version__,
                       triton=triton.__version__, fla=fla_version, rows=rows), f, indent=1)
    table(rows, args.top)


if __name__ == '__main__':
    main()
