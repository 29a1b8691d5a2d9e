/* cir.c - CIR construction helpers, use counts and the textual dump. */
#include "cir.h"

#include <stdio.h>
#include <string.h>

CirInst *cir_inst_new(Arena *a, CirProgram *p, CirOp op, CirType ty, Loc loc, int nargs) {
  CirInst *in = arena_alloc(a, sizeof(CirInst));
  in->op = op;
  in->ty = ty;
  in->loc = loc;
  in->id = p->next_id++;
  in->nargs = nargs;
  if (nargs) in->args = arena_alloc(a, sizeof(CirInst *) * (size_t)nargs);
  return in;
}

void cir_block_push(Arena *a, CirBlock *b, CirInst *inst) {
  if (b->len == b->cap) {
    int cap = b->cap ? b->cap * 2 : 16;
    CirInst **n = arena_alloc(a, sizeof(CirInst *) * (size_t)cap);
    if (b->len) memcpy(n, b->insts, sizeof(CirInst *) * (size_t)b->len);
    b->insts = n;
    b->cap = cap;
  }
  b->insts[b->len++] = inst;
}

static void count_block(CirBlock *b, int *next) {
  for (int i = 0; i < b->len; i++) {
    CirInst *in = b->insts[i];
    in->id = (*next)++;
    in->nuses = 0;
  }
  for (int i = 0; i < b->len; i++) {
    CirInst *in = b->insts[i];
    if (in->body) count_block(in->body, next);
  }
}

static void uses_block(CirBlock *b) {
  for (int i = 0; i < b->len; i++) {
    CirInst *in = b->insts[i];
    for (int j = 0; j < in->nargs; j++)
      if (in->args[j]) in->args[j]->nuses++;
    for (int j = 0; j < CIR_MAX_TENSOR_RANK; j++)
      if (in->index[j].v) in->index[j].v->nuses++;
    if (in->body) uses_block(in->body);
  }
}

/* Numbers values per kernel in program order (so an edit elsewhere in the
 * file does not change this kernel's dump or digest) and counts their uses. */
void cir_count_uses(CirKernel *k) {
  int next = 0;
  count_block(&k->body, &next);
  uses_block(&k->body);
}

void cir_type_str(char *buf, size_t n, CirType t) {
  if (t.rank == 0) snprintf(buf, n, "%s", dtype_name(t.dt));
  else if (t.rank == 1) snprintf(buf, n, "%s[%d]", dtype_name(t.dt), t.shape[0]);
  else snprintf(buf, n, "%s[%d, %d]", dtype_name(t.dt), t.shape[0], t.shape[1]);
}

void cir_extent_str(char *buf, size_t n, const CirProgram *p, CirExtent e) {
  if (e.sym >= 0) snprintf(buf, n, "%s", p->dims[e.sym].name);
  else snprintf(buf, n, "%lld", e.value);
}

static void dump_window(Buf *o, const CirInst *in) {
  buf_printf(o, "%s[", in->tensor->name);
  for (int i = 0; i < in->tensor->rank; i++) {
    const CirIndex *ix = &in->index[i];
    if (i) buf_puts(o, ", ");
    switch (ix->kind) {
      case IX_FULL: buf_printf(o, ":%d", ix->size); break;
      case IX_CHUNK:
        if (ix->shift && ix->halo) buf_printf(o, "chunk %%%d shift %d halo %s", ix->v->id, ix->shift, ix->halo->name);
        else if (ix->shift) buf_printf(o, "chunk %%%d shift %d", ix->v->id, ix->shift);
        else buf_printf(o, "chunk %%%d", ix->v->id);
        break;
      case IX_BLOCK: buf_printf(o, "block %%%d x %d", ix->v->id, ix->size); break;
      case IX_SCALAR: buf_printf(o, "%%%d", ix->v->id); break;
    }
  }
  buf_puts(o, "]");
}

