/* Argument fuzz of the decode-attention entry points (kg_paged_kv_append / _decode,
** kg_decode_batch with its workspace, plan and select queries, kg_decode_single,
** kg_merge_states / _varlen, kg_rope_apply) on the C backend, built with AddressSanitizer and
** UndefinedBehaviorSanitizer (make fuzz), as fuzz_fp4.c does for the FP4 entry points.
** Page tables are drawn valid, then sometimes broken (indptr decreasing or past the page list,
** page ids out of range, last_page_len outside 1..page_size, positions past a request, one slot
** named twice): the C backend must refuse them (kg.h) before it reads past a table. Every buffer
** (the cache, the tables, q, k, v, o, lse, states, the workspace) is allocated to exactly its
** documented extent. A call must return a known status; one that succeeds with an overflowing
** size is a finding. Usage: fuzz_attn [iterations [seed]]; exit 0 when nothing was found. */
#include "fuzz_util.h"

/* a buffer of n finite floats (softmax states, lse) */
static float *fbuf(int64_t n, int *huge) {
  float *p = buf(n < 0 || n > (16 << 20) ? -1 : 4 * n, huge);
  for (int64_t i = 0; i < n && !*huge; i++) {   /* the buffer may start misaligned (buf) */
    const float v = (float)pick(-40, 40) * 0.25f;
    memcpy((char *)p + 4 * i, &v, 4);
  }
  return p;
}
/* a buffer of n elements of type t (f32; else 16-bit values whose f16 and bf16 readings are
** finite and small) */
static void *ebuf(int64_t n, kg_dtype t, int *huge) {
  if (t == KG_F32) return fbuf(n, huge);
  uint16_t *p = buf(n < 0 || n > (32 << 20) ? -1 : 2 * n, huge);
  for (int64_t i = 0; i < n && !*huge; i++) {
    const uint16_t v = (uint16_t)((0x3000 + pick(0, 0x0fff)) | (coin(50) ? 0x8000 : 0));
    memcpy((char *)p + 2 * i, &v, 2);
  }
  return p;
}

/* max offset + 1 of sum_i (dims[i] - 1) * strides[i] over nd dims; 0 when a dim is <= 0; -1 on
** overflow or a negative stride */
static int64_t span(int nd, const int64_t *dims, const int64_t *strides) {
  int64_t e = 1, t;
  for (int i = 0; i < nd; i++) {
    if (dims[i] <= 0) return 0;
    if (strides[i] < 0 || __builtin_mul_overflow(dims[i] - 1, strides[i], &t) || __builtin_add_overflow(e, t, &e)) return -1;
  }
  return e;
}

static kg_dtype half_type(void) { return coin(3) ? (kg_dtype)pick(-1, 4) : coin(50) ? KG_F16 : KG_BF16; }
static int64_t head_dim(void) { static const int64_t d[] = { 64, 128, 256, 32, 96 }; return coin(3) ? pick(-2, 300) : d[rnd() % 3 + (coin(10) ? 2 : 0)]; }

/* A paged cache with a page table: `lens` request lengths, tables valid, then sometimes broken. */
typedef struct cache { kg_paged_kv kv; int32_t *indices, *indptr, *last; int64_t len[8]; } cache;

