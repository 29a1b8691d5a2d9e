// An entry names a group other than rounds(...); rounds in a program
// without ranks; misused send_next and send_prev.
// RUN: not %cakec %s --emit=cir 2>&1 | FileCheck %s
// RUN: not %cakec %S/Inputs/rounds_no_ranks.cake --emit=cir 2>&1 | FileCheck %s --check-prefix=NORANKS
program rounds_invalid2
dim T, N, R, F
const C = 16, W = 8
sequence T, docs N, chunk C
ranks R, fragments F
in   x : f32[T, W]
out  y : f32[T, W]
kernel k over (n in docs) {
  store y[0, :] = load x[0, :]
}
entry e = later(k)
// CHECK: rounds_invalid2.cake:15:11: error: expected a stage name or `rounds(...)` in the entry, got 'later(...)'
// NORANKS: rounds_no_ranks.cake:9:15: error: a loop over `ends()` walks the fragments of every rank: it needs a context-parallel program
// NORANKS: rounds_no_ranks.cake:14:28: error: entry 'fwd' lists 'k' in rounds reverse(...): rounds pass values from fragment to fragment of a document across ranks
// RUN: not %cakec %S/Inputs/send_invalid.cake --emit=cir 2>&1 | FileCheck %s --check-prefix=SEND
// SEND: send_invalid.cake:11:31: error: send_next's destination must have the source's shape and dtype (f32): 'b' has not
// SEND: send_invalid.cake:12:25: error: send_prev sends the same number of bytes from every rank, but 'c' has an extent of T
// SEND: send_invalid.cake:13:28: error: send_next takes only its source: `send_next(a)`
// An exchange sends what no earlier stage wrote, or fills what no later stage reads.
// RUN: not %cakec %S/Inputs/exchange_order.cake --emit=cir 2>&1 | FileCheck %s --check-prefix=ORDER
// ORDER: exchange_order.cake:19:7: error: entry 'e1' runs exchange 'g1', which sends 'a', but no stage before it in the entry writes 'a'
// ORDER: exchange_order.cake:20:7: error: entry 'e2' runs exchange 'g1', which fills 'ga', but no stage after it in the entry reads 'ga'
// ORDER: exchange_order.cake:21:7: error: entry 'e3' runs exchange 'g2', which sends 'b', but no stage before it in the entry writes 'b'
// ORDER: exchange_order.cake:21:7: error: entry 'e3' runs exchange 'g2', which fills 'a', but no stage after it in the entry reads 'a'
