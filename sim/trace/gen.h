/*
 * gen.h — synthetic traces from GSL's random generators, reproducible by
 * seed (`pagetune trace gen`).  They stand in for real traces in tests and
 * let users probe shapes the bundled captures do not cover.
 */
#ifndef PT_GEN_H
#define PT_GEN_H

#include "error.h"

typedef enum pt_gen_kind {
  PT_GEN_TRAIN,    /* training loop: weights, activations freed in reverse, grads, optimizer state */
  PT_GEN_INFER,    /* variable-length, variable-batch inference */
  PT_GEN_KVCACHE,  /* LLM decoding: a KV cache reallocated one token larger each step */
  PT_GEN_LONG_DECODE /* a long decode of a 7B-class model: thousands of segments, mostly idle (gen.c) */
} pt_gen_kind;

typedef struct pt_gen_opts {
  pt_gen_kind kind;
  unsigned long seed;
  unsigned steps;    /* iterations / requests / sequences / tokens; 0 = the kind's default */
} pt_gen_opts;

/* "train", "infer", "kvcache", "long_decode" -> kind; 0 or PT_EUSAGE. */
int pt_gen_kind_parse(const char *name, pt_gen_kind *out /* OUT */);
const char *pt_gen_kind_names(void);  /* "train|infer|kvcache|long_decode" */

/* Write a native trace to path (atomically; ".gz" compresses). */
int pt_gen_write(const pt_gen_opts *opts, const char *path, pt_err *err);

#endif