static void cache_make(cache *c, int *huge) {
  memset(c, 0, sizeof *c);
  kg_paged_kv *kv = &c->kv;
  kv->layout = coin(3) ? (kg_kv_layout)pick(-1, 3) : (kg_kv_layout)pick(0, 1);
  kv->dtype = half_type();
  kv->page_size = maybe_evil(pick(1, 20), 2);
  kv->num_kv_heads = maybe_evil(pick(1, 4), 2);
  kv->head_dim = head_dim();
  kv->batch = maybe_evil(pick(1, 6), 2);
  const int64_t nb = kv->batch >= 1 && kv->batch <= 6 ? kv->batch : 0;
  const int64_t P = kv->page_size > 0 && kv->page_size <= 20 ? kv->page_size : 1;
  /* pages per request, then the table */
  int64_t npages[8] = { 0 }, total = 0;
  for (int64_t b = 0; b < nb; b++) { npages[b] = coin(10) ? 0 : pick(1, 5); total += npages[b]; }
  kv->num_pages = maybe_evil(total + pick(0, 4), 2);
  const int64_t page_elems = P * (kv->num_kv_heads > 0 && kv->num_kv_heads <= 4 ? kv->num_kv_heads : 1) *
                             (kv->head_dim > 0 && kv->head_dim <= 300 ? kv->head_dim : 1);
  kv->stride_page = coin(70) ? 0 : coin(80) ? page_elems + pick(0, 64) : maybe_evil(pick(0, page_elems), 30);
  c->indptr = malloc(sizeof(int32_t) * (size_t)(nb + 1));
  c->last = malloc(sizeof(int32_t) * (size_t)(nb ? nb : 1));
  c->indptr[0] = 0;
  for (int64_t b = 0; b < nb; b++) c->indptr[b + 1] = c->indptr[b] + (int32_t)npages[b];
  /* page ids: a permutation of 0 .. total - 1 (distinct pages per request) */
  c->indices = malloc(sizeof(int32_t) * (size_t)(total ? total : 1));
  for (int64_t i = 0; i < total; i++) c->indices[i] = (int32_t)i;
  for (int64_t i = total - 1; i > 0; i--) { int64_t j = pick(0, i); int32_t t = c->indices[i]; c->indices[i] = c->indices[j]; c->indices[j] = t; }
  for (int64_t b = 0; b < nb; b++) {
    c->last[b] = (int32_t)pick(1, P);
    c->len[b] = npages[b] ? (npages[b] - 1) * P + c->last[b] : 0;
  }
  /* breakage the C backend must refuse */
  if (total && coin(8)) c->indices[pick(0, total - 1)] = (int32_t)(coin(50) ? -pick(1, 5) : total + pick(4, 9));
  if (nb && coin(8)) {
    c->indptr[pick(0, nb)] += (int32_t)(coin(50) ? pick(1, 9) : -pick(1, 9));
    /* indices holds indptr[batch] ids (the caller's side of the contract) */
    const int64_t n = c->indptr[nb] > total ? c->indptr[nb] : total;
    c->indices = realloc(c->indices, sizeof(int32_t) * (size_t)(n ? n : 1));
    for (int64_t i = total; i < n; i++) c->indices[i] = (int32_t)pick(0, total ? total - 1 : 0);
  }
  if (nb && coin(8)) c->last[pick(0, nb - 1)] = (int32_t)(coin(50) ? pick(-3, 0) : P + pick(1, 3));
  /* the cache, sized by the formula of kg.h with the strides passed */
  const int64_t sp = kv->stride_page ? kv->stride_page : page_elems;
  const int64_t H = kv->num_kv_heads, D = kv->head_dim;
  int64_t dims[4] = { kv->num_pages, H, P, D }, st[4] = { sp, 0, 0, 1 };
  if (kv->page_size != P || H < 1 || H > 4 || D > 300) dims[0] = -1;   /* evil sizes: no cache buffer fits */
  else if (kv->layout == KG_KV_HND) { st[1] = P * D; st[2] = D; }
  else { st[1] = D; st[2] = H * D; }
  const int64_t e = dims[0] < 0 ? -1 : span(4, dims, st);
  kv->k_data = coin(2) ? NULL : ebuf(e, kv->dtype, huge);
  kv->v_data = coin(2) ? NULL : ebuf(e, kv->dtype, huge);
  kv->indices = coin(2) ? NULL : c->indices;
  kv->indptr = coin(2) ? NULL : c->indptr;
  kv->last_page_len = coin(2) ? NULL : c->last;
}
static void cache_free(cache *c) {
  fz_free(c->kv.k_data); fz_free(c->kv.v_data); fz_free(c->indices); fz_free(c->indptr); fz_free(c->last);
}

