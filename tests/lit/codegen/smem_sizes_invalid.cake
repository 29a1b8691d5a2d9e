// Shared-memory sizes are summed in 64 bits: a plan of more than 2^31 bytes
// is reported with its true size (it used to wrap in int arithmetic).
// RUN: python3 -c "print('program p\nin w : f32[1024, 1024]\nout y : f32[1024, 1024]\nkernel k over (h in 1) {\n' + ''.join('  a%d = exp(load w[:, :] + %d.0)\n' % (i, i) for i in range(600)) + '  store y[:, :] = ' + ' + '.join('a%d * a%d' % (i, i) for i in range(600)) + '\n}\nentry fwd = k')" > %t.cake
// RUN: not %cakec %t.cake --emit=mlir --arch=sm_90a 2>&1 | FileCheck %s
// CHECK: smem_sizes_invalid.cake.tmp.cake:4:8: error: kernel 'k' needs 2530623488 bytes of shared memory for its tiles; a block can have at most 232448
