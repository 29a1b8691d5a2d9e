program math_ptx
dim T
sequence T, chunk 16
in  x : f32[T, 16]
out o1, o2, o3, o4, o5 : f32[T, 16]
kernel th over (c in chunks) { store o1[c, :] = tanh(load x[c, :]) }
kernel lp over (c in chunks) { store o2[c, :] = log1p(load x[c, :]) }
kernel em over (c in chunks) { store o3[c, :] = expm1(load x[c, :]) }
kernel ls over (c in chunks) { store o4[c, :] = logsigmoid(load x[c, :]) }
kernel si over (c in chunks) { store o5[c, :] = silu(load x[c, :]) }
entry fwd = th, lp, em, ls, si