static void dump_block(Buf *o, const CirProgram *p, const CirKernel *k, const CirBlock *b, int indent) {
  for (int i = 0; i < b->len; i++) {
    const CirInst *in = b->insts[i];
    char ty[64];
    cir_type_str(ty, sizeof ty, in->ty);
    buf_printf(o, "%*s", indent, "");
    if (in->op == OP_STORE) {
      buf_puts(o, "store ");
      dump_window(o, in);
      buf_printf(o, " = %%%d\n", in->args[0]->id);
      continue;
    }
    if (in->op == OP_YIELD) {
      buf_puts(o, "yield");
      for (int j = 0; j < in->nargs; j++) buf_printf(o, "%s %%%d", j ? "," : "", in->args[j]->id);
      buf_puts(o, "\n");
      continue;
    }
    if (in->op == OP_FOR) {
      if (in->counted)
        buf_printf(o, "for range %%%d carry(", in->args[0]->id);
      else if (in->before == 3)
        buf_printf(o, "for over ends()%s carry(", in->reverse ? " reverse" : "");
      else if (in->before)
        buf_printf(o, "for over %s(%%%d)%s carry(", in->before == 2 ? "after" : "before", in->args[0]->id,
                   in->reverse ? " reverse" : "");
      else if (in->all_chunks)
        buf_printf(o, "for over all %%%d chunks%s carry(", in->args[0]->id, in->reverse ? " reverse" : "");
      else
        buf_printf(o, "for over chunks of doc %%%d%s carry(", in->args[0]->id, in->reverse ? " reverse" : "");
      for (int j = 1; j < in->nargs; j++) buf_printf(o, "%s%%%d", j > 1 ? ", " : "", in->args[j]->id);
      buf_printf(o, ") #%d {\n", in->id);
      dump_block(o, p, k, in->body, indent + 2);
      buf_printf(o, "%*s}\n", indent, "");
      continue;
    }
    buf_printf(o, "%%%d = %s", in->id, cake_ops[in->op].spelling);
    switch (in->op) {
      case OP_CONST:
        if (in->is_int) buf_printf(o, " %lld", in->ival);
        else buf_printf(o, " %.17g", in->fval);
        break;
      case OP_DIMVAL: buf_printf(o, " %s", p->dims[in->dim].name); break;
      case OP_PARAMVAL: buf_printf(o, " %s", in->param->name); break;
      case OP_GRIDVAR: buf_printf(o, " %s (axis %d)", k->axes[in->axis].var, in->axis); break;
      case OP_CHUNKVAR: case OP_LOOPVAR:
        buf_printf(o, " %sof #%d", in->parent->before ? in->axis ? "fragment " : "rank " : "", in->parent->id);
        break;
      case OP_CARRY: buf_printf(o, " %d of #%d", in->axis, in->parent->id); break;
      case OP_FORRES: buf_printf(o, " %d of #%d", in->axis, in->parent->id); break;
      case OP_LOAD:
        buf_puts(o, " ");
        dump_window(o, in);
        if (in->tensor->optional) buf_printf(o, " or %.17g", in->fval);
        break;
      default:
        for (int j = 0; j < in->nargs; j++) buf_printf(o, "%s %%%d", j ? "," : "", in->args[j]->id);
        break;
    }
    if (cake_ops[in->op].kind == OK_REDUCE || cake_ops[in->op].kind == OK_SCAN || in->op == OP_EXPAND)
      buf_printf(o, " axis %d", in->axis);
    if (in->op == OP_PICK) buf_printf(o, " axis %d at %lld", in->axis, in->ival);
    if (in->op == OP_TRIL || in->op == OP_TRIU) buf_printf(o, " diag %lld", in->ival);
    buf_printf(o, " : %s\n", ty);
  }
}

static void dump_extent(Buf *o, const CirProgram *p, CirExtent e) {
  char b[64];
  cir_extent_str(b, sizeof b, p, e);
  buf_puts(o, b);
}

const char *xchg_op_name(XchgOp op) {
  return op == XCHG_ALL_GATHER ? "all_gather"
         : op == XCHG_HALO      ? "halo"
         : op == XCHG_SEND_NEXT ? "send_next"
         : op == XCHG_SEND_PREV ? "send_prev"
                                : "none";
}

