/*
 * pickle.h — a data-only unpickler.
 *
 * Reads Python pickles (protocols 0–5) that hold plain data: dicts, lists,
 * tuples, sets, str, bytes, int, float, bool, None, with memo and frames.
 * Any opcode that would import or call (GLOBAL, STACK_GLOBAL, REDUCE, BUILD,
 * INST, OBJ, NEWOBJ, NEWOBJ_EX, EXT1/2/4, PERSID, BINPERSID, ...) is refused
 * with its name and byte offset: nothing is ever executed.
 *
 * Values are owned by the pt_pickle handle and freed together (or, streamed,
 * as each item is done), never by recursion, so cyclic or deeply nested
 * input (memo makes both possible) costs heap, never C stack.  Readers walk
 * known paths (snapshot["device_traces"][0][i]...), never the whole tree.
 */
#ifndef PT_PICKLE_H
#define PT_PICKLE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef enum pt_pyt {
  PT_PY_NONE,
  PT_PY_BOOL,
  PT_PY_INT,   /* fits int64_t; wider integers are refused (PT_ELIMIT) */
  PT_PY_FLOAT,
  PT_PY_STR,   /* UTF-8, not NUL-terminated: use .u.s.ptr/.len */
  PT_PY_BYTES,
  PT_PY_LIST,
  PT_PY_TUPLE,
  PT_PY_DICT,
  PT_PY_SET    /* set and frozenset */
} pt_pyt;

typedef struct pt_pyobj pt_pyobj;

struct pt_pyobj {
  pt_pyt type;
  unsigned flags;     /* the unpickler's bookkeeping */
  union {
    int64_t i;        /* INT, BOOL (0/1) */
    double f;         /* FLOAT */
    struct { const char *ptr; size_t len; } s;   /* STR, BYTES */
    struct { pt_pyobj **items; size_t len, cap; } seq;  /* LIST, TUPLE, SET */
    struct { pt_pyobj **kv; size_t len, cap; } dict;   /* kv[2i]=key, kv[2i+1]=value */
  } u;
};

typedef struct pt_pickle pt_pickle;

/* Limits that keep hostile input bounded; 0 fields take the defaults. */
typedef struct pt_pickle_limits {
  size_t max_stack;    /* values on the stack at once (default 1<<20) */
  size_t max_marks;    /* open MARKs at once (default 1<<16) */
  size_t max_memo;     /* memo entries kept (default 1<<26; streaming keeps only those fetched again) */
  size_t max_str;      /* bytes of one str/bytes value (default 1<<30) */
  size_t max_bytes;    /* bytes of values held at once, memo included (default 1<<33) */
} pt_pickle_limits;

/*
 * Parse buf[0..len) (a whole, already decompressed pickle).  Strings are
 * copied, so buf may go once this returns.  name is used in error messages
 * ("NAME: byte 123: forbidden opcode GLOBAL (0x63)").  On success *out holds
 * the handle and pt_pickle_root() the top value.
 */
int pt_pickle_parse(const uint8_t *buf, size_t len, const char *name,
                    const pt_pickle_limits *lim, pt_err *err,
                    pt_pickle **out /* OUT */);

/*
 * Streaming.  The input comes through read() in pieces, never whole.  The
 * items of the lists held in a list under key `stream_key` of the top-level
 * dict (snapshot["device_traces"][d][i]) are handed to item() as each is
 * appended, and then released instead of stored: those lists stay empty
 * (pt_py_streamed() counts what went through).  Everything else is built as
 * by pt_pickle_parse.
 *
 * What the memo must keep: an object may be fetched again by a later GET, so
 * Python's unpickler keeps every memoized object to the end.  Here, when
 * rewind() can start the input again, a first pass over the opcodes notes
 * which memo keys are ever fetched (two bits a key); the second pass keeps
 * only those objects (a snapshot's shared frames and key strings) and frees
 * each streamed item with everything only it holds.  Without rewind (NULL,
 * or it fails) every memoized object is kept: correct, not bounded.
 * item() returns 0 or a negative PT_E* with err set, which stops the parse.
 */
typedef struct pt_pickle_source {
  long (*read)(void *ctx, void *buf, size_t n, pt_err *err); /* bytes read, 0 at the end, or <0 */
  int (*rewind)(void *ctx, pt_err *err);                     /* back to byte 0; optional */
  void *ctx;
  const char *stream_key;                                    /* NULL: nothing is streamed */
  int (*item)(void *ctx, size_t list, size_t index, const pt_pyobj *item, pt_err *err);
  void *item_ctx;
} pt_pickle_source;

int pt_pickle_parse_stream(const pt_pickle_source *src, const char *name,
                           const pt_pickle_limits *lim, pt_err *err,
                           pt_pickle **out /* OUT */);
/* 1 when o lives until pt_pickle_free (memo entries a later GET fetches, shared
   values), so its address may key a cache; a streamed item's own values may not. */
int pt_py_lives(const pt_pyobj *o);
/* Items a streamed list handed to item() (0 for any other value). */
size_t pt_py_streamed(const pt_pyobj *list);
/* Most bytes of values the parse held at once (for measurements). */
size_t pt_pickle_peak_bytes(const pt_pickle *p);
const pt_pyobj *pt_pickle_root(const pt_pickle *p);
void pt_pickle_free(pt_pickle *p);

/* Helpers for walking known paths; they return NULL on a type mismatch. */
const pt_pyobj *pt_py_get(const pt_pyobj *dict, const char *key);  /* last matching str key */
const pt_pyobj *pt_py_index(const pt_pyobj *seq, size_t i);        /* list or tuple */
size_t pt_py_len(const pt_pyobj *o);          /* items of list/tuple/set/dict, else 0 */
int pt_py_is_str(const pt_pyobj *o, const char *s);  /* 1 when o is str equal to s */

#endif
