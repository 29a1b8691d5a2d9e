program reduce_chunks
option save = ckpt in (ckpt, states)
dim T, N, H
const C = 16
sequence T, docs N, chunk C
in  x    : f32[T, H, 8]
out tot  : f32[H, 8]
out last : f32[H]
if save == states {
  save part : f32[chunks, H, 8]
} else {
  temp part : f32[chunks, H, 8]
}
kernel partial over (c in chunks, h in H) {
  store part[c, h, :] = sum(load x[c, h, :], 0)
}
kernel total over (h in H) {
  S = load x[0, h, :] * 0.0
  for c in reverse chunks carry S {
    S = S + load part[c, h, :]
    store last[h] = S[0]
  }
  store tot[h, :] = S
}
entry fwd = partial, total