void cir_dump_kernel(Buf *o, const CirProgram *p, const CirKernel *k) {
  buf_printf(o, "kernel %s over (", k->name);
  for (int i = 0; i < k->naxes; i++) {
    const CirAxis *a = &k->axes[i];
    buf_printf(o, "%s%s in ", i ? ", " : "", a->var);
    if (a->kind == GA_CHUNKS) buf_puts(o, "chunks");
    else if (a->kind == GA_DOCS) buf_puts(o, "docs");
    else {
      dump_extent(o, p, a->extent);
      if (a->block) buf_printf(o, " blocks of %d", a->block);
    }
  }
  buf_printf(o, ") threads %d", k->threads);
  if (k->per_sm) buf_printf(o, " per_sm %d", k->per_sm);
  buf_puts(o, " {\n");
  dump_block(o, p, k, &k->body, 2);
  buf_puts(o, "}\n");
}

void cir_dump(Buf *o, const CirProgram *p) {
  buf_printf(o, "program %s\n", p->name);
  for (int i = 0; i < p->noptions; i++) {
    buf_printf(o, "option %s = %s\n", p->options[i].name, p->options[i].value);
    for (int j = 0; j < p->options[i].nprefers; j++) {
      const CirPrefer *r = &p->options[i].prefers[j];
      buf_printf(o, "  prefer %s when %s (%s) at %s\n", r->value, r->text, r->expr, r->where);
    }
  }
  static const char *const roles[] = {"", " (tokens)", " (docs)", " (chunks)", " (ranks)", " (fragments)"};
  for (int i = 0; i < p->ndims; i++) buf_printf(o, "dim %s%s\n", p->dims[i].name, roles[p->dims[i].role]);
  if (p->chunk) buf_printf(o, "chunk %d\n", p->chunk);
  for (int i = 0; i < p->ntensors; i++) {
    const CirTensor *t = p->tensors[i];
    buf_printf(o, "tensor %s %s : %s[", role_name(t->role), t->name, dtype_name(t->dtype));
    for (int j = 0; j < t->rank; j++) {
      if (j) buf_puts(o, ", ");
      dump_extent(o, p, t->shape[j]);
    }
    buf_printf(o, "]%s\n", t->optional ? " optional" : "");
  }
  for (int i = 0; i < p->nrequires; i++)
    buf_printf(o, "require %s (%s) at %s\n", p->requires[i].text, p->requires[i].expr, p->requires[i].where);
  for (int i = 0; i < p->nparams; i++) {
    const CirParam *pa = p->params[i];
    buf_printf(o, "param %s : %s", pa->name, dtype_name(pa->dtype));
    if (pa->has_default) buf_printf(o, " = %.17g", pa->def);
    buf_puts(o, "\n");
  }
  for (int i = 0; i < p->nkernels; i++) cir_dump_kernel(o, p, p->kernels[i]);
  for (int i = 0; i < p->nexchanges; i++) {
    const CirKernel *x = p->exchanges[i];
    if (x->exchange == XCHG_HALO)
      buf_printf(o, "exchange %s = halo(%s, %d, %d) -> %s\n", x->name, x->xsrc->name, x->xbefore, x->xafter,
                 x->xdst->name);
    else
      buf_printf(o, "exchange %s = %s(%s) -> %s\n", x->name, xchg_op_name(x->exchange), x->xsrc->name, x->xdst->name);
  }
  for (int i = 0; i < p->nentries; i++) {
    const CirEntry *e = p->entries[i];
    buf_printf(o, "entry %s =", e->name);
    for (int j = 0; j < e->nstages; j++) {
      int opens = e->group[j] && (j == 0 || e->group[j - 1] != e->group[j]);
      int closes = e->group[j] && (j + 1 == e->nstages || e->group[j + 1] != e->group[j]);
      buf_printf(o, "%s %s%s%s", j ? "," : "", opens ? (e->reverse[j] ? "rounds reverse(" : "rounds(") : "",
                 e->stages[j]->name, closes ? ")" : "");
    }
    buf_puts(o, "\n");
  }
}

int cir_tensor_index(const CirProgram *p, const char *name) {
  for (int i = 0; i < p->ntensors; i++)
    if (!strcmp(p->tensors[i]->name, name)) return i;
  return -1;
}

const CirKernel *cir_halo_exchange(const CirProgram *p, const CirTensor *dst) {
  for (int i = 0; dst && i < p->nexchanges; i++)
    if (p->exchanges[i]->exchange == XCHG_HALO && p->exchanges[i]->xdst == dst) return p->exchanges[i];
  return NULL;
}
