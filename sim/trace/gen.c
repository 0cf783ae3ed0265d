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

static const char *const kind_names[] = {"train", "infer", "kvcache"};

int pt_gen_kind_parse(const char *name, pt_gen_kind *out) {
  for (int i = 0; i < 3; i++)
    if (!strcmp(name, kind_names[i])) {
      *out = (pt_gen_kind)i;
      return 0;
    }
  return PT_EUSAGE;
}

const char *pt_gen_kind_names(void) { return "train|infer|kvcache"; }

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

int pt_gen_write(const pt_gen_opts *opts, const char *path, pt_err *err) {
  static const unsigned default_steps[] = {20, 200, 8};
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
  }
  gsl_rng_free(g.rng);
  if (rc < 0) {
    pt_trace_writer_abort(g.w);
    return rc;
  }
  return pt_trace_writer_commit(g.w, err);
}
