/*
 * gen.c — synthetic trace generators (see gen.h).
 *
 * Each generator draws shapes from a seeded GSL mt19937 stream and emits
 * alloc/free records through the native writer, so a seed names one trace
 * exactly.  Sizes are bytes of fp16/bf16 tensors; times advance by
 * exponentially distributed gaps, microseconds.
 */
#include "gen.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <string.h>

#include "trace.h"

static const char *const kind_names[] = {"train", "infer", "kvcache", "long_decode"};
#define NKINDS 4

int pt_gen_kind_parse(const char *name, pt_gen_kind *out) {
  for (int i = 0; i < NKINDS; i++)
    if (!strcmp(name, kind_names[i])) {
      *out = (pt_gen_kind)i;
      return 0;
    }
  return PT_EUSAGE;
}

const char *pt_gen_kind_names(void) { return "train|infer|kvcache|long_decode"; }

typedef struct gen {
  gsl_rng *rng;
  pt_trace_writer *w;
  pt_err *err;
  uint64_t next_id;
  int64_t now;
} gen;

static void tick(gen *g, double mean_us) { g->now += 1 + (int64_t)gsl_ran_exponential(g->rng, mean_us); }

/* Allocate bytes (>= 1) and return the new id, or 0 on a write error. */
static uint64_t gen_alloc(gen *g, uint64_t bytes) {
  tick(g, 5.0);
  pt_event ev = {.kind = PT_EV_ALLOC, .id = g->next_id++, .bytes = bytes ? bytes : 1, .time_us = g->now};
  return pt_trace_writer_put(g->w, &ev, g->err) < 0 ? 0 : ev.id;
}

static int gen_free(gen *g, uint64_t id) {
  tick(g, 5.0);
  pt_event ev = {.kind = PT_EV_FREE, .id = id, .time_us = g->now};
  return pt_trace_writer_put(g->w, &ev, g->err);
}

/* A tensor size around mean bytes (log-normal spread), a multiple of 2. */
static uint64_t around(gen *g, double mean, double sigma) {
  double v = mean * gsl_ran_lognormal(g->rng, 0.0, sigma);
  return ((uint64_t)v | 1) + 1;
}

#define MAX_LAYERS 64

static int gen_train(gen *g, unsigned steps) {
  unsigned layers = 8 + (unsigned)gsl_rng_uniform_int(g->rng, 17);
  uint64_t wsz[MAX_LAYERS], act[MAX_LAYERS], grad[MAX_LAYERS] = {0}, m1[MAX_LAYERS] = {0},
                                             m2[MAX_LAYERS] = {0};
  uint64_t wid[MAX_LAYERS];
  double batch_act = 8.0 * 1024 * 1024 * (1 + gsl_rng_uniform_int(g->rng, 8));
  for (unsigned l = 0; l < layers; l++) {
    wsz[l] = around(g, 4.0 * 1024 * 1024, 0.8);
    if (!(wid[l] = gen_alloc(g, wsz[l]))) return PT_EIO;
  }
  for (unsigned s = 0; s < steps; s++) {
    tick(g, 200.0);
    for (unsigned l = 0; l < layers; l++) { /* forward: activations kept for backward */
      if (!(act[l] = gen_alloc(g, around(g, batch_act, 0.3)))) return PT_EIO;
      uint64_t tmp = gen_alloc(g, around(g, batch_act / 4, 0.5));
      if (!tmp || gen_free(g, tmp) < 0) return PT_EIO;
    }
    for (unsigned l = layers; l-- > 0;) { /* backward: reverse order */
      uint64_t gin = gen_alloc(g, around(g, batch_act, 0.3));
      if (!gin) return PT_EIO;
      if (!grad[l] && !(grad[l] = gen_alloc(g, wsz[l]))) return PT_EIO;
      if (gen_free(g, act[l]) < 0 || gen_free(g, gin) < 0) return PT_EIO;
    }
    for (unsigned l = 0; l < layers; l++) { /* optimizer: state made on the first step */
      if (!m1[l] && (!(m1[l] = gen_alloc(g, wsz[l] * 2)) || !(m2[l] = gen_alloc(g, wsz[l] * 2))))
        return PT_EIO;
      uint64_t tmp = gen_alloc(g, wsz[l]);
      if (!tmp || gen_free(g, tmp) < 0) return PT_EIO;
    }
  }
  return 0;
}

