// cakec --emit=header: typed C launchers. Enums with 0 = the default, the
// union of the variants' tensors with when each exists, C keywords as
// field names get a trailing '_', one validate/launch pair per entry; the
// dims struct lists the requirements of every variant; an option with prefer
// clauses left at DEFAULT is chosen by the plan (cake_package_choose).
// RUN: %cakec %s --emit=header | FileCheck %s
// RUN: %cakec %s --emit=header > %t.a && %cakec %s --emit=header > %t.b && cmp %t.a %t.b
program hdr
option mode = lin in (exp, lin)
option tile = t32 in (t32, t16) prefer t16 when N * H <= 2 * SMS
dim T, H, N
const C = 16
sequence T, docs N, chunk C
require H > 0
if mode == exp {
  require T % C == 0 || N > 1
}
param alpha : f32 = 0.5
param beta : f32
in x : f32[T, H, 8]
if mode == exp {
  in int : f32[H]
}
in h0 : f32[N, H, 8] optional
out do : f32[T, H, 8]
kernel k over (c in chunks, h in H) {
  a = load x[c, h, :]
  if mode == exp {
    a = exp(a) * load int[h]
  }
  store do[c, h, :] = a * alpha + beta
}
entry fwd = k
entry only_k = k
// CHECK: #ifndef CAKE_GEN_HDR_H
// CHECK: #include "cake_runtime.h"
// CHECK: /* option mode (default lin) */
// CHECK-NEXT: typedef enum hdr_mode {
// CHECK-NEXT:   HDR_MODE_DEFAULT = 0,
// CHECK-NEXT:   HDR_MODE_EXP = 1,
// CHECK-NEXT:   HDR_MODE_LIN = 2,
// CHECK: /* option tile: DEFAULT is chosen by hdr_plan from the dims and the device:
// CHECK-NEXT:  *   prefer t16 when N * H <= 2 * SMS  (header.cake:10:49)
// CHECK-NEXT:  * else t32 */
// CHECK-NEXT: typedef enum hdr_tile {
// CHECK-NEXT:   HDR_TILE_DEFAULT = 0,
// CHECK: /* The problem's dims (every one is required).
// CHECK-NEXT: * The plan checks the spec's requirements (over dims and params):
// CHECK-NEXT: *   require H > 0  (header.cake:14:9)
// CHECK-NEXT: *   require T % C == 0 || N > 1  (header.cake:16:11)
// CHECK-NEXT: */
// CHECK-NEXT: typedef struct hdr_dims {
// CHECK-NEXT:   int64_t T; /* tokens of the packed sequence */
// CHECK-NEXT:   int64_t H;
// CHECK-NEXT:   const int32_t *cu_seqlens;
// CHECK-NEXT:   int64_t ndocs;             /* documents (dim N) */
// CHECK: struct { int set; double value; } alpha; /* f32, default 0.5 */
// CHECK-NEXT: struct { int set; double value; } beta; /* f32, required */
// CHECK: cake_tensor x; /* in f32[T, H, 8] */
// CHECK: cake_tensor int_; /* in f32[H]; only when mode is exp */
// CHECK-NEXT: cake_tensor h0; /* in optional f32[N, H, 8] */
// CHECK-NEXT: cake_tensor do_; /* out f32[T, H, 8] */
// CHECK: static const char *const values[] = {"lin", "exp", "lin"};
// CHECK: if (k) { /* DEFAULT: left to the prefer clauses */
// CHECK: const cake_dim_value dims
// CHECK-SAME: "T", d->T}, {"H", d->H}};
// CHECK-NEXT: if ((s = cake_package_choose(pkg, "hdr", variant, dims, 2, d->cu_seqlens ? d->ndocs : 0, NULL, &prog))) return s;
// CHECK: cake_plan_set_dim(plan, "T", d->T);
// CHECK: cake_plan_set_docs(plan, d->cu_seqlens, d->ndocs);
// CHECK: cake_plan_set_param(plan, "beta", p->beta.value);
// CHECK: b[n].name = "int";
// CHECK-NEXT: b[n].tensor = t->int_;
// CHECK: /* entry fwd: k */
// CHECK: static inline cake_status hdr_validate_fwd(
// CHECK: static inline cake_status hdr_launch_fwd(
// CHECK: static inline cake_status hdr_launch_only_k(
// CHECK: #endif /* CAKE_GEN_HDR_H */
