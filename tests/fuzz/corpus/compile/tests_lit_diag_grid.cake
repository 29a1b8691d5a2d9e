program grid
dim T, N, H
const C = 16, V = 64
sequence T, docs N, chunk C
in x : f32[T, V]
kernel a over (c in chunks, h in H) threads 256 { }
kernel b over (n in docs, j in V / 16, h in 3) { }
