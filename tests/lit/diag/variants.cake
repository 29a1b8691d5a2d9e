// The valid counterpart of variants_invalid.cake: 256 variants, or more
// narrowed with --option.
// RUN: %cakec %s --emit=cir | FileCheck %s
// RUN: %cakec %s --emit=cir --option o3=b | FileCheck %s --check-prefix=FIXED
program variants
option o0 = a in (a, b, c, d)
option o1 = a in (a, b, c, d)
option o2 = a in (a, b, c, d)
option o3 = a in (a, b, c, d)
kernel k over (h in 1) { }
// CHECK: // variant o0=a,o1=a,o2=a,o3=a
// CHECK: // variant o0=d,o1=d,o2=d,o3=d
// FIXED: // variant o0=a,o1=a,o2=a,o3=b
// FIXED-NOT: o3=a
