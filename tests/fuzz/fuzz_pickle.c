/*
 * fuzz_pickle.c — libFuzzer target for the data-only unpickler (sim/pickle.c).
 *
 * Parses the input twice, with the default limits and with tiny ones (so the
 * limit paths run too), and on success walks the paths a snapshot reader
 * walks, reading every byte of the strings it meets so that ASan checks the
 * zero-copy pointers.  Build and run (see the seed corpus next to it):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Isim \
 *     tests/fuzz/fuzz_pickle.c sim/pickle.c sim/error.c -o /tmp/fuzz_pickle
 *   cp -r tests/fuzz/corpus/pickle /tmp/pickle-corpus
 *   /tmp/fuzz_pickle -max_len=4096 -timeout=10 -runs=1000000 /tmp/pickle-corpus
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pickle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile unsigned sink; /* keeps the reads below from being optimised out */

static void touch(const pt_pyobj *o) {
  if (!o) return;
  if (o->type == PT_PY_STR || o->type == PT_PY_BYTES) {
    unsigned h = 0;
    for (size_t i = 0; i < o->u.s.len; i++) h = h * 31 + (unsigned char)o->u.s.ptr[i];
    sink += h;
  } else if (o->type == PT_PY_DICT) { /* keys and values, one level down */
    for (size_t i = 0; i < o->u.dict.len; i++) {
      sink += (unsigned)o->u.dict.kv[2 * i]->type + (unsigned)o->u.dict.kv[2 * i + 1]->type;
      if (o->u.dict.kv[2 * i]->type == PT_PY_STR) sink += (unsigned)o->u.dict.kv[2 * i]->u.s.len;
    }
  } else if (o->type == PT_PY_SET) {
    for (size_t i = 0; i < o->u.seq.len; i++) sink += (unsigned)o->u.seq.items[i]->type;
  } else {
    sink += (unsigned)o->type;
  }
}

static void walk(const pt_pyobj *root) {
  touch(root);
  /* snapshot["device_traces"][0][i]["action"], as the snapshot reader goes */
  const pt_pyobj *traces = pt_py_index(pt_py_get(root, "device_traces"), 0);
  for (size_t i = 0; i < pt_py_len(traces) && i < 64; i++) {
    const pt_pyobj *e = pt_py_index(traces, i);
    touch(pt_py_get(e, "action"));
    sink += (unsigned)pt_py_is_str(pt_py_get(e, "action"), "alloc");
    touch(pt_py_get(e, "addr"));
    touch(pt_py_get(e, "frames"));
  }
  touch(pt_py_get(pt_py_index(pt_py_get(root, "segments"), 0), "blocks"));
  /* first and last items down a chain of containers (cycles end at the cap) */
  const pt_pyobj *o = root;
  for (int depth = 0; o && depth < 256; depth++) {
    size_t n = pt_py_len(o);
    touch(pt_py_index(o, n ? n - 1 : 0));
    if (o->type == PT_PY_DICT) o = n ? o->u.dict.kv[2 * n - 1] : NULL;
    else o = pt_py_index(o, 0);
    touch(o);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const pt_pickle_limits tiny = {.max_stack = 8, .max_marks = 3, .max_memo = 4};
  const pt_pickle_limits *lims[2] = {NULL, &tiny};
  for (int k = 0; k < 2; k++) {
    pt_err err;
    pt_pickle *p = NULL;
    err.msg[0] = '\0';
    int rc = pt_pickle_parse(data, size, "fuzz", lims[k], &err, &p);
    if (rc == 0) {
      walk(pt_pickle_root(p));
      pt_pickle_free(p);
    } else {
      sink += (unsigned)strlen(err.msg); /* the message is a terminated string */
      if (p) __builtin_trap();           /* a failed parse returns no handle */
    }
  }
  return 0;
}