static void fuzz_decode(void) {
  int huge = 0;
  kg_decode_args a;
  memset(&a, 0, sizeof a);
  cache c;
  cache_make(&c, &huge);
  a.kv = c.kv;
  const int64_t B = a.kv.batch, Hk = a.kv.num_kv_heads, D = a.kv.head_dim;
  a.num_qo_heads = maybe_evil((Hk >= 1 && Hk <= 4 ? Hk : 1) * pick(1, 3) + (coin(5) ? 1 : 0), 2);
  const int64_t Hq = a.num_qo_heads;
  a.q_stride_h = maybe_evil(D + (coin(20) ? pick(0, 8) : 0), 2);
  a.q_stride_n = maybe_evil(sadd(smul(Hq, a.q_stride_h), coin(20) ? pick(0, 8) : 0), 2);
  a.o_stride_h = maybe_evil(D + (coin(20) ? pick(0, 8) : 0), 2);
  a.o_stride_n = maybe_evil(sadd(smul(Hq, a.o_stride_h), coin(20) ? pick(0, 8) : 0), 2);
  int64_t dq[3] = { B, Hq, D }, sq[3] = { a.q_stride_n, a.q_stride_h, 1 }, so[3] = { a.o_stride_n, a.o_stride_h, 1 };
  const int ok_dims = B >= 1 && B <= 6 && Hq >= 1 && Hq <= 16 && D >= 1 && D <= 300;
  a.q = coin(2) ? NULL : ebuf(ok_dims ? span(3, dq, sq) : -1, a.kv.dtype, &huge);
  a.o = coin(2) ? NULL : ebuf(ok_dims ? span(3, dq, so) : -1, a.kv.dtype, &huge);
  a.lse = coin(50) ? NULL : fbuf(ok_dims ? B * Hq : -1, &huge);
  int32_t *qpos = NULL;
  if (coin(20) && B >= 1 && B <= 6) {
    qpos = malloc(sizeof(int32_t) * (size_t)B);
    for (int64_t b = 0; b < B; b++) qpos[b] = (int32_t)pick(-2, 60);
    a.q_rope_pos = qpos;
  }
  a.max_kv_len = coin(50) ? 0 : maybe_evil(pick(1, 120), 5);
  a.params.sm_scale = coin(80) ? 0.0f : 0.1f;
  a.params.logits_soft_cap = coin(80) ? 0.0f : 30.0f;
  a.params.sliding_window = coin(80) ? 0 : maybe_evil(pick(1, 30), 10);
  a.params.kv_chunk_size = coin(60) ? 0 : maybe_evil(pick(1, 40), 10);
  if (coin(30)) { a.params.rope.mode = (kg_rope_mode)pick(0, 3); a.params.rope.rotary_dim = coin(70) ? 0 : pick(-2, 300); a.params.rope.interleave = (int)pick(0, 2); }
  char desc[400];
  snprintf(desc, sizeof desc, "decode batch %lld pages %lld P %lld Hk %lld Hq %lld D %lld lay %d dt %d sp %lld qs %lld/%lld os %lld/%lld "
           "chunk %lld win %lld", (long long)B, (long long)a.kv.num_pages, (long long)a.kv.page_size, (long long)Hk,
           (long long)Hq, (long long)D, (int)a.kv.layout, (int)a.kv.dtype, (long long)a.kv.stride_page,
           (long long)a.q_stride_n, (long long)a.q_stride_h, (long long)a.o_stride_n, (long long)a.o_stride_h,
           (long long)a.params.kv_chunk_size, (long long)a.params.sliding_window);
  kg_exec e = tu_exec_c();
  size_t need = 0;
  kg_decode_plan_info plan;
  const char *nm;
  report("decode_workspace_size", kg_decode_workspace_size(&a, &e, &need), 0, desc);
  report("decode_plan", kg_decode_plan(&a, &e, &plan), 0, desc);
  report("decode_select", kg_decode_select(&a, &e, &nm), 0, desc);
  void *ws = need && need < (64u << 20) && !coin(5) ? malloc(need) : NULL;
  e.workspace = ws; e.workspace_size = ws ? need : 0;
  report("decode_batch", kg_decode_batch(&a, &e), huge, desc);
  fz_free(ws); fz_free(a.q); fz_free(a.o); fz_free(a.lse); fz_free(qpos);
  cache_free(&c);
}

