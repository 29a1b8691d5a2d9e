/* partition.c - context-parallel partitions: which tokens of a packed
 * sequence each of R ranks holds, as fragments of documents (see
 * cake_partition in cake_runtime.h). Host only, no allocation.
 *
 * Every cut is a function of its block index alone, so a rank's fragments
 * and the owner of any token are found without tables: the cuts of a layout
 * never decrease (alignment maps each document's interior monotonically
 * into that document), so the owner of a token is a binary search over
 * them. Products i * T with i <= 2R <= 8192 and T < 2^31 stay below 2^44. */
#include <stdint.h>

#include "rt.h"

/* The document count and the ndocs + 1 offsets of a packed sequence: the
 * count in range, offsets from 0 that never decrease (the first bad index
 * named). The last offset is the caller's to compare with its T. */
cake_status rt_check_offsets(const int32_t *cu, int64_t ndocs) {
  if (ndocs < 1 || ndocs > RT_MAX_DOCS)
    return rt_fail(CAKE_ERR_ARGUMENT, "ndocs = %lld is out of range [1, %d]", (long long)ndocs, RT_MAX_DOCS);
  if (cu[0] != 0) return rt_fail(CAKE_ERR_PLAN, "cu_seqlens[0] is %d; the offsets must start at 0", cu[0]);
  for (int64_t i = 1; i <= ndocs; i++)
    if (cu[i] < cu[i - 1])
      return rt_fail(CAKE_ERR_PLAN,
                     "cu_seqlens[%lld] is %d, less than cu_seqlens[%lld] = %d (the offsets must not decrease)",
                     (long long)i, cu[i], (long long)(i - 1), cu[i - 1]);
  return CAKE_OK;
}

typedef struct Part {
  const int32_t *cu;
  int64_t nd, T, align;
  int32_t R;
  cake_layout layout;
} Part;

const char *cake_layout_name(cake_layout l) {
  switch (l) {
  case CAKE_LAYOUT_CONTIGUOUS: return "contiguous";
  case CAKE_LAYOUT_ZIGZAG: return "zigzag";
  case CAKE_LAYOUT_ZIGZAG_PER_DOCUMENT: return "zigzag_per_document";
  }
  return NULL;
}

/* The document holding token t (0 <= t < T): the last d with cu[d] <= t,
 * which skips empty documents. */
static int64_t doc_of(const Part *p, int64_t t) {
  int64_t lo = 0, hi = p->nd - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (p->cu[mid] <= t) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/* A cut c strictly inside the document [s, e), moved to its nearest chunk
 * boundary: s + k*align, or e; a tie goes down. */
static int64_t snap(const Part *p, int64_t s, int64_t e, int64_t c) {
  if (p->align <= 1) return c;
  int64_t lo = s + (c - s) / p->align * p->align, hi = lo + p->align;
  if (hi > e) hi = e;
  return c - lo <= hi - c ? lo : hi;
}

static int64_t nblocks(const Part *p) { return p->layout == CAKE_LAYOUT_CONTIGUOUS ? p->R : 2 * (int64_t)p->R; }

static int32_t block_rank(const Part *p, int64_t i) {
  if (p->layout == CAKE_LAYOUT_CONTIGUOUS || i < p->R) return (int32_t)i;
  return (int32_t)(2 * (int64_t)p->R - 1 - i);
}

/* Cut i (0..nblocks) of the stream layouts. */
static int64_t stream_cut(const Part *p, int64_t i) {
  int64_t c = i * p->T / nblocks(p);
  if (c == 0 || c == p->T) return c;
  int64_t d = doc_of(p, c);
  if (p->cu[d] == c) return c; /* a document boundary */
  return snap(p, p->cu[d], p->cu[d + 1], c);
}

/* Cut i (0..2R) of document d (zigzag_per_document). */
static int64_t doc_cut(const Part *p, int64_t d, int64_t i) {
  int64_t s = p->cu[d], e = p->cu[d + 1], c = s + i * (e - s) / nblocks(p);
  if (c == s || c == e) return c;
  return snap(p, s, e, c);
}

static int64_t cut(const Part *p, int64_t d, int64_t i) {
  return p->layout == CAKE_LAYOUT_ZIGZAG_PER_DOCUMENT ? doc_cut(p, d, i) : stream_cut(p, i);
}

/* The rank holding token t of document d: the last block whose cut is <= t
 * (the cut after it is then > t, since t lies before the final cut). */
static int32_t owner(const Part *p, int64_t d, int64_t t) {
  int64_t lo = 0, hi = nblocks(p) - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (cut(p, d, mid) <= t) lo = mid;
    else hi = mid - 1;
  }
  return block_rank(p, lo);
}

typedef struct Out {
  cake_fragment *frags; /* NULL: count only */
  int32_t *local_cu;
  int64_t n, local;
} Out;

