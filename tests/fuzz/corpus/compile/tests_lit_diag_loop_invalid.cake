program loop_invalid
option bad = loops in (loops, owner)
dim T, N, H
const C = 16
sequence T, docs N, chunk C
in  x : f32[T, H, 8]
out y : f32[T, H, 8]
out z : f32[N, H, 8]
if bad == loops {
kernel a over (c in chunks, h in H) {
  acc = load x[c, h, :]
  a1 = acc
  for i in range(2.0) carry a1 {
    a1 = a1 + 1.0
  }
  a2 = acc
  for i in range(load x[c, h, :]) carry a2 {
    a2 = a2 + 1.0
  }
  for i in range(H) carry acc {
    for j in range(2) carry acc {
      acc = acc * 2.0
    }
    i = 3
    k = 1.0
  }
  store y[c, h, :] = acc * k
}
kernel b over (n in docs, h in H) {
  S = load x[0, h, :]
  U = 0.0
  for c in chunks(n) carry S {
    for i in range(2) carry S {
      S = S + 1.0
    }
  }
  for i in range(H) carry S, U {
    for c in chunks(n) carry S {
      S = S + 1.0
    }
    U = 2.0
    v = where(valid(i)[:, None], S, 0.0)
  }
  store z[n, h, :] = S
}
kernel d over (c in chunks, h in H) {
  t = load x[c, h, :]
  m = 1.0
  for i in range(H) carry t {
    m = 2.0
  }
}
entry fwd = a
} else {
out q : f32[T, H, 8]
kernel o over (c in chunks, h in H) {
  t = load x[c, h / 2, :]
  store y[c, (h / 2) * 2 + h % 2, :] = t
  store q[c, h / 2, :] = t
  store q[c, h - h, :] = t
}
entry fwd = o
}
