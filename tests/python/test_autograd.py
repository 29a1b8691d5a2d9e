"""cake.autograd and cake.kda on the CPU: the training program's backward entry checked
against finite differences of its forward entry with torch.autograd.gradcheck, the
interpreter running in exact double precision (cakec run --exact). Needs torch; without it
the test exits with 77 (reported as skipped, never as passed)."""
import os
import sys
import unittest

try:
    import torch
except ImportError:
    print('test_autograd: torch is not importable: skipped')
    sys.exit(77)

import cake
import cake.autograd

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
SPEC = os.path.join(ROOT, 'specs', 'kda', 'kda_train.cake')


def inputs(T, H, HV, gate, seed, h0_docs=0):
    g = torch.Generator().manual_seed(seed)
    r = lambda *s, scale=1.0: (torch.randn(*s, generator=g, dtype=torch.float64) * scale).requires_grad_()
    x = dict(q=r(T, H, 128), k=r(T, H, 128), v=r(T, HV, 128), beta=r(T, HV))
    if gate == 'external':
        x['g'] = (-torch.rand(T, HV, 128, generator=g, dtype=torch.float64) * 0.5).requires_grad_()
    else:
        x.update(g=r(T, HV, 128), A_log=r(HV, scale=0.3), dt_bias=r(HV, 128, scale=0.3))
    if h0_docs:
        x['h0'] = r(h0_docs, HV, 128, 128, scale=0.1)
    return x


class KdaGradcheck(unittest.TestCase):
    def check(self, gate, save, T, H, HV, cu, h0, outputs=('o', 'ht'), qk_norm='true'):
        ndocs = 1 if cu is None else len(cu) - 1
        x = inputs(T, H, HV, gate, seed=T * 7 + HV, h0_docs=ndocs if h0 else 0)
        op = cake.autograd.TrainingOp('kda_train', spec=SPEC,
                                      options=dict(gate=gate, save=save, qk_norm=qk_norm, beta_logits='true'))
        names = sorted(x)

        def f(*ts):
            return op(dict(zip(names, ts)), outputs=outputs, cu_seqlens=cu)

        self.assertTrue(torch.autograd.gradcheck(f, tuple(x[n] for n in names), eps=1e-6, atol=1e-6, rtol=1e-4,
                                                 fast_mode=True))

    def test_softplus_ckpt_two_docs_h0(self):
        self.check('softplus', 'ckpt', 6, 1, 1, [0, 2, 6], h0=True)

    def test_safe_states_gva(self):
        self.check('safe', 'states', 4, 1, 2, None, h0=False)

    def test_external_no_norm(self):
        self.check('external', 'ckpt', 3, 1, 1, [0, 1, 3], h0=True, outputs=('o',), qk_norm='false')

    def test_a_wrong_backward_fails(self):
        """The check can fail: with dq's sign flipped, the directional derivative along a random
        direction (what gradcheck's fast mode compares) no longer matches. (A failing gradcheck
        would build the whole Jacobian for its message: thousands of runs, so the comparison
        is done here directly.)"""
        x = inputs(3, 1, 1, 'softplus', seed=5)
        names = sorted(x)
        op = cake.autograd.TrainingOp('kda_train', spec=SPEC, options=dict(gate='softplus'))
        gen = torch.Generator().manual_seed(9)
        u = {n: torch.randn(t.shape, generator=gen, dtype=torch.float64) for n, t in x.items()}

        def directional(flip):
            eps = 1e-6
            f = lambda s: op({n: (x[n] + s * eps * u[n]).detach() for n in names})
            w = torch.randn((3, 1, 128), generator=torch.Generator().manual_seed(3), dtype=torch.float64)
            numeric = ((f(1) - f(-1)) * w).sum() / (2 * eps)
            xs = {n: t.detach().clone().requires_grad_() for n, t in x.items()}
            backward = cake.autograd._CpuRunner.backward

            def flipped(self, ins, outs, grads, state):
                d = backward(self, ins, outs, grads, state)
                d['dq'] = -d['dq']
                return d
            if flip:
                cake.autograd._CpuRunner.backward = flipped
            try:
                (op(xs) * w).sum().backward()
            finally:
                cake.autograd._CpuRunner.backward = backward
            analytic = sum((xs[n].grad * u[n]).sum() for n in names)
            return float(numeric), float(analytic)

        n0, a0 = directional(False)
        n1, a1 = directional(True)
        self.assertAlmostEqual(a0, n0, delta=1e-4 * max(1.0, abs(n0)))
        self.assertGreater(abs(a1 - n1), 1e-2 * max(1.0, abs(n1)))