static void fuzz_append(int decode) {
  int huge = 0;
  kg_paged_kv_append_args a;
  memset(&a, 0, sizeof a);
  cache c;
  cache_make(&c, &huge);
  a.kv = c.kv;
  const int64_t B = a.kv.batch >= 1 && a.kv.batch <= 6 ? a.kv.batch : 0, H = a.kv.num_kv_heads, D = a.kv.head_dim;
  a.nnz = decode ? (coin(90) ? a.kv.batch : maybe_evil(pick(0, 8), 30)) : maybe_evil(pick(0, 10), 3);
  const int64_t nnz = a.nnz >= 0 && a.nnz <= 10 ? a.nnz : -1;
  int32_t *bi = NULL, *pos = NULL;
  if (!decode && nnz > 0) {
    bi = malloc(sizeof(int32_t) * (size_t)nnz); pos = malloc(sizeof(int32_t) * (size_t)nnz);
    /* distinct (request, position) slots inside the requests, sometimes not */
    for (int64_t i = 0; i < nnz; i++) {
      const int64_t b = B ? pick(0, B - 1) : 0;
      bi[i] = (int32_t)b;
      pos[i] = c.len[b] > 0 ? (int32_t)((c.len[b] - 1 - i % c.len[b] + c.len[b]) % c.len[b]) : 0;
      if (coin(5)) bi[i] = (int32_t)(coin(50) ? -1 : B + pick(0, 3));
      if (coin(5)) pos[i] = (int32_t)(coin(50) ? -pick(1, 3) : c.len[b] + pick(0, 3));
    }
    if (nnz > 1 && coin(5)) { bi[1] = bi[0]; pos[1] = pos[0]; }
  }
  if (!decode || coin(5)) { a.batch_indices = coin(3) ? NULL : bi; a.positions = coin(3) ? NULL : pos; }
  if (decode && coin(5)) { a.batch_indices = bi; a.positions = pos; }
  a.k_stride_h = maybe_evil(D + (coin(20) ? pick(0, 8) : 0), 2);
  a.k_stride_n = maybe_evil(sadd(smul(H, a.k_stride_h), coin(20) ? pick(0, 8) : 0), 2);
  a.v_stride_h = maybe_evil(D + (coin(20) ? pick(0, 8) : 0), 2);
  a.v_stride_n = maybe_evil(sadd(smul(H, a.v_stride_h), coin(20) ? pick(0, 8) : 0), 2);
  const int ok_dims = nnz >= 0 && H >= 1 && H <= 4 && D >= 1 && D <= 300;
  int64_t d3[3] = { nnz, H, D }, sk[3] = { a.k_stride_n, a.k_stride_h, 1 }, sv[3] = { a.v_stride_n, a.v_stride_h, 1 };
  a.k = coin(2) ? NULL : ebuf(ok_dims ? span(3, d3, sk) : -1, a.kv.dtype, &huge);
  a.v = coin(2) ? NULL : ebuf(ok_dims ? span(3, d3, sv) : -1, a.kv.dtype, &huge);
  char desc[300];
  snprintf(desc, sizeof desc, "append%s batch %lld nnz %lld pages %lld P %lld H %lld D %lld lay %d sp %lld ks %lld/%lld vs %lld/%lld",
           decode ? "_decode" : "", (long long)a.kv.batch, (long long)a.nnz, (long long)a.kv.num_pages,
           (long long)a.kv.page_size, (long long)H, (long long)D, (int)a.kv.layout, (long long)a.kv.stride_page,
           (long long)a.k_stride_n, (long long)a.k_stride_h, (long long)a.v_stride_n, (long long)a.v_stride_h);
  kg_exec e = tu_exec_c();
  report(decode ? "paged_kv_append_decode" : "paged_kv_append",
         decode ? kg_paged_kv_append_decode(&a, &e) : kg_paged_kv_append(&a, &e), huge, desc);
  fz_free(a.k); fz_free(a.v); fz_free(bi); fz_free(pos);
  cache_free(&c);
}

