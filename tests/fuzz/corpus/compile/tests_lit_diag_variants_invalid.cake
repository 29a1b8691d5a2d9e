program variants_invalid
option o0 = a in (a, b, c, d)
option o1 = a in (a, b, c, d)
option o2 = a in (a, b, c, d)
option o3 = a in (a, b, c, d)
option o4 = a in (a, b, c, d)
option o5 = a in (a, b, c, d)
option o6 = a in (a, b, c, d)
option o7 = a in (a, b, c, d)
option o8 = a in (a, b, c, d)
option o9 = a in (a, b, c, d)
option o10 = a in (a, b, c, d)
option o11 = a in (a, b, c, d)
kernel k over (h in 1) { }
