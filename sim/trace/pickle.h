/*
 * pickle.h — a data-only unpickler.
 *
 * Reads Python pickles (protocols 0–5) that hold plain data: dicts, lists,
 * tuples, sets, str, bytes, int, float, bool, None, with memo and frames.
 * Any opcode that would import or call (GLOBAL, STACK_GLOBAL, REDUCE, BUILD,
 * INST, OBJ, NEWOBJ, NEWOBJ_EX, EXT1/2/4, PERSID, BINPERSID, ...) is refused
 * with its name and byte offset: nothing is ever executed.
 *
 * All values live in one arena owned by the pt_pickle handle and are freed
 * together, so cyclic or deeply nested input (memo makes both possible) never
 * recurses.  Readers walk known paths (snapshot["device_traces"][0][i]...),
 * never the whole tree.
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
  size_t max_memo;     /* memo entries (default 1<<26) */
} pt_pickle_limits;

/*
 * Parse buf[0..len) (the whole, already decompressed pickle).  The strings in
 * the result point into buf, so buf must outlive the handle.  name is used in
 * error messages ("NAME: byte 123: forbidden opcode GLOBAL (0x63)").
 * On success *out holds the handle and pt_pickle_root() the top value.
 */
int pt_pickle_parse(const uint8_t *buf, size_t len, const char *name,
                    const pt_pickle_limits *lim, pt_err *err,
                    pt_pickle **out /* OUT */);
const pt_pyobj *pt_pickle_root(const pt_pickle *p);
void pt_pickle_free(pt_pickle *p);

/* Helpers for walking known paths; they return NULL on a type mismatch. */
const pt_pyobj *pt_py_get(const pt_pyobj *dict, const char *key);  /* last matching str key */
const pt_pyobj *pt_py_index(const pt_pyobj *seq, size_t i);        /* list or tuple */
size_t pt_py_len(const pt_pyobj *o);          /* items of list/tuple/set/dict, else 0 */
int pt_py_is_str(const pt_pyobj *o, const char *s);  /* 1 when o is str equal to s */

#endif