static void fuzz_single(void) {
  int huge = 0;
  kg_decode_single_args a;
  memset(&a, 0, sizeof a);
  a.dtype = half_type();
  a.layout = coin(3) ? (kg_kv_layout)pick(-1, 3) : (kg_kv_layout)pick(0, 1);
  a.num_kv_heads = maybe_evil(pick(1, 4), 3);
  a.num_qo_heads = maybe_evil((a.num_kv_heads >= 1 && a.num_kv_heads <= 4 ? a.num_kv_heads : 1) * pick(1, 3) + (coin(5) ? 1 : 0), 3);
  a.head_dim = head_dim();
  a.kv_len = maybe_evil(pick(1, 90), 3);
  const int ok = a.num_kv_heads >= 1 && a.num_kv_heads <= 4 && a.num_qo_heads >= 1 && a.num_qo_heads <= 16 &&
                 a.head_dim >= 1 && a.head_dim <= 300 && a.kv_len >= 1 && a.kv_len <= 90;
  const int64_t nkv = ok ? a.kv_len * a.num_kv_heads * a.head_dim : -1, nq = ok ? a.num_qo_heads * a.head_dim : -1;
  a.q = coin(2) ? NULL : ebuf(nq, a.dtype, &huge);
  a.k = coin(2) ? NULL : ebuf(nkv, a.dtype, &huge);
  a.v = coin(2) ? NULL : ebuf(nkv, a.dtype, &huge);
  a.o = coin(2) ? NULL : ebuf(nq, a.dtype, &huge);
  a.lse = coin(50) ? NULL : fbuf(ok ? a.num_qo_heads : -1, &huge);
  a.q_rope_pos = coin(80) ? -1 : maybe_evil(pick(0, 100), 10);
  a.params.kv_chunk_size = coin(60) ? 0 : maybe_evil(pick(1, 40), 10);
  a.params.sliding_window = coin(80) ? 0 : maybe_evil(pick(1, 30), 10);
  if (coin(30)) { a.params.rope.mode = (kg_rope_mode)pick(0, 3); a.params.rope.rotary_dim = coin(70) ? 0 : pick(-2, 300); }
  char desc[200];
  snprintf(desc, sizeof desc, "single Hk %lld Hq %lld D %lld len %lld lay %d dt %d chunk %lld", (long long)a.num_kv_heads,
           (long long)a.num_qo_heads, (long long)a.head_dim, (long long)a.kv_len, (int)a.layout, (int)a.dtype,
           (long long)a.params.kv_chunk_size);
  kg_exec e = tu_exec_c();
  size_t need = 0;
  report("decode_single_workspace_size", kg_decode_single_workspace_size(&a, &e, &need), 0, desc);
  void *ws = need && need < (64u << 20) && !coin(5) ? malloc(need) : NULL;
  e.workspace = ws; e.workspace_size = ws ? need : 0;
  report("decode_single", kg_decode_single(&a, &e), huge, desc);
  fz_free(ws); fz_free(a.q); fz_free(a.k); fz_free(a.v); fz_free(a.o); fz_free(a.lse);
}