static int gen_infer(gen *g, unsigned requests) {
  unsigned layers = 12 + (unsigned)gsl_rng_uniform_int(g->rng, 13);
  const uint64_t hidden = 4096, elt = 2;
  for (unsigned r = 0; r < requests; r++) {
    tick(g, 1000.0);
    uint64_t batch = 1 + gsl_rng_uniform_int(g->rng, 32);
    uint64_t seq = 16 + gsl_rng_uniform_int(g->rng, 2033);
    uint64_t x = gen_alloc(g, batch * seq * hidden * elt);
    if (!x) return PT_EIO;
    for (unsigned l = 0; l < layers; l++) {
      uint64_t scores = batch * 32 * seq * (seq < 512 ? seq : 512) * elt; /* flash-style tiles */
      uint64_t att = gen_alloc(g, scores), mlp = gen_alloc(g, batch * seq * hidden * 4 * elt);
      uint64_t y = gen_alloc(g, batch * seq * hidden * elt);
      if (!att || !mlp || !y) return PT_EIO;
      if (gen_free(g, att) < 0 || gen_free(g, mlp) < 0 || gen_free(g, x) < 0) return PT_EIO;
      x = y;
    }
    uint64_t logits = gen_alloc(g, batch * 32000 * 4);
    if (!logits || gen_free(g, logits) < 0 || gen_free(g, x) < 0) return PT_EIO;
  }
  return 0;
}

static int gen_kvcache(gen *g, unsigned sequences) {
  unsigned layers = 8 + (unsigned)gsl_rng_uniform_int(g->rng, 9);
  const uint64_t kv_row = 8 * 128 * 2; /* kv heads x head dim x bf16, per token */
  uint64_t k[MAX_LAYERS], v[MAX_LAYERS];
  for (unsigned s = 0; s < sequences; s++) {
    tick(g, 5000.0);
    uint64_t prompt = 32 + gsl_rng_uniform_int(g->rng, 993);
    uint64_t fresh = 32 + gsl_rng_uniform_int(g->rng, 481);
    for (unsigned l = 0; l < layers; l++)
      if (!(k[l] = gen_alloc(g, prompt * kv_row)) || !(v[l] = gen_alloc(g, prompt * kv_row)))
        return PT_EIO;
    for (uint64_t t = prompt + 1; t <= prompt + fresh; t++) {
      for (unsigned l = 0; l < layers; l++) { /* torch.cat: new cache one token longer */
        uint64_t nk = gen_alloc(g, t * kv_row), nv = gen_alloc(g, t * kv_row);
        uint64_t tmp = gen_alloc(g, 4096 * 2);
        if (!nk || !nv || !tmp) return PT_EIO;
        if (gen_free(g, k[l]) < 0 || gen_free(g, v[l]) < 0 || gen_free(g, tmp) < 0) return PT_EIO;
        k[l] = nk;
        v[l] = nv;
      }
      uint64_t logits = gen_alloc(g, 32000 * 4);
      if (!logits || gen_free(g, logits) < 0) return PT_EIO;
    }
    for (unsigned l = 0; l < layers; l++)
      if (gen_free(g, k[l]) < 0 || gen_free(g, v[l]) < 0) return PT_EIO;
  }
  return 0;
}

/*
 * A long LLM decode, shaped on the real captures (traces/llm_decode.pickle.gz,
 * a Hugging Face Llama decode on the H200, and the long decodes of issue 12:
 * 0.78-1.75 M records, 1 413 segments, 94% fragmentation under the native
 * allocator):
 *   - per layer and token, the requests of a Llama layer in the order the
 *     real trace makes them: rms-norm (an fp32 copy, a 16-byte variance per
 *     row, the bf16 result), q/k/v projections, rotary temporaries, attention
 *     scores and their fp32 softmax (a token longer each step), attention
 *     output, o_proj, the residual add, the second norm, gate/up/act/mul/down,
 *     the second residual: most freed within the layer, as in the real one;
 *   - the KV cache as DynamicCache makes it: torch.cat allocates each layer's
 *     K and V one token longer, then the old one is freed (the real trace:
 *     `a 128000` then `f 126976`, 1 024 bytes a token);
 *   - per step, the final norm, fp32 logits over a 128 K vocabulary and
 *     sampling temporaries of a varying top-k;
 *   - the prompt prefilled in chunks of 16 tokens through the same layers,
 *     its cache grown by torch.cat a chunk at a time (the chunk matters: with
 *     256 tokens the prefill's large activations leave blocks every later
 *     cache fits in, and seed 1 gives 147 segments).
 * The model is drawn from the seed: 24-40 layers, hidden 4096, 32 heads, 8 KV
 * heads of 128, MLP 11008, batch 8-16, a prompt of 512-1536 tokens; steps is
 * the number of tokens decoded.  Each K and V outgrows its segment (rounded
 * to 2 MiB above 10 MiB) every few dozen tokens; the old ones stay cached,
 * too small for any later cache and carved up by activations: with seed 1
 * and the default 1 024 steps, 2.15 M records, 1 856 segments and 94%
 * fragmentation under pytorch_native (seed 3: 772 segments, 87%).
 */
