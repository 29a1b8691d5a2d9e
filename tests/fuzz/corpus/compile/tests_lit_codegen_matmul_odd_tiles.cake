program mm
dim T
sequence T, chunk 16
in a : bf16[144, 16]
in b : bf16[16, 72]
out y : f32[144, 72]
kernel k over (h in 1) threads 32 {
  store y[:, :] = load a[:, :] @ load b[:, :]
}
entry fwd = k