class KdaOp(unittest.TestCase):
    def test_kda_matches_cpu_runner(self):
        """cake.kda's forward is the interpreter's: the same bits as cake.cpu.run."""
        x = inputs(5, 1, 1, 'softplus', seed=1)
        o, ht = cake.kda(x['q'], x['k'], x['v'], x['g'], x['beta'], x['A_log'], x['dt_bias'],
                         output_final_state=True, cu_seqlens=[0, 5])
        ref = cake.cpu.run(SPEC, 'fwd', {n: t.detach() for n, t in x.items()}, cu_seqlens=[0, 5], exact=True,
                           options=dict(gate='softplus', qk_norm='true', beta_logits='true', save='ckpt'))
        self.assertTrue(torch.equal(o.detach(), ref['o']))
        self.assertTrue(torch.equal(ht.detach(), ref['ht']))
        self.assertEqual(tuple(o.shape), (5, 1, 128))
        (o.square().sum() + ht.sum()).backward()
        for n in ('q', 'k', 'v', 'g', 'beta', 'A_log', 'dt_bias'):
            self.assertIsNotNone(x[n].grad, n)
            self.assertTrue(torch.isfinite(x[n].grad).all(), n)

    def test_errors(self):
        x = inputs(2, 1, 1, 'softplus', seed=2)
        with self.assertRaisesRegex(cake.Error, 'needs A_log and dt_bias'):
            cake.kda(x['q'], x['k'], x['v'], x['g'], x['beta'])
        with self.assertRaisesRegex(cake.Error, "has no tensor 'nope'|no tensor 'nope'"):
            cake.autograd.TrainingOp('kda_train', spec=SPEC)({'nope': x['q']})


TOY = """program toy
dim N
param s : i32 = 1
in  x, a : f32[N, 4]
out y, z : f32[N, 4]
out h : f16[N, 4]
in  dy, dz : f32[N, 4]
out dx, da : f32[N, 4]
kernel f over (i in N) {
  store y[i, :] = load x[i, :] * load a[i, :] * (s as f32)
  store z[i, :] = load x[i, :] * 2.0
  store h[i, :] = (load x[i, :] * 0.1) as f16
}
kernel b over (i in N) {
  store dx[i, :] = load dy[i, :] * load a[i, :] * (s as f32) + load dz[i, :] * 2.0
  store da[i, :] = load dy[i, :] * load x[i, :] * (s as f32)
}
entry fwd = f
entry bwd = b
"""


class GenericOp(unittest.TestCase):
    """TrainingOp on a toy program: nothing in it knows KDA."""

    def leaves(self, n=3):
        g = torch.Generator().manual_seed(n)
        return {k: torch.randn(n, 4, generator=g, dtype=torch.float64).requires_grad_() for k in ('x', 'a')}

    def test_unrequested_output_gets_a_zero_gradient(self):
        x = self.leaves()
        op = cake.autograd.TrainingOp('toy', spec=TOY, params={'s': 3})  # an i32 param from Python
        y = op(x, outputs='y')
        y.sum().backward()  # z was not asked for: dz = 0, not random
        self.assertTrue(torch.equal(x['x'].grad, 3 * x['a'].detach()))
        self.assertTrue(torch.equal(x['a'].grad, 3 * x['x'].detach()))
        x = self.leaves()
        self.assertTrue(torch.autograd.gradcheck(lambda xx, aa: op({'x': xx, 'a': aa}, outputs=('y', 'z')),
                                                 (x['x'], x['a']), eps=1e-6, atol=1e-8))

    def test_a_missing_input_is_an_error(self):
        x = self.leaves()
        op = cake.autograd.TrainingOp('toy', spec=TOY)
        with self.assertRaisesRegex(cake.Error, "input 'a' of entry 'fwd' is not given"):
            op({'x': x['x']}, outputs='y')

    def test_outputs_are_freed(self):
        """The graph keeps no cycle through the outputs: they go when the caller drops them."""
        import gc
        import weakref
        x = self.leaves()
        op = cake.autograd.TrainingOp('toy', spec=TOY)
        y, z = op(x, outputs=('y', 'z'))
        (y.sum() + z.sum()).backward()
        refs = [weakref.ref(y), weakref.ref(z)]
        del y, z
        gc.collect()
        self.assertEqual([r() for r in refs], [None, None])

    def test_cpu_run_reads_f16_and_takes_paths(self):
        import pathlib
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            path = pathlib.Path(d) / 'toy.cake'
            path.write_text(TOY)
            out = cake.cpu.run(path, 'fwd', {'x': torch.ones(2, 4), 'a': torch.ones(2, 4)})
            self.assertEqual(float(out['h'][0, 0]), float(torch.tensor(0.1).half()))
            with self.assertRaisesRegex(cake.Error, 'not found'):
                cake.cpu.run(str(path) + '.missing.cake', 'fwd', {})


if __name__ == '__main__':
    unittest.main()