typedef struct llama {
  unsigned layers;
  uint64_t batch, row, kv_row; /* row: one token's hidden state, bf16, for the batch */
} llama;

#define HIDDEN UINT64_C(4096)
#define HEADS UINT64_C(32)
#define KV_ROW (UINT64_C(8) * 128 * 2) /* KV heads x head dim x bf16 */
#define INTER UINT64_C(11008)
#define VOCAB UINT64_C(128256)
#define LONG_DECODE_LAYERS_MAX 40
#define PREFILL_CHUNK UINT64_C(16) /* prompt tokens a prefill pass takes */

#define A(var, bytes) \
  if (!(var = gen_alloc(g, (bytes)))) return PT_EIO
#define F(var) \
  if (gen_free(g, var) < 0) return PT_EIO

/* An rms-norm of n rows: the fp32 copy, the variance, the squares, the bf16 result (*out). */
static int rms_norm(gen *g, const llama *m, uint64_t n, uint64_t *out) {
  uint64_t f32, var, sq;
  A(f32, n * m->row * 2);
  A(var, n * m->batch * 16);
  A(sq, n * m->row * 2);
  F(sq);
  A(*out, n * m->row);
  F(f32);
  F(var);
  return 0;
}

/* One layer over n new tokens with t tokens of context; *x is the input, replaced by the output. */
static int layer(gen *g, const llama *m, uint64_t n, uint64_t t, uint64_t *k, uint64_t *v, uint64_t *x) {
  uint64_t h, q, kk, vv, tmp, tmp2, nk, nv, sc, sm, o, y, r, gt, up, act, mul, dn;
  int rc;
  if ((rc = rms_norm(g, m, n, &h)) < 0) return rc;
  A(q, n * m->row); /* projections */
  A(kk, n * m->kv_row);
  A(vv, n * m->kv_row);
  F(h);
  for (int i = 0; i < 2; i++) { /* rotary on q and k: rotate_half and the products */
    uint64_t sz = n * (i ? m->kv_row : m->row);
    A(tmp, sz);
    A(tmp2, sz);
    F(tmp);
    A(tmp, sz);
    F(tmp2);
    F(tmp);
  }
  if (*k) { /* torch.cat: one step longer, then the old one goes */
    A(nk, t * m->kv_row);
    F(*k);
    A(nv, t * m->kv_row);
    F(*v);
    F(kk);
    F(vv);
  } else { /* prefill: the projections are the cache */
    nk = kk;
    nv = vv;
  }
  *k = nk;
  *v = nv;
  uint64_t scores = m->batch * HEADS * n * t; /* attention: scores, fp32 softmax, output */
  A(sc, scores * 2);
  A(sm, scores * 4);
  F(sc);
  A(tmp, scores * 2);
  F(sm);
  A(o, n * m->row);
  F(tmp);
  F(q);
  A(y, n * m->row); /* o_proj, residual */
  F(o);
  A(r, n * m->row);
  F(y);
  F(*x);
  if ((rc = rms_norm(g, m, n, &h)) < 0) return rc;
  uint64_t mlp = n * m->batch * INTER * 2;
  A(gt, mlp); /* MLP */
  A(up, mlp);
  A(act, mlp);
  F(gt);
  A(mul, mlp);
  F(act);
  F(up);
  F(h);
  A(dn, n * m->row);
  F(mul);
  A(*x, n * m->row);
  F(dn);
  F(r);
  return 0;
}

