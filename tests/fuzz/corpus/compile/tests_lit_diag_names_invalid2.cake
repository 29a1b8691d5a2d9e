program names_invalid2
dim T
sequence T, chunk 16
in x : f32[T, 16]
temp chunk_table : f32[T, 16]
save y, doc_table : f32[T, 16]
kernel k over (c in chunks) {
  store y[c, :] = load x[c, :]
}
entry fwd = k
