program variants
option o0 = a in (a, b, c, d)
option o1 = a in (a, b, c, d)
option o2 = a in (a, b, c, d)
option o3 = a in (a, b, c, d)
kernel k over (h in 1) { }