static void emit(const Part *p, Out *o, int64_t d, int64_t a, int64_t b) {
  if (a >= b) return;
  if (o->frags) {
    int64_t s = p->cu[d], e = p->cu[d + 1];
    cake_fragment *f = &o->frags[o->n];
    f->start = a;
    f->end = b;
    f->local_start = o->local;
    f->doc = (int32_t)d;
    f->continues = a > s;
    f->continued = b < e;
    f->prev_rank = a > s ? owner(p, d, a - 1) : -1;
    f->next_rank = b < e ? owner(p, d, b) : -1;
    if (o->local_cu) o->local_cu[o->n] = (int32_t)o->local;
  }
  o->n++;
  o->local += b - a;
}

/* The fragments of the stream range [a, b): one per document it meets. */
static void emit_range(const Part *p, Out *o, int64_t a, int64_t b) {
  if (a >= b) return;
  for (int64_t d = doc_of(p, a); d < p->nd && p->cu[d] < b; d++) {
    int64_t s = p->cu[d] > a ? p->cu[d] : a, e = p->cu[d + 1] < b ? p->cu[d + 1] : b;
    emit(p, o, d, s, e);
  }
}

static void walk(const Part *p, int32_t r, Out *o) {
  int64_t b1 = r, b2 = 2 * (int64_t)p->R - 1 - r; /* the zigzag blocks of rank r */
  if (p->layout == CAKE_LAYOUT_CONTIGUOUS) {
    emit_range(p, o, stream_cut(p, r), stream_cut(p, r + 1));
  } else if (p->layout == CAKE_LAYOUT_ZIGZAG) {
    int64_t a1 = stream_cut(p, b1), e1 = stream_cut(p, b1 + 1), a2 = stream_cut(p, b2), e2 = stream_cut(p, b2 + 1);
    if (e1 == a2) emit_range(p, o, a1, e2); /* adjacent (rank R-1, or only empty blocks between): one run */
    else {
      emit_range(p, o, a1, e1);
      emit_range(p, o, a2, e2);
    }
  } else {
    for (int64_t d = 0; d < p->nd; d++) {
      if (p->cu[d] == p->cu[d + 1]) continue;
      int64_t a1 = doc_cut(p, d, b1), e1 = doc_cut(p, d, b1 + 1), a2 = doc_cut(p, d, b2), e2 = doc_cut(p, d, b2 + 1);
      if (e1 == a2) emit(p, o, d, a1, e2);
      else {
        emit(p, o, d, a1, e1);
        emit(p, o, d, a2, e2);
      }
    }
  }
  if (o->frags && o->local_cu) o->local_cu[o->n] = (int32_t)o->local;
}

cake_status cake_partition(const int32_t *cu, int64_t ndocs, int64_t T, int32_t R, int32_t rank, cake_layout layout,
                           int32_t align, cake_fragment *frags, int64_t cap, int64_t *nfrags, int32_t *local_cu) {
  if (!cu || !nfrags) return rt_fail(CAKE_ERR_ARGUMENT, "cake_partition: cu_seqlens and nfrags are required");
  if (!frags && local_cu)
    return rt_fail(CAKE_ERR_ARGUMENT, "cake_partition: local_cu is written only with frags (frags NULL asks for the count)");
  if (R < 1 || R > CAKE_MAX_RANKS)
    return rt_fail(CAKE_ERR_ARGUMENT, "cake_partition: R = %d ranks is out of range [1, %d]", R, CAKE_MAX_RANKS);
  if (rank < 0 || rank >= R)
    return rt_fail(CAKE_ERR_ARGUMENT, "cake_partition: rank %d is out of range [0, %d) for R = %d", rank, R, R);
  if (!cake_layout_name(layout))
    return rt_fail(CAKE_ERR_ARGUMENT, "cake_partition: unknown layout %d (contiguous, zigzag, zigzag_per_document)",
                   (int)layout);
  if (align < 0 || align > CAKE_MAX_ALIGN)
    return rt_fail(CAKE_ERR_ARGUMENT, "cake_partition: align = %d is out of range [0, %d] (0: no alignment)", align,
                   CAKE_MAX_ALIGN);
  if (T < 0 || T > INT32_MAX)
    return rt_fail(CAKE_ERR_ARGUMENT, "cake_partition: T = %lld is out of range [0, 2^31)", (long long)T);
  if (frags && cap < 0) return rt_fail(CAKE_ERR_ARGUMENT, "cake_partition: cap = %lld is negative", (long long)cap);
  cake_status s = rt_check_offsets(cu, ndocs); /* as cake_plan_set_docs */
  if (s) return s;
  if (cu[ndocs] != T)
    return rt_fail(CAKE_ERR_PLAN, "cu_seqlens[%lld] (the last offset) is %d but T is %lld", (long long)ndocs,
                   cu[ndocs], (long long)T);

  Part p = {cu, ndocs, T, align, R, layout};
  Out o = {0};
  walk(&p, rank, &o); /* count first: nothing is written unless it fits */
  *nfrags = o.n;
  if (!frags) return CAKE_OK;
  if (o.n > cap)
    return rt_fail(CAKE_ERR_ARGUMENT, "cake_partition: rank %d of %d has %lld fragments; cap is %lld", rank, R,
                   (long long)o.n, (long long)cap);
  Out w = {frags, local_cu, 0, 0};
  walk(&p, rank, &w);
  return CAKE_OK;
}
