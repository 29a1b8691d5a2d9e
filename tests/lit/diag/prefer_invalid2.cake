// A program that declares its own SMS cannot use the device fact; `prefer`
// and `when` are keywords; a clause needs `when`.
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
// RUN: sed -e 's/when H/H/' %s > %t.cake && not %cakec %t.cake --emit=cir 2>&1 | FileCheck %s --check-prefix=SYNTAX
program prefer_invalid2
option vblock = v32 in (v32, v16) prefer v16 when H <= SMS
dim T, H, SMS
sequence T, chunk 16
in  x : f32[T, H, 8]
out y : f32[T, H, 8]
kernel k over (c in chunks, h in H) {
  store y[c, h, :] = load x[c, h, :]
}
entry fwd = k
// CHECK: prefer_invalid2.cake:6:56: error: 'SMS' names the device's multiprocessor count in a prefer condition, but the program declares its own 'SMS': rename it
// SYNTAX: error: syntax error
