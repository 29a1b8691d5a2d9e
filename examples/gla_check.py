"""gla_check.py - check specs/gla/gla_fwd.cake against its recurrence, the way a variant author
does (docs/tutorial.md walks through it).

  python3 examples/gla_check.py                      # CPU: the interpreter (cakec run)
  python3 examples/gla_check.py --device cuda --package build/package [--fla DIR]
                                                     # GPU: the compiled kernels, timed

Both modes draw random inputs, run the spec, and compare o and ht with a float64 evaluation of
the token recurrence (S <- Diag(exp(g_t)) S + k_t v_t^T, o_t = scale S^T q_t), by fla's metric
RMS(x - ref) / RMS(ref), tolerance 0.005. On the GPU it also checks bitwise repeatability and
times the forward (and fla's chunk_gla forward on the same inputs, when --fla is given).
Exit status 0 when every check passes.
"""
import argparse
import os
import sys

try:
    import torch
except ImportError:
    print('gla_check: torch is not importable: skipped')
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'python'))
import cake  # noqa: E402

SPEC = os.path.join(HERE, '..', 'specs', 'gla', 'gla_fwd.cake')
K = V = 128


def reference(q, k, v, g, h0, cu, scale):
    """float64 token recurrence, per document and head."""
    q, k, v, g, h0 = (x.double().cpu() for x in (q, k, v, g, h0))
    o = torch.zeros(q.shape[0], q.shape[1], V, dtype=torch.float64)
    ht = torch.zeros_like(h0)
    for d in range(len(cu) - 1):
        S = h0[d].clone()                                     # [H, K, V]
        for t in range(cu[d], cu[d + 1]):
            S = S * g[t].exp()[:, :, None] + k[t][:, :, None] * v[t][:, None, :]
            o[t] = scale * torch.einsum('hkv,hk->hv', S, q[t])
        ht[d] = S
    return o, ht


def err(x, ref):
    x = x.double().cpu()
    if not torch.isfinite(x).all():
        return float('nan')
    return float((x - ref).square().mean().sqrt() / ref.square().mean().sqrt())


def inputs(T, H, N, device, seed):
    gen = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=gen)
    x = dict(q=r(T, H, K).bfloat16(), k=r(T, H, K).bfloat16(), v=r(T, H, V).bfloat16(),
             g=torch.nn.functional.logsigmoid(r(T, H, K)) / 16, h0=r(N, H, K, V) * 0.1)
    return {n: t.to(device) for n, t in x.items()}


def check(o, ht, x, cu, scale):
    """o and ht against the float64 recurrence; True when both are within tolerance."""
    ro, rht = reference(**x, cu=cu, scale=scale)
    ok = True
    for name, got, ref in (('o', o, ro), ('ht', ht, rht)):
        e = err(got, ref)
        good = e == e and e <= 0.005
        ok &= good
        print(f'{name}: RMS error ratio {e:.2e} (tolerance 0.005)  {"PASS" if good else "FAIL"}')
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--device', default='cpu', choices=('cpu', 'cuda'))
    ap.add_argument('--package', default=os.path.join(HERE, '..', 'build', 'package'))
    ap.add_argument('--fla', default=None, help="fla's source tree, to time its chunk_gla on the same inputs")
    ap.add_argument('--seed', type=int, default=1)
    a = ap.parse_args()
    ok = True
    scale = K ** -0.5
    if a.device == 'cpu':
        cu = [0, 17, 100, 230]                  # three documents, chunks of 64: every case of the chain
        x = inputs(cu[-1], 2, len(cu) - 1, 'cpu', a.seed)
        out = cake.cpu.run(SPEC, 'fwd', x, cu_seqlens=cu)   # the interpreter: bf16 where the spec says bf16
        ok &= check(out['o'], out['ht'], x, cu, scale)
    else:
        cu = [0, 1000, 1001, 4096]
        x = inputs(cu[-1], 4, len(cu) - 1, 'cuda', a.seed)
        pkg = cake.load(a.package)
        plan = pkg.plan('gla_fwd', dims={'T': cu[-1], 'H': 4}, cu_seqlens=cu)
        ws = torch.empty(max(plan.workspace_bytes(), 1), dtype=torch.uint8, device='cuda')
        o = torch.empty(cu[-1], 4, V, dtype=torch.bfloat16, device='cuda')
        ht = torch.empty(len(cu) - 1, 4, K, V, dtype=torch.float32, device='cuda')

        def fwd():
            plan.launch('fwd', {**x, 'o': o, 'ht': ht}, workspace=ws)
        fwd()
        o1, ht1 = o.clone(), ht.clone()
        fwd()
        same = torch.equal(o, o1) and torch.equal(ht, ht1)
        print(f'repeat: {"bitwise identical" if same else "DIFFERENT"}')
        ok &= same
        t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(3):
            fwd()
        t0.record()
        for _ in range(20):
            fwd()
        t1.record()
        torch.cuda.synchronize()
        print(f'cake gla_fwd: {t0.elapsed_time(t1) / 20:.3f} ms  (T={cu[-1]}, H=4, 3 documents)')
        ok &= check(o1, ht1, x, cu, scale)          # checked before fla, whose first call autotunes
        if a.fla:
            sys.path.insert(0, a.fla)
            from fla.ops.gla import chunk_gla
            cu_l = torch.tensor(cu, dtype=torch.long, device='cuda')
            run = lambda: chunk_gla(x['q'][None], x['k'][None], x['v'][None], x['g'][None], scale=scale,
                                    initial_state=x['h0'], output_final_state=True, cu_seqlens=cu_l)
            fo, _ = run()
            print(f'fla chunk_gla o vs float64: {err(fo[0], reference(**x, cu=cu, scale=scale)[0]):.2e}')
            for _ in range(3):
                run()
            t0.record()
            for _ in range(20):
                run()
            t1.record()
            torch.cuda.synchronize()
            print(f'fla chunk_gla: {t0.elapsed_time(t1) / 20:.3f} ms')
    print('gla_check:', 'PASS' if ok else 'FAIL')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
