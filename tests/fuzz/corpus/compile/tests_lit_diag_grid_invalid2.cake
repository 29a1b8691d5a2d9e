program grid_invalid2
dim T, H
const C = 16, V = 64
sequence T, chunk C
in x : f32[T, V]
kernel a over (c in chunks, d in chunks) threads 100 { }
kernel b over (n in docs, j in V / 48) { }
kernel e over (h in H, h in H) { }
kernel f over (T in H) { }
