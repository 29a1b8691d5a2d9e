/* live.c - the live ranges of temp tensors (live.h). */
#include "live.h"

#include <stdlib.h>
#include <string.h>

static void scan(const CirBlock *b, int *acc) {
  for (int i = 0; i < b->len; i++) {
    const CirInst *in = b->insts[i];
    if (in->tensor && in->op == OP_LOAD) {
      int *a = &acc[in->tensor->index];
      if (!(*a & ACC_STORE)) *a |= ACC_READ_FIRST;
      *a |= ACC_LOAD;
      for (int j = 0; j < in->tensor->rank; j++)
        if (in->index[j].halo) { /* a shifted window reads its tensor's halo too */
          int *h = &acc[in->index[j].halo->index];
          if (!(*h & ACC_STORE)) *h |= ACC_READ_FIRST;
          *h |= ACC_LOAD;
        }
    } else if (in->tensor && in->op == OP_STORE) {
      acc[in->tensor->index] |= ACC_STORE;
    }
    if (in->body) scan(in->body, acc);
  }
}

/* Does a stage after `s` in the rounds group of stage s store tensor t? */
static int group_stores(const CirEntry *en, int s, int t, const int *acc, int nt) {
  if (!en->group[s]) return 0;
  for (int j = s + 1; j < en->nstages && en->group[j] == en->group[s]; j++) {
    const CirKernel *k = en->stages[j];
    if (k->exchange ? k->xdst->index == t : (acc[(size_t)k->index * (size_t)nt + (size_t)t] & ACC_STORE) != 0) return 1;
  }
  return 0;
}

void cir_access(const CirKernel *k, int *acc) { scan(&k->body, acc); }

void cir_liveness(const CirProgram *p, CirLiveness *out) {
  int nt = p->ntensors, ne = p->nentries;
  out->ntensors = nt;
  out->nentries = ne;
  out->live = cake_xcalloc((size_t)nt * (size_t)ne + 1, sizeof(CirLive));
  out->pinned = cake_xcalloc((size_t)nt + 1, sizeof(int));
  for (int i = 0; i < nt * ne; i++) out->live[i] = (CirLive){-1, -1};
  /* each kernel's accesses, once */
  int *acc = cake_xcalloc((size_t)p->nkernels * (size_t)nt + 1, sizeof(int));
  for (int k = 0; k < p->nkernels; k++) scan(&p->kernels[k]->body, acc + (size_t)p->kernels[k]->index * (size_t)nt);
  for (int e = 0; e < ne; e++) {
    const CirEntry *en = p->entries[e];
    int *xacc = cake_xcalloc((size_t)nt + 1, sizeof(int)); /* an exchange: reads src, writes dst */
    for (int s = 0; s < en->nstages; s++) {
      const CirKernel *k = en->stages[s];
      const int *a = acc + (size_t)k->index * (size_t)nt;
      if (k->exchange) {
        memset(xacc, 0, sizeof(int) * (size_t)nt);
        xacc[k->xsrc->index] = ACC_LOAD | ACC_READ_FIRST;
        xacc[k->xdst->index] = ACC_STORE;
        a = xacc;
      }
      for (int t = 0; t < nt; t++) {
        if (p->tensors[t]->role != ROLE_TEMP || !a[t]) continue;
        CirLive *l = &out->live[t * ne + e];
        if (l->first < 0) {
          l->first = s;
          /* it expects a value from before the entry, unless a later stage
           * of the same rounds group writes it (a value of the round before) */
          if ((a[t] & ACC_READ_FIRST) && !group_stores(en, s, t, acc, nt)) out->pinned[t] = 1;
        }
        l->last = s;
      }
    }
    /* a temp that a rounds group touches lives through the whole group: its
     * stages run again in the next round */
    for (int t = 0; t < nt; t++) {
      CirLive *l = &out->live[t * ne + e];
      if (l->first < 0) continue;
      for (int g0 = 0; g0 < en->nstages; g0++) {
        if (!en->group[g0] || (g0 > 0 && en->group[g0 - 1] == en->group[g0])) continue;
        int g1 = g0;
        while (g1 + 1 < en->nstages && en->group[g1 + 1] == en->group[g0]) g1++;
        if (l->first <= g1 && l->last >= g0) {
          if (g0 < l->first) l->first = g0;
          if (g1 > l->last) l->last = g1;
        }
      }
    }
    free(xacc);
  }
  free(acc);
}

void cir_liveness_free(CirLiveness *l) {
  free(l->live);
  free(l->pinned);
  l->live = NULL;
  l->pinned = NULL;
}

void cir_live_dump(Buf *o, const CirProgram *p) {
  CirLiveness lv;
  cir_liveness(p, &lv);
  buf_printf(o, "program %s%s%s\n", p->name, p->noptions ? " " : "", p->variant);
  for (int e = 0; e < p->nentries; e++) {
    buf_printf(o, "entry %s =", p->entries[e]->name);
    for (int s = 0; s < p->entries[e]->nstages; s++)
      buf_printf(o, "%s %d:%s%s", s ? "," : "", s, p->entries[e]->stages[s]->name,
                 !p->entries[e]->group[s] ? "" : p->entries[e]->reverse[s] ? " (rounds reverse)" : " (rounds)");
    buf_puts(o, "\n");
  }
  for (int t = 0; t < p->ntensors; t++) {
    const CirTensor *ten = p->tensors[t];
    if (ten->role != ROLE_TEMP) continue;
    buf_printf(o, "temp %s :", ten->name);
    int any = 0;
    for (int e = 0; e < p->nentries; e++) {
      CirLive l = cir_live_of(&lv, t, e);
      if (l.first < 0) continue;
      const CirEntry *en = p->entries[e];
      buf_printf(o, "%s %s %d..%d (%s..%s)", any++ ? "," : "", en->name, l.first, l.last, en->stages[l.first]->name,
                 en->stages[l.last]->name);
    }
    if (!any) buf_puts(o, " no entry");
    if (lv.pinned[t]) buf_puts(o, "; pinned (read before written)");
    buf_puts(o, "\n");
  }
  cir_liveness_free(&lv);
}
