// A program asks for at most 256 variants at once; the count is computed
// without overflow and --option narrows it.
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
// RUN: not %cakec %s --emit=cir --option o0=a 2>&1 | FileCheck %s --check-prefix=NARROWED
// RUN: %cakec %s --emit=cir --option o0=a,o1=a,o2=a,o3=a,o4=a,o5=a,o6=a,o7=a,o8=a | FileCheck %s --check-prefix=FEW
// RUN: python3 -c "print('program huge\n' + ''.join('option o%d = v0 in (' % i + ', '.join('v%d' % j for j in range(20)) + ')\n' for i in range(16)) + 'kernel k over (h in 1) { }')" > %t.cake
// RUN: not %cakec %t.cake --emit=cir 2>&1 | FileCheck %s --check-prefix=HUGE
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
// CHECK: variants_invalid.cake:8:9: error: program 'variants_invalid' asks for 16777216 variants (every combination of its options' values); at most 256 are compiled at once: fix some options with --option name=value
// NARROWED: error: program 'variants_invalid' asks for 4194304 variants
// FEW: // variant o0=a,o1=a,o2=a,o3=a,o4=a,o5=a,o6=a,o7=a,o8=a,o9=a,o10=a,o11=a
// FEW: // variant o0=a,o1=a,o2=a,o3=a,o4=a,o5=a,o6=a,o7=a,o8=a,o9=d,o10=d,o11=d
// HUGE: variants_invalid.cake.tmp.cake:1:9: error: program 'huge' asks for more than 18446744073709551615 variants
