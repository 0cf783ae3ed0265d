/*
 * fuzz_libconf.c — libFuzzer target for the allocator library's
 * configuration reader (backend/libconf.c over sim/base/jsonread.c):
 * whatever the bytes, pt_libconf_parse either yields a checked
 * configuration or fails with one message naming the input; never a crash,
 * hang or leak.  The bytes also go to the JSON reader alone with tiny limits
 * (depth 3, 64 bytes, an allocator that fails its third call) so the limit
 * and out-of-memory paths run, with the tree walked and every string read
 * (ASan checks the lengths), and, as text, to the PAGETUNE_ALLOC_CONF form.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonread.h"
#include "libconf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile unsigned sink; /* keeps the reads below from being optimised out */

static void walk(const pt_jr_val *v, int depth) {
  size_t n;
  const char *s = pt_jr_string(v, &n);
  for (size_t i = 0; s && i <= n; i++) sink += (unsigned char)s[i]; /* the NUL after the end too */
  if (pt_jr_type(v) == PT_JR_NUMBER && !isfinite(pt_jr_number(v))) __builtin_trap();
  for (size_t i = 0; i < pt_jr_len(v); i++) {
    const pt_jr_val *k = pt_jr_index(v, i);
    const char *key = pt_jr_key(k, &n);
    for (size_t j = 0; key && j <= n; j++) sink += (unsigned char)key[j];
    if (depth > PT_JR_MAX_DEPTH) __builtin_trap();
    walk(k, depth + 1);
  }
}

typedef struct budget {
  int calls, live;
} budget;

static void *third_fails(void *ud, void *ptr, size_t nsize) {
  budget *b = ud;
  if (nsize == 0) {
    if (ptr) b->live--;
    free(ptr);
    return NULL;
  }
  if (++b->calls == 3) return NULL;
  void *p = malloc(nsize);
  if (p) b->live++;
  return p;
}

static void check_conf(int rc, const pt_libconf *c, const pt_err *err, const char *name) {
  if (rc < 0) {
    if (strncmp(err->msg, name, strlen(name)) != 0) __builtin_trap(); /* every error names the input */
    if (c->mech) __builtin_trap();                                   /* nothing half-filled */
    return;
  }
  if (!c->mech || pt_mech_check_params(c->mech, &c->params, NULL) < 0) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  pt_err err;
  pt_libconf c;
  check_conf(pt_libconf_parse((const char *)data, size, "fuzz", &c, &err), &c, &err, "fuzz: ");

  pt_jr_doc *doc;
  if (pt_jr_parse((const char *)data, size, NULL, &doc, &err) == 0) {
    walk(pt_jr_root(doc), 0);
    pt_jr_free(doc);
  } else if (strncmp(err.msg, "line ", 5) != 0) {
    __builtin_trap();
  }
  budget b = {0, 0};
  pt_jr_opts tiny = {third_fails, &b, 64, 3};
  if (pt_jr_parse((const char *)data, size, &tiny, &doc, &err) == 0) {
    walk(pt_jr_root(doc), 0);
    pt_jr_free(doc);
  }
  if (b.live != 0) __builtin_trap(); /* every block back, on every path */

  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = 0;
  if (!memchr(data, 0, size)) check_conf(pt_libconf_from_conf_string(text, &c, &err), &c, &err, "PAGETUNE_ALLOC_CONF: ");
  free(text);
  return 0;
}