static void fuzz_merge(void) {
  int huge = 0;
  const kg_dtype dt = half_type();
  const int64_t n = maybe_evil(pick(0, 6), 3), H = maybe_evil(pick(1, 4), 3), D = maybe_evil(pick(1, 70), 3);
  const int ok = n >= 0 && n <= 6 && H >= 1 && H <= 4 && D >= 1 && D <= 70;
  const int empty = n == 0;   /* touches nothing: zero-size buffers whatever H and D are */
  kg_exec e = tu_exec_c();
  char desc[160];
  if (coin(50)) {   /* varlen: states indptr[r] .. indptr[r + 1] - 1 */
    kg_merge_states_varlen_args a;
    memset(&a, 0, sizeof a);
    a.dtype = dt; a.n = n; a.num_heads = H; a.head_dim = D;
    int32_t *ip = malloc(sizeof(int32_t) * (size_t)(ok ? n + 1 : 1));
    ip[0] = 0;
    for (int64_t r = 0; ok && r < n; r++) ip[r + 1] = ip[r] + (int32_t)pick(0, 3);
    if (ok && coin(8)) ip[pick(0, n)] += (int32_t)(coin(50) ? pick(1, 5) : -pick(1, 5));
    const int64_t ns = ok && ip[n] > 0 ? ip[n] : 0;   /* v and s hold indptr[n] states (the caller's side) */
    a.indptr = coin(3) ? NULL : ip;
    a.v = coin(2) ? NULL : ebuf(empty ? 0 : ok ? ns * H * D : -1, dt, &huge);
    a.s = coin(2) ? NULL : fbuf(empty ? 0 : ok ? ns * H : -1, &huge);
    a.v_out = coin(2) ? NULL : ebuf(empty ? 0 : ok ? n * H * D : -1, dt, &huge);
    a.s_out = coin(30) ? NULL : fbuf(empty ? 0 : ok ? n * H : -1, &huge);
    snprintf(desc, sizeof desc, "merge_varlen n %lld H %lld D %lld dt %d states %lld", (long long)n, (long long)H, (long long)D,
             (int)dt, (long long)ns);
    report("merge_states_varlen", kg_merge_states_varlen(&a, &e), huge, desc);
    fz_free(ip); fz_free(a.v); fz_free(a.s); fz_free(a.v_out); fz_free(a.s_out);
  } else {
    kg_merge_states_args a;
    memset(&a, 0, sizeof a);
    a.dtype = dt; a.n = n; a.num_heads = H; a.head_dim = D;
    a.num_states = maybe_evil(pick(0, 4), 3);
    const int ok2 = ok && a.num_states >= 0 && a.num_states <= 4;
    a.v = coin(2) ? NULL : ebuf(empty ? 0 : ok2 ? n * a.num_states * H * D : -1, dt, &huge);
    a.s = coin(2) ? NULL : fbuf(empty ? 0 : ok2 ? n * a.num_states * H : -1, &huge);
    a.v_out = coin(2) ? NULL : ebuf(empty ? 0 : ok2 ? n * H * D : -1, dt, &huge);
    a.s_out = coin(30) ? NULL : fbuf(empty ? 0 : ok2 ? n * H : -1, &huge);
    snprintf(desc, sizeof desc, "merge n %lld states %lld H %lld D %lld dt %d", (long long)n, (long long)a.num_states,
             (long long)H, (long long)D, (int)dt);
    report("merge_states", kg_merge_states(&a, &e), huge, desc);
    fz_free(a.v); fz_free(a.s); fz_free(a.v_out); fz_free(a.s_out);
  }
}

