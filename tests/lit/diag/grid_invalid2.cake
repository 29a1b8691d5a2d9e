// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
program grid_invalid2
dim T, H
const C = 16, V = 64
sequence T, chunk C
in x : f32[T, V]
kernel a over (c in chunks, d in chunks) threads 100 { }
kernel b over (n in docs, j in V / 48) { }
kernel e over (h in H, h in H) { }
kernel f over (T in H) { }
// CHECK: grid_invalid2.cake:7:50: error: threads must be a multiple of 32 in [32, 1024], got 100
// CHECK: grid_invalid2.cake:7:34: error: a kernel has at most one grid axis over chunks
// CHECK: grid_invalid2.cake:8:21: error: a grid over docs needs documents: declare `sequence T, docs N, chunk C`
// CHECK: grid_invalid2.cake:8:34: error: blocked axis 64 / 48: the block size must divide the extent
// CHECK: grid_invalid2.cake:9:24: error: grid index 'h' is declared twice
// CHECK: grid_invalid2.cake:10:16: error: grid index 'T' hides the dimension of the same name
