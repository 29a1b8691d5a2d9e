program grid_invalid
dim T, H
const C = 24
sequence T, chunk C
const V = 64
in x : f32[T, V]
kernel a over (c in chunks, d in chunks) threads 100 { }
kernel b over (n in docs, j in V / 48) { }
kernel e over (h in H, h in H) { }