/* The final norm, the logits of the last token and sampling; frees *x, whose next token's embedding replaces it. */
static int sample(gen *g, const llama *m, uint64_t n, uint64_t *x) {
  uint64_t h, last, logits, probs, top, tok;
  int rc;
  if ((rc = rms_norm(g, m, n, &h)) < 0) return rc;
  A(last, m->row);
  F(h);
  A(logits, m->batch * VOCAB * 4);
  F(last);
  uint64_t topk = 1 + gsl_rng_uniform_int(g->rng, 64); /* a top-k that varies by step */
  A(probs, m->batch * VOCAB * 4);
  A(top, m->batch * topk * 8);
  F(probs);
  A(tok, m->batch * 8);
  F(top);
  F(logits);
  F(*x);
  A(*x, m->row);
  F(tok);
  return 0;
}

static int gen_long_decode(gen *g, unsigned tokens) {
  llama m = {.layers = LONG_DECODE_LAYERS_MAX - 16 + (unsigned)gsl_rng_uniform_int(g->rng, 17)};
  m.batch = 8 + gsl_rng_uniform_int(g->rng, 9);
  m.row = m.batch * HIDDEN * 2;
  m.kv_row = m.batch * KV_ROW;
  uint64_t prompt = 512 + gsl_rng_uniform_int(g->rng, 1025);
  uint64_t k[LONG_DECODE_LAYERS_MAX] = {0}, v[LONG_DECODE_LAYERS_MAX] = {0}, x = 0;
  int rc;
  for (uint64_t t = 0; t < prompt;) { /* chunked prefill */
    uint64_t c = prompt - t < PREFILL_CHUNK ? prompt - t : PREFILL_CHUNK;
    t += c;
    A(x, c * m.row);
    for (unsigned l = 0; l < m.layers; l++)
      if ((rc = layer(g, &m, c, t, &k[l], &v[l], &x)) < 0) return rc;
    if ((rc = sample(g, &m, c, &x)) < 0) return rc;
    if (t < prompt) F(x);
  }
  for (uint64_t t = prompt + 1; t <= prompt + tokens; t++) { /* decode: a token a step */
    tick(g, 2000.0);
    uint64_t pos, cos, sin;
    A(pos, m.batch * 8);
    A(cos, m.batch * 128 * 2);
    A(sin, m.batch * 128 * 2);
    for (unsigned l = 0; l < m.layers; l++)
      if ((rc = layer(g, &m, 1, t, &k[l], &v[l], &x)) < 0) return rc;
    F(pos);
    F(cos);
    F(sin);
    if ((rc = sample(g, &m, 1, &x)) < 0) return rc;
  }
  F(x);
  for (unsigned l = 0; l < m.layers; l++) {
    F(k[l]);
    F(v[l]);
  }
  return 0;
}

#undef A
#undef F

int pt_gen_write(const pt_gen_opts *opts, const char *path, pt_err *err) {
  static const unsigned default_steps[] = {20, 200, 8, 1024};
  unsigned steps = opts->steps ? opts->steps : default_steps[opts->kind];
  if (steps > 1000000) return pt_err_set(err, PT_EUSAGE, "--steps %u: at most 1000000", steps);
  pt_trace_info info = {.version = PT_TRACE_VERSION, .device = -1};
  snprintf(info.source, sizeof info.source, "synthetic:%s seed=%lu steps=%u", kind_names[opts->kind],
           opts->seed, steps);
  snprintf(info.tool, sizeof info.tool, "pagetune trace gen");
  gen g = {.err = err, .next_id = 1};
  int rc = pt_trace_writer_open(path, &info, err, &g.w);
  if (rc < 0) return rc;
  g.rng = gsl_rng_alloc(gsl_rng_mt19937);
  if (!g.rng) {
    pt_trace_writer_abort(g.w);
    return pt_err_set(err, PT_ENOMEM, "out of memory");
  }
  gsl_rng_set(g.rng, opts->seed);
  switch (opts->kind) {
  case PT_GEN_TRAIN: rc = gen_train(&g, steps); break;
  case PT_GEN_INFER: rc = gen_infer(&g, steps); break;
  case PT_GEN_KVCACHE: rc = gen_kvcache(&g, steps); break;
  case PT_GEN_LONG_DECODE: rc = gen_long_decode(&g, steps); break;
  }
  gsl_rng_free(g.rng);
  if (rc < 0) {
    pt_trace_writer_abort(g.w);
    return rc;
  }
  return pt_trace_writer_commit(g.w, err);
}