static void fuzz_rope(void) {
  int huge = 0;
  kg_rope_args a;
  memset(&a, 0, sizeof a);
  a.dtype = half_type();
  a.nnz = maybe_evil(pick(0, 12), 3);
  a.head_dim = coin(3) ? pick(-2, 300) : 2 * pick(1, 80);
  a.num_qo_heads = maybe_evil(pick(1, 4), 3); a.num_kv_heads = maybe_evil(pick(1, 4), 3);
  const int64_t N = a.nnz, D = a.head_dim;
  /* sizes within the drawn ranges; each operand's head count matters only when it is passed */
  const int ok = N >= 0 && N <= 12 && D >= 1 && D <= 300;
  const int ok_q = ok && a.num_qo_heads >= 1 && a.num_qo_heads <= 4, ok_k = ok && a.num_kv_heads >= 1 && a.num_kv_heads <= 4;
  a.q_stride_h = maybe_evil(D + (coin(20) ? pick(0, 6) : 0), 2);
  a.q_stride_n = maybe_evil(sadd(smul(a.num_qo_heads, a.q_stride_h), coin(20) ? pick(0, 6) : 0), 2);
  a.k_stride_h = maybe_evil(D + (coin(20) ? pick(0, 6) : 0), 2);
  a.k_stride_n = maybe_evil(sadd(smul(a.num_kv_heads, a.k_stride_h), coin(20) ? pick(0, 6) : 0), 2);
  const int inplace = coin(40);
  a.q_out_stride_h = inplace ? a.q_stride_h : maybe_evil(D, 2);
  a.q_out_stride_n = inplace ? a.q_stride_n : maybe_evil(smul(a.num_qo_heads, D), 2);
  a.k_out_stride_h = inplace ? a.k_stride_h : maybe_evil(D, 2);
  a.k_out_stride_n = inplace ? a.k_stride_n : maybe_evil(smul(a.num_kv_heads, D), 2);
  int64_t dq[3] = { N, a.num_qo_heads, D }, dk[3] = { N, a.num_kv_heads, D };
  int64_t sq[3] = { a.q_stride_n, a.q_stride_h, 1 }, sk[3] = { a.k_stride_n, a.k_stride_h, 1 };
  int64_t sqo[3] = { a.q_out_stride_n, a.q_out_stride_h, 1 }, sko[3] = { a.k_out_stride_n, a.k_out_stride_h, 1 };
  /* extents of what is passed (nnz = 0 touches nothing); an output only with its input */
  const int use_q = !coin(20), use_k = !coin(20);
#define EXT(d, st, fits) (N == 0 ? 0 : (fits) ? span(3, d, st) : -1)
  void *q = use_q ? ebuf(EXT(dq, sq, ok_q), a.dtype, &huge) : NULL;
  void *k = use_k ? ebuf(EXT(dk, sk, ok_k), a.dtype, &huge) : NULL;
  a.q = q; a.k = k;
  void *qo = use_q && !inplace ? ebuf(EXT(dq, sqo, ok_q), a.dtype, &huge) : NULL;
  void *ko = use_k && !inplace ? ebuf(EXT(dk, sko, ok_k), a.dtype, &huge) : NULL;
#undef EXT
  a.q_out = inplace ? q : qo; a.k_out = inplace ? k : ko;
  if (coin(10)) a.q_out = NULL;
  int32_t *pid = NULL, *ip = NULL, *off = NULL;
  if (coin(50)) {
    pid = malloc(sizeof(int32_t) * (size_t)(ok && N ? N : 1));
    for (int64_t i = 0; ok && i < N; i++) pid[i] = (int32_t)(coin(3) ? -1 : pick(0, 5000));
    a.pos_ids = pid;
  } else {
    a.batch = maybe_evil(pick(1, 4), 3);
    const int64_t B = a.batch >= 1 && a.batch <= 4 ? a.batch : 0;
    ip = malloc(sizeof(int32_t) * (size_t)(B + 1)); off = malloc(sizeof(int32_t) * (size_t)(B ? B : 1));
    ip[0] = 0;
    for (int64_t b = 0; b < B; b++) { ip[b + 1] = b == B - 1 ? (int32_t)(ok ? N : 0) : ip[b] + (int32_t)pick(0, 4); off[b] = (int32_t)pick(0, 100); }
    if (B && coin(10)) ip[pick(0, B)] += (int32_t)(coin(50) ? pick(1, 4) : -pick(1, 4));
    a.indptr = coin(3) ? NULL : ip; a.offsets = coin(3) ? NULL : off;
  }
  a.rope.mode = coin(5) ? (kg_rope_mode)pick(-1, 4) : (kg_rope_mode)pick(1, 2);
  a.rope.interleave = coin(5) ? (int)pick(-1, 3) : (int)pick(0, 1);
  a.rope.rotary_dim = coin(70) ? 0 : pick(-2, 300);
  char desc[200];
  snprintf(desc, sizeof desc, "rope nnz %lld D %lld Hq %lld Hk %lld batch %lld inplace %d rot %lld", (long long)N, (long long)D,
           (long long)a.num_qo_heads, (long long)a.num_kv_heads, (long long)a.batch, inplace, (long long)a.rope.rotary_dim);
  kg_exec e = tu_exec_c();
  report("rope_apply", kg_rope_apply(&a, &e), huge, desc);
  fz_free(q); fz_free(k); fz_free(qo); fz_free(ko); fz_free(pid); fz_free(ip); fz_free(off);
}

static void fuzz_append_ragged(void) { fuzz_append(0); }
static void fuzz_append_decode(void) { fuzz_append(1); }

int main(int argc, char **argv) {
  static void (*const steps[])(void) = { fuzz_decode, fuzz_append_ragged, fuzz_append_decode, fuzz_single, fuzz_merge,
                                         fuzz_rope };
  return fz_main(argc, argv, steps, (int)(sizeof steps / sizeof steps[0]));
}
