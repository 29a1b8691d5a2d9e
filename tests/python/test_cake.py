"""test_cake.py - the Python package (python/cake) on the CPU: compile a small spec through
libcake, load it through libcakert, plan, query bytes, validate bindings, and the errors.
No GPU and no torch needed. Run: PYTHONPATH=python CAKE_LIBRARY_PATH=build/lib python3 -m unittest
tests/python/test_cake.py (ctest: python.cake)."""
import ctypes as C
import gc
import os
import tempfile
import unittest

import cake
from cake import runtime as rt

HERE = os.path.dirname(os.path.abspath(__file__))
FIRST = os.path.join(HERE, '..', '..', 'specs', 'first', 'first.cake')
TINY = '''program tiny
dim   T, H
const C = 16, D = 16
sequence T, chunk C
param scale : f32
in    x : f32[T, H, D]
out   y : f32[T, H, D]
temp  t : f32[chunks, H, D]
kernel main over (c in chunks, h in H) {
  store y[c, h, :] = load x[c, h, :] * scale
}
entry fwd = main
'''


def stand_ins(specs, addr=1 << 40):
    """{name: cake Tensor} at 4 KiB-aligned stand-in device addresses, for cake_validate."""
    out = {}
    for n, (dt, shape) in specs.items():
        out[n] = cake.tensor(addr, dt, shape)
        nbytes = rt.ELEM_BYTES[rt.DTYPES[dt]]
        for s in shape:
            nbytes *= s
        addr += (nbytes + 4095) // 4096 * 4096
    return out


class CakeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.out = tempfile.TemporaryDirectory(prefix='cake-pytest-')
        cls.pkg = cake.compile(FIRST, archs='sm_90a', output=os.path.join(cls.out.name, 'first'), cache_dir='')

    @classmethod
    def tearDownClass(cls):
        cls.pkg.close()
        cls.out.cleanup()

    def test_programs(self):
        self.assertEqual(self.pkg.programs(), ['first'])
        self.assertEqual(self.pkg.variants('first'), [''])
        self.assertEqual(cake.load(self.pkg.path).programs(), ['first'])
        self.assertIn('sm_90a', cake.default_archs())
        self.assertTrue(cake.version())

    def test_plan_bytes(self):
        # first: chunk 64, no temps or saved tensors: the workspace holds the chunk table alone,
        # 16 bytes per chunk, padded to 256; chunks = sum over documents of ceil(len / 64)
        for T, cu in [(200, None), (200, [0, 70, 200]), (1000, [0, 1, 2, 3, 1000]), (64 * 40, None)]:
            lens = [T] if cu is None else [b - a for a, b in zip(cu, cu[1:])]
            chunks = sum((n + 63) // 64 for n in lens)
            plan = self.pkg.plan('first', dims={'T': T, 'H': 3}, cu_seqlens=cu)
            self.assertEqual(plan.chunk_count, chunks)
            self.assertEqual(plan.dim('chunks'), chunks)
            self.assertEqual(plan.dim('T'), T)
            self.assertEqual(plan.item('chunk_table'), (0, 16 * chunks))
            self.assertEqual(plan.workspace_bytes(), (16 * chunks + 255) // 256 * 256)
            self.assertEqual(plan.saved_bytes(), 0)

    def test_validate(self):
        T, H = 130, 2
        plan = self.pkg.plan('first', dims={'T': T, 'H': H})
        ts = stand_ins({'x': ('bf16', [T, H, 64]), 'y': ('bf16', [T, H, 64]), 'w': ('f32', [H, 64]),
                        'z': ('f32', [T, H, 64])})
        plan.validate('fwd', ts)
        bad = dict(ts, w=cake.tensor(ts['w'].data, 'f32', [H, 63]))
        with self.assertRaises(cake.Error) as e:
            plan.validate('fwd', bad)
        self.assertEqual(e.exception.status, cake.ERR_TENSOR)
        self.assertIn('w: axis 1 (64) has extent 63', e.exception.message)
        with self.assertRaises(cake.Error) as e:
            plan.validate('fwd', {k: v for k, v in ts.items() if k != 'z'})
        self.assertIn("'z'", e.exception.message)
        with self.assertRaises(cake.Error) as e:
            plan.validate('bwd', ts)
        self.assertEqual(e.exception.status, cake.ERR_NOT_FOUND)
        # launching without a workspace is refused before the runtime is asked
        with self.assertRaises(cake.Error) as e:
            plan.launch('fwd', ts)
        self.assertIn('workspace', str(e.exception))

    def test_tensor_protocols(self):
        # __cuda_array_interface__, strided; __dlpack__ through a capsule made here
        class CAI:
            __cuda_array_interface__ = {'data': (1 << 40, False), 'shape': (4, 8), 'typestr': '<f4',
                                        'strides': (64, 4), 'version': 3}
        t, _ = rt._tensor(CAI())
        self.assertEqual((t.data, t.dtype, t.rank, t.shape[0], t.shape[1]), (1 << 40, cake.F32, 2, 4, 8))
        self.assertEqual((t.strides[0], t.strides[1]), (16, 1))  # not contiguous: strides in elements
        CAI.__cuda_array_interface__ = dict(CAI.__cuda_array_interface__, strides=None)
        t, _ = rt._tensor(CAI())
        self.assertEqual((t.strides[0], t.strides[1]), (0, 0))  # contiguous: zeros

        shape = (C.c_int64 * 3)(5, 2, 16)
        dl = rt._DLTensor(data=1 << 41, ndim=3, shape=shape, strides=None, byte_offset=256)
        dl.dtype.code, dl.dtype.bits, dl.dtype.lanes = 4, 16, 1
        new = C.pythonapi.PyCapsule_New
        new.restype, new.argtypes = C.py_object, [C.c_void_p, C.c_char_p, C.c_void_p]

        class DL:
            def __dlpack__(self, stream=None):
                return new(C.addressof(dl), b'dltensor', None)
        t, _ = rt._tensor(DL())
        self.assertEqual((t.data, t.dtype, t.rank, list(t.shape[:3])), ((1 << 41) + 256, cake.BF16, 3, [5, 2, 16]))
        self.assertEqual(rt._address_and_bytes(DL()), ((1 << 41) + 256, 5 * 2 * 16 * 2))
        CAI.__cuda_array_interface__ = dict(CAI.__cuda_array_interface__, typestr='|u1', shape=(512,))
        self.assertEqual(rt._area(CAI(), 256, 'workspace'), (1 << 40, 512))
        self.assertEqual(rt._area(1 << 40, 256, 'workspace'), (1 << 40, 256))
        with self.assertRaises(TypeError):
            rt._tensor(object())

    def test_errors(self):
        dims = {'T': 200, 'H': 3}
        cases = [
            (dict(program='nope', dims=dims), cake.ERR_NOT_FOUND, "no program 'nope'"),
            (dict(program='first', dims={'T': 200, 'H': 3, 'Q': 1}), cake.ERR_ARGUMENT, "no dim 'Q'"),
            (dict(program='first', dims={'T': -1, 'H': 3}), None, 'T'),
            (dict(program='first', dims=dims, cu_seqlens=[0, 300, 200]), cake.ERR_PLAN, 'cu_seqlens[2]'),
            (dict(program='first', dims=dims, cu_seqlens=[0, 100]), cake.ERR_PLAN, 'the last offset'),
            (dict(program='first', dims=dims, cu_seqlens=[1, 200]), cake.ERR_PLAN, 'cu_seqlens[0]'),
            (dict(program='first', dims=dims, cu_seqlens=[0, 2**32]), cake.ERR_PLAN, 'cu_seqlens[1]'),
            (dict(program='first', dims=dims, cu_seqlens=[]), cake.ERR_ARGUMENT, 'cu_seqlens'),
            (dict(program='first', dims=dims, params={'eps': 1}), cake.ERR_ARGUMENT, "'eps'"),
            (dict(program='first', dims=dims, options={'gate': 'safe'}), cake.ERR_ARGUMENT, "'gate'"),
        ]
        for kw, status, text in cases:
            with self.subTest(**{k: str(v) for k, v in kw.items()}):
                with self.assertRaises(cake.Error) as e:
                    self.pkg.plan(**kw)
                if status is not None:
                    self.assertEqual(e.exception.status, status, e.exception)
                self.assertIn(text, e.exception.message)
                self.assertTrue(e.exception.status_name.startswith('CAKE_ERR_'))
        with self.assertRaises(cake.Error) as e:
            cake.load(os.path.join(self.out.name, 'missing'))
        self.assertEqual(e.exception.status, cake.ERR_IO)
        self.assertIn('missing', e.exception.message)
        with self.assertRaises(cake.Error) as e:
            self.pkg.plan('first', dims=dims).item('nothing')
        self.assertIn("'nothing'", e.exception.message)

    def test_compile_text_params_and_errors(self):
        pkg = cake.compile(TINY, archs='sm_90a', cache_dir='')
        path = pkg.path
        plan = pkg.plan('tiny', dims={'T': 40, 'H': 2}, params={'scale': 0.5})
        off, n = plan.item('t')
        ws = plan.workspace_bytes()
        self.assertEqual(n, 3 * 2 * 16 * 4)  # temp t: f32[chunks, H, D], chunks = ceil(40 / 16)
        self.assertGreaterEqual(plan.workspace_bytes(), off + n)
        with self.assertRaises(cake.Error) as e:
            pkg.plan('tiny', dims={'T': 40, 'H': 2}, params={'scale': float('inf')})
        self.assertIn('scale', e.exception.message)
        # the plan keeps the package alive; the temporary directory goes with the package
        del pkg
        gc.collect()
        self.assertEqual(plan.workspace_bytes(), ws)
        self.assertTrue(os.path.isdir(path))
        del plan
        gc.collect()
        self.assertFalse(os.path.exists(path))
        with self.assertRaises(cake.CompileError) as e:
            cake.compile(TINY.replace('* scale', '* nothing'), archs='sm_90a')
        self.assertEqual(e.exception.status, 1)
        self.assertIn("nothing", e.exception.diagnostics)
        with self.assertRaises(cake.CompileError) as e:
            cake.compile(FIRST, archs='sm_1')
        self.assertEqual(e.exception.status, 2)

    def test_lifetimes(self):
        # plans outlive their Package object; close() twice is harmless; a closed package refuses
        pkg = cake.load(self.pkg.path)
        plans = [pkg.plan('first', dims={'T': 64 * i, 'H': 1}) for i in range(1, 50)]
        prog = pkg.program('first')
        del pkg
        gc.collect()
        self.assertEqual([p.chunk_count for p in plans], list(range(1, 50)))
        self.assertEqual(prog.plan({'T': 65, 'H': 1}).chunk_count, 2)
        del plans, prog
        gc.collect()
        pkg = cake.load(self.pkg.path)
        plan = pkg.plan('first', dims={'T': 64, 'H': 1})
        pkg.close()
        pkg.close()
        with self.assertRaises(cake.Error):
            pkg.programs()
        with self.assertRaises(cake.Error):
            plan.workspace_bytes()
        plan.close()
        for _ in range(200):
            cake.load(self.pkg.path).plan('first', dims={'T': 64, 'H': 1})
        gc.collect()


class PartitionTest(unittest.TestCase):
    """cake.partition over cake_partition: every token owned once, local offsets consistent."""

    def test_every_token_once(self):
        cu = [0, 15945, 15945 + 21845, 65536]
        for layout in cake.LAYOUTS:
            for R in (1, 2, 4):
                for align in (0, 64):
                    owned = []
                    for rank in range(R):
                        frags, local = cake.partition(cu, R, rank, layout, align)
                        self.assertEqual(local[0], 0)
                        self.assertEqual(len(local), len(frags) + 1)
                        for i, f in enumerate(frags):
                            self.assertEqual(f['local_start'], local[i])
                            self.assertEqual(local[i + 1] - local[i], f['end'] - f['start'])
                            self.assertTrue(cu[f['doc']] <= f['start'] < f['end'] <= cu[f['doc'] + 1])
                            if align and f['continues']:
                                self.assertEqual((f['start'] - cu[f['doc']]) % align, 0)
                            owned.append((f['start'], f['end']))
                    owned.sort()
                    self.assertEqual(owned[0][0], 0)
                    self.assertEqual(owned[-1][1], 65536)
                    self.assertTrue(all(a[1] == b[0] for a, b in zip(owned, owned[1:])), (layout, R, align))
        frags, local = cake.partition(cu, 1, 0, 'contiguous')
        self.assertEqual(local, cu)

    def test_errors(self):
        with self.assertRaisesRegex(cake.Error, 'must not decrease'):
            cake.partition([0, 5, 3], 2, 0)
        with self.assertRaisesRegex(cake.Error, 'unknown layout'):
            cake.partition([0, 5], 2, 0, 'ring')
        with self.assertRaisesRegex(cake.Error, 'rank'):
            cake.partition([0, 5], 2, 2)


KCP_CUMSUM = os.path.join(HERE, '..', 'unit', 'kcp', 'kcp_cumsum.cake')


class KcpTest(unittest.TestCase):
    """The context-parallel pieces on the CPU: plans from a partition, comm bytes, the timing query
    and the group launch's argument checks (launches and communicators need a GPU)."""

    @classmethod
    def setUpClass(cls):
        cls.pkg = cake.compile(KCP_CUMSUM, archs='sm_90a', cache_dir='')

    def test_partition_plans(self):
        cu = [0, 1000, 1300, 1300, 3000, 3001, 4000]
        for layout in cake.LAYOUTS:
            for R in (1, 2, 4):
                total, F = 0, set()
                for rank in range(R):
                    plan = self.pkg.plan('kcp_cumsum', cu_seqlens=cu,
                                         partition={'R': R, 'rank': rank, 'layout': layout, 'align': 16})
                    frags, local = cake.partition(cu, R, rank, layout, 16)
                    self.assertEqual(plan.dim('T'), local[-1])
                    self.assertEqual(plan.dim('N'), max(len(frags), 1))
                    self.assertEqual(plan.dim('R'), R)
                    F.add(plan.dim('F'))
                    total += plan.dim('T')
                    # all_gather of tot [F, W] f32: sent once, received from the R - 1 others
                    sent, received = plan.comm_bytes('fwd')
                    self.assertEqual(sent, plan.dim('F') * 8 * 4)
                    self.assertEqual(received, (R - 1) * sent)
                self.assertEqual(total, 4000)
                self.assertEqual(len(F), 1)  # every rank's plan knows the largest fragment count

    def test_errors(self):
        cu = [0, 100, 300]
        with self.assertRaisesRegex(cake.Error, 'R and rank required'):
            self.pkg.plan('kcp_cumsum', cu_seqlens=cu, partition={'R': 2})
        with self.assertRaisesRegex(cake.Error, 'unknown layout'):
            self.pkg.plan('kcp_cumsum', cu_seqlens=cu, partition={'R': 2, 'rank': 0, 'layout': 'ring'})
        with self.assertRaisesRegex(cake.Error, 'global cu_seqlens'):
            self.pkg.plan('kcp_cumsum', partition={'R': 2, 'rank': 0})
        with self.assertRaisesRegex(cake.Error, 'rank'):
            self.pkg.plan('kcp_cumsum', cu_seqlens=cu, partition={'R': 2, 'rank': 2})
        plan = self.pkg.plan('kcp_cumsum', cu_seqlens=cu, partition={'R': 2, 'rank': 0})
        plan.set_timing(True)
        with self.assertRaisesRegex(cake.Error, "entry 'fwd' has not been launched with timing on"):
            plan.stage_times('fwd')
        with self.assertRaisesRegex(cake.Error, 'no entry'):
            plan.comm_bytes('bwd')
        with self.assertRaisesRegex(cake.Error, '2 plans, but 1 tensor sets'):
            cake.launch_group([plan, plan], 'fwd', [{}], [0, 0], [None, None])
        with self.assertRaisesRegex(cake.Error, 'not 128'):
            cake.Comm.nccl(b'short', 2, 0)


if __name__ == '__main__':
    unittest.main()
