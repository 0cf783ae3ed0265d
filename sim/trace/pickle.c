/*
 * pickle.c — a data-only Python unpickler (see pickle.h).
 *
 * PyTorch writes its memory snapshots with pickle.  This module reads them
 * without Python and without ever importing or calling anything: it runs
 * only the opcodes that build plain data (protocols 0–5) and refuses every
 * other one with its name and byte offset.  The input is untrusted: every
 * length, index and stack access is checked before use, the limits in
 * pt_pickle_limits bound the work stacks and the bytes held, and nothing
 * recurses over the value tree, so hostile nesting or memo cycles cost heap,
 * never C stack.
 *
 * The input is read through a window (64 KiB, grown to at most 64 MiB for
 * a long FRAME or text line, whatever the file's size); strings are copied
 * out of it.  Streaming (pickle.h) frees
 * each item of the streamed lists once it has been handed over.
 */
#include "pickle.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "u64map.h"

#define DEFAULT_MAX_STACK ((size_t)1 << 20)
#define DEFAULT_MAX_MARKS ((size_t)1 << 16)
#define DEFAULT_MAX_MEMO ((size_t)1 << 26)
#define DEFAULT_MAX_STR ((size_t)1 << 30)
#define DEFAULT_MAX_BYTES ((size_t)1 << 33)
#define WIN_MIN ((size_t)64 << 10) /* the input window, to begin with */
#define WIN_MAX ((size_t)64 << 20) /* a FRAME or text line may grow it this far */

/* ---- opcodes -------------------------------------------------------------- */

enum {
  OP_MARK = 0x28, OP_EMPTY_TUPLE = 0x29, OP_STOP = 0x2e, OP_POP = 0x30,
  OP_POP_MARK = 0x31, OP_DUP = 0x32, OP_BINBYTES = 0x42, OP_SHORT_BINBYTES = 0x43,
  OP_FLOAT = 0x46, OP_BINFLOAT = 0x47, OP_INT = 0x49, OP_BININT = 0x4a,
  OP_BININT1 = 0x4b, OP_LONG = 0x4c, OP_BININT2 = 0x4d, OP_NONE = 0x4e,
  OP_PERSID = 0x50, OP_BINPERSID = 0x51, OP_REDUCE = 0x52, OP_STRING = 0x53,
  OP_BINSTRING = 0x54, OP_SHORT_BINSTRING = 0x55, OP_UNICODE = 0x56,
  OP_BINUNICODE = 0x58, OP_EMPTY_LIST = 0x5d, OP_APPEND = 0x61, OP_BUILD = 0x62,
  OP_GLOBAL = 0x63, OP_DICT = 0x64, OP_APPENDS = 0x65, OP_GET = 0x67,
  OP_BINGET = 0x68, OP_INST = 0x69, OP_LONG_BINGET = 0x6a, OP_LIST = 0x6c,
  OP_OBJ = 0x6f, OP_PUT = 0x70, OP_BINPUT = 0x71, OP_LONG_BINPUT = 0x72,
  OP_SETITEM = 0x73, OP_TUPLE = 0x74, OP_SETITEMS = 0x75, OP_EMPTY_DICT = 0x7d,
  OP_PROTO = 0x80, OP_NEWOBJ = 0x81, OP_EXT1 = 0x82, OP_EXT2 = 0x83,
  OP_EXT4 = 0x84, OP_TUPLE1 = 0x85, OP_TUPLE2 = 0x86, OP_TUPLE3 = 0x87,
  OP_NEWTRUE = 0x88, OP_NEWFALSE = 0x89, OP_LONG1 = 0x8a, OP_LONG4 = 0x8b,
  OP_SHORT_BINUNICODE = 0x8c, OP_BINUNICODE8 = 0x8d, OP_BINBYTES8 = 0x8e,
  OP_EMPTY_SET = 0x8f, OP_ADDITEMS = 0x90, OP_FROZENSET = 0x91,
  OP_NEWOBJ_EX = 0x92, OP_STACK_GLOBAL = 0x93, OP_MEMOIZE = 0x94,
  OP_FRAME = 0x95, OP_BYTEARRAY8 = 0x96, OP_NEXT_BUFFER = 0x97,
  OP_READONLY_BUFFER = 0x98
};

static const char *const opnames[256] = {
  [OP_MARK] = "MARK", [OP_EMPTY_TUPLE] = "EMPTY_TUPLE", [OP_STOP] = "STOP",
  [OP_POP] = "POP", [OP_POP_MARK] = "POP_MARK", [OP_DUP] = "DUP",
  [OP_BINBYTES] = "BINBYTES", [OP_SHORT_BINBYTES] = "SHORT_BINBYTES",
  [OP_FLOAT] = "FLOAT", [OP_BINFLOAT] = "BINFLOAT", [OP_INT] = "INT",
  [OP_BININT] = "BININT", [OP_BININT1] = "BININT1", [OP_LONG] = "LONG",
  [OP_BININT2] = "BININT2", [OP_NONE] = "NONE", [OP_PERSID] = "PERSID",
  [OP_BINPERSID] = "BINPERSID", [OP_REDUCE] = "REDUCE", [OP_STRING] = "STRING",
  [OP_BINSTRING] = "BINSTRING", [OP_SHORT_BINSTRING] = "SHORT_BINSTRING",
  [OP_UNICODE] = "UNICODE", [OP_BINUNICODE] = "BINUNICODE",
  [OP_EMPTY_LIST] = "EMPTY_LIST", [OP_APPEND] = "APPEND", [OP_BUILD] = "BUILD",
  [OP_GLOBAL] = "GLOBAL", [OP_DICT] = "DICT", [OP_APPENDS] = "APPENDS",
  [OP_GET] = "GET", [OP_BINGET] = "BINGET", [OP_INST] = "INST",
  [OP_LONG_BINGET] = "LONG_BINGET", [OP_LIST] = "LIST", [OP_OBJ] = "OBJ",
  [OP_PUT] = "PUT", [OP_BINPUT] = "BINPUT", [OP_LONG_BINPUT] = "LONG_BINPUT",
  [OP_SETITEM] = "SETITEM", [OP_TUPLE] = "TUPLE", [OP_SETITEMS] = "SETITEMS",
  [OP_EMPTY_DICT] = "EMPTY_DICT", [OP_PROTO] = "PROTO", [OP_NEWOBJ] = "NEWOBJ",
  [OP_EXT1] = "EXT1", [OP_EXT2] = "EXT2", [OP_EXT4] = "EXT4",
  [OP_TUPLE1] = "TUPLE1", [OP_TUPLE2] = "TUPLE2", [OP_TUPLE3] = "TUPLE3",
  [OP_NEWTRUE] = "NEWTRUE", [OP_NEWFALSE] = "NEWFALSE", [OP_LONG1] = "LONG1",
  [OP_LONG4] = "LONG4", [OP_SHORT_BINUNICODE] = "SHORT_BINUNICODE",
  [OP_BINUNICODE8] = "BINUNICODE8", [OP_BINBYTES8] = "BINBYTES8",
  [OP_EMPTY_SET] = "EMPTY_SET", [OP_ADDITEMS] = "ADDITEMS",
  [OP_FROZENSET] = "FROZENSET", [OP_NEWOBJ_EX] = "NEWOBJ_EX",
  [OP_STACK_GLOBAL] = "STACK_GLOBAL", [OP_MEMOIZE] = "MEMOIZE",
  [OP_FRAME] = "FRAME", [OP_BYTEARRAY8] = "BYTEARRAY8",
  [OP_NEXT_BUFFER] = "NEXT_BUFFER", [OP_READONLY_BUFFER] = "READONLY_BUFFER",
};

/* ---- values ----------------------------------------------------------------
 *
 * Value headers come from slabs with a free list; a container's array and a
 * string's bytes are malloc'd apart and owned by their header.  flags:
 * LIVE (the slot is in use), PINNED (never freed before the end: shared
 * singletons and small ints, memo entries a later GET may fetch, values put
 * on the stack twice by DUP), OWNED (s.ptr was malloc'd), STREAMED (a list
 * whose items go to the item callback).  Freeing a streamed item walks what
 * it holds with an explicit stack and stops at pinned values: outside the
 * memo and DUP nothing is reachable twice, so what it reaches is its own.
 */
#define F_LIVE 1u
#define F_PINNED 2u
#define F_OWNED 4u
#define F_STREAMED 8u
#define SLAB_OBJS 4096

typedef struct slab {
  struct slab *next;
  pt_pyobj obj[SLAB_OBJS];
} slab;

struct pt_pickle {
  slab *slabs;
  pt_pyobj *spare;     /* free headers, linked through u.seq.items */
  size_t held, peak;   /* bytes of values held (headers, arrays, strings) */
  pt_pyobj *root;
};

static const char *type_name(pt_pyt t) {
  switch (t) {
  case PT_PY_NONE: return "None";
  case PT_PY_BOOL: return "bool";
  case PT_PY_INT: return "int";
  case PT_PY_FLOAT: return "float";
  case PT_PY_STR: return "str";
  case PT_PY_BYTES: return "bytes";
  case PT_PY_LIST: return "list";
  case PT_PY_TUPLE: return "tuple";
  case PT_PY_DICT: return "dict";
  case PT_PY_SET: return "set";
  }
  return "?";
}

/* The memo's keys: a bitmap for keys up to twice the count plus KEY_SLACK
 * (Python numbers them 0, 1, 2, ...), a hash set beyond, so a hostile
 * PUT 0xffffffff costs one entry, not half a gigabyte. */
#define KEY_SLACK ((size_t)8192)

typedef struct keyset {
  uint8_t *bits;
  size_t nbytes, n; /* n: keys held */
  pt_u64map big;
} keyset;

static int ks_has(keyset *k, uint64_t key) {
  if (key / 8 < k->nbytes && (k->bits[key / 8] >> (key & 7) & 1)) return 1;
  return k->big.len && pt_u64map_get(&k->big, key) != NULL; /* put before the bitmap grew */
}

/* Add key: 1 when new, 0 when already there, PT_ENOMEM. */
static int ks_add(keyset *k, uint64_t key) {
  if (ks_has(k, key)) return 0;
  if (key / 8 >= k->nbytes && key < 2 * (uint64_t)k->n + KEY_SLACK) {
    size_t nb = k->nbytes ? k->nbytes : KEY_SLACK / 8;
    while (nb <= key / 8) nb *= 2;
    uint8_t *b = realloc(k->bits, nb);
    if (!b) return PT_ENOMEM;
    memset(b + k->nbytes, 0, nb - k->nbytes);
    k->bits = b;
    k->nbytes = nb;
  }
  if (key / 8 < k->nbytes) {
    k->bits[key / 8] |= (uint8_t)(1u << (key & 7));
  } else if (pt_u64map_put(&k->big, key, 1) < 0) {
    return PT_ENOMEM;
  }
  k->n++;
  return 1;
}

static void ks_free(keyset *k) {
  free(k->bits);
  pt_u64map_free(&k->big);
  memset(k, 0, sizeof *k);
}

/* Ints in [SMALL_INT_MIN, SMALL_INT_MAX) are shared, as CPython shares them:
 * snapshots hold millions of stream numbers, flags and line numbers. */
#define SMALL_INT_MIN (-8)
#define SMALL_INT_MAX 256

/* One parse.  Marks are kept apart from the value stack, as CPython's
 * _pickle.c does: marks[] holds stack heights, and the top mark is a fence
 * that ordinary opcodes may not pop through. */
typedef struct unpickler {
  const pt_pickle_source *src;
  uint8_t *buf;      /* the window: input bytes [base, base + len) */
  size_t cap, len, pos;
  size_t base;       /* input offset of buf[0] */
  bool eof;
  size_t op;         /* offset of the opcode being run, for messages */
  uint8_t opc;       /* that opcode */
  const char *name;  /* for messages */
  pt_err *err;
  pt_pickle *p;
  pt_pickle_limits lim;
  pt_pyobj **stack;
  size_t sp, stack_cap;
  size_t *marks;
  size_t nmarks, marks_cap;
  pt_pyobj **work;   /* freeing's explicit stack */
  size_t work_cap;
  /* the memo: keys defined so far (their count is what MEMOIZE uses), the
     values kept (key -> pointer), and which keys a later GET fetches */
  keyset defined;
  pt_u64map memo;
  keyset *fetched;   /* from the first pass; NULL: keep every entry */
  bool scanning;     /* the first pass: opcodes read, no values built */
  pt_pyobj *none, *yes, *no; /* shared singletons, as in Python */
  pt_pyobj *small[SMALL_INT_MAX - SMALL_INT_MIN]; /* small ints, shared once made */
} unpickler;

static int fail(unpickler *u, int code, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(unpickler *u, int code, size_t off, const char *fmt, ...) {
  char why[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  return pt_err_set(u->err, code, "%s: byte %zu: %s", u->name, off, why);
}

static int nomem(unpickler *u) { return fail(u, PT_ENOMEM, u->op, "out of memory"); }

static size_t here(const unpickler *u) { return u->base + u->pos; }

static const char *opname(unpickler *u) {
  const char *n = opnames[u->opc];
  return n ? n : "?";
}

/* Count n bytes held (or, negative, given back); past the budget: an error. */
static int hold(unpickler *u, size_t n) {
  pt_pickle *p = u->p;
  if (n > u->lim.max_bytes - p->held)
    return fail(u, PT_ELIMIT, u->op, "more than the limit of %zu bytes of values held at once",
                u->lim.max_bytes);
  p->held += n;
  if (p->held > p->peak) p->peak = p->held;
  return 0;
}

static void unhold(pt_pickle *p, size_t n) { p->held -= n < p->held ? n : p->held; }

static pt_pyobj *new_obj(unpickler *u, pt_pyt t) {
  pt_pickle *p = u->p;
  if (!p->spare) {
    if (hold(u, sizeof(slab)) < 0) return NULL;
    slab *s = malloc(sizeof *s);
    if (!s) return NULL;
    s->next = p->slabs;
    p->slabs = s;
    for (size_t i = 0; i < SLAB_OBJS; i++) {
      s->obj[i].flags = 0;
      s->obj[i].u.seq.items = (pt_pyobj **)p->spare;
      p->spare = &s->obj[i];
    }
  }
  pt_pyobj *o = p->spare;
  p->spare = (pt_pyobj *)o->u.seq.items;
  memset(o, 0, sizeof *o);
  o->type = t;
  o->flags = F_LIVE;
  return o;
}

/* What o owns, given back; o itself stays. */
static void release_parts(pt_pickle *p, pt_pyobj *o) {
  switch (o->type) {
  case PT_PY_STR:
  case PT_PY_BYTES:
    if (o->flags & F_OWNED) {
      unhold(p, o->u.s.len);
      free((void *)o->u.s.ptr);
    }
    break;
  case PT_PY_LIST:
  case PT_PY_TUPLE:
  case PT_PY_SET:
    if (!(o->flags & F_STREAMED)) unhold(p, o->u.seq.cap * sizeof(pt_pyobj *));
    free(o->u.seq.items);
    break;
  case PT_PY_DICT:
    unhold(p, o->u.dict.cap * 2 * sizeof(pt_pyobj *));
    free(o->u.dict.kv);
    break;
  default: break;
  }
}

static void put_back(pt_pickle *p, pt_pyobj *o) {
  o->flags = 0;
  o->u.seq.items = (pt_pyobj **)p->spare;
  p->spare = o;
}

static int work_push(unpickler *u, size_t *n, pt_pyobj *o) {
  if (*n == u->work_cap) {
    size_t nc = u->work_cap ? u->work_cap * 2 : 256;
    pt_pyobj **w = realloc(u->work, nc * sizeof *w);
    if (!w) return PT_ENOMEM;
    u->work = w;
    u->work_cap = nc;
  }
  u->work[(*n)++] = o;
  return 0;
}

/* Free o and what only it holds (see "values" above). */
static int free_tree(unpickler *u, pt_pyobj *o) {
  size_t n = 0;
  if (work_push(u, &n, o) < 0) return nomem(u);
  while (n) {
    pt_pyobj *x = u->work[--n];
    if (x->flags & F_PINNED) continue;
    size_t k = 0;
    pt_pyobj **kids = NULL;
    if (x->type == PT_PY_LIST || x->type == PT_PY_TUPLE || x->type == PT_PY_SET) {
      kids = x->flags & F_STREAMED ? NULL : x->u.seq.items;
      k = x->flags & F_STREAMED ? 0 : x->u.seq.len;
    } else if (x->type == PT_PY_DICT) {
      kids = x->u.dict.kv;
      k = 2 * x->u.dict.len;
    }
    for (size_t i = 0; i < k; i++)
      if (!(kids[i]->flags & F_PINNED) && work_push(u, &n, kids[i]) < 0) return nomem(u);
    release_parts(u->p, x);
    put_back(u->p, x);
  }
  return 0;
}

/* Room for want more entries of elsize bytes in a malloc'd array of *cap. */
static void *grow(void *arr, size_t *cap, size_t want, size_t elsize) {
  size_t n = *cap ? *cap : 16;
  while (n < want) {
    if (n > SIZE_MAX / 2) return NULL;
    n *= 2;
  }
  if (n > SIZE_MAX / elsize) return NULL;
  void *q = realloc(arr, n * elsize);
  if (q) *cap = n;
  return q;
}

static size_t fence(const unpickler *u) { return u->nmarks ? u->marks[u->nmarks - 1] : 0; }

/* Fail unless n values sit above the top mark. */
static int avail(unpickler *u, size_t n) {
  size_t have = u->sp - fence(u);
  if (have >= n) return 0;
  return fail(u, PT_EFORMAT, u->op, "stack underflow: %s needs %zu value%s, %zu %s", opname(u),
              n, n == 1 ? "" : "s", have, u->nmarks ? "above the MARK" : "on the stack");
}

static int push(unpickler *u, pt_pyobj *o) {
  if (u->sp >= u->lim.max_stack)
    return fail(u, PT_ELIMIT, u->op, "stack deeper than the limit of %zu values",
                u->lim.max_stack);
  if (u->sp == u->stack_cap) {
    pt_pyobj **s = grow(u->stack, &u->stack_cap, u->sp + 1, sizeof *s);
    if (!s) return nomem(u);
    u->stack = s;
  }
  u->stack[u->sp++] = o;
  return 0;
}

/* Pop the top mark; *m is the stack height it recorded. */
static int pop_mark(unpickler *u, size_t *m) {
  if (!u->nmarks) return fail(u, PT_EFORMAT, u->op, "%s without a MARK", opname(u));
  *m = u->marks[--u->nmarks];
  return 0;
}

static int push_new(unpickler *u, pt_pyt t, pt_pyobj **o /* OUT */) {
  *o = new_obj(u, t);
  if (!*o) return nomem(u);
  return push(u, *o);
}

static int push_int(unpickler *u, int64_t v) {
  pt_pyobj **cached = v >= SMALL_INT_MIN && v < SMALL_INT_MAX ? &u->small[v - SMALL_INT_MIN] : NULL;
  if (cached && *cached) return push(u, *cached);
  pt_pyobj *o = new_obj(u, PT_PY_INT);
  if (!o) return nomem(u);
  o->u.i = v;
  if (cached) {
    o->flags |= F_PINNED;
    *cached = o;
  }
  return push(u, o);
}

/* A str/bytes value taking s (malloc'd, n bytes; NULL when n is 0). */
static int push_owned(unpickler *u, pt_pyt t, char *s, size_t n) {
  pt_pyobj *o = new_obj(u, t);
  if (!o) {
    free(s);
    return nomem(u);
  }
  o->u.s.ptr = s ? s : "";
  o->u.s.len = n;
  if (s) o->flags |= F_OWNED;
  return push(u, o);
}

/* A copy of s[0..n) as a new str/bytes value. */
static int push_copy(unpickler *u, pt_pyt t, const void *s, size_t n) {
  if (!n) return push_owned(u, t, NULL, 0);
  int rc = hold(u, n);
  if (rc) return rc;
  char *c = malloc(n);
  if (!c) return nomem(u);
  memcpy(c, s, n);
  return push_owned(u, t, c, n);
}

/* Make room for add more entries (per pointers each) in the array *items
 * that holds len of *cap. */
static int arr_reserve(unpickler *u, pt_pyobj ***items, size_t *cap, size_t len, size_t add,
                       size_t per) {
  if (add > SIZE_MAX - len) return nomem(u);
  size_t want = len + add;
  if (want <= *cap) return 0;
  size_t n = *cap ? *cap : add > 1 ? want : 4; /* a first batch is sized exactly */
  while (n < want) {
    if (n > SIZE_MAX / 2) return nomem(u);
    n *= 2;
  }
  size_t el = per * sizeof(pt_pyobj *);
  if (n > SIZE_MAX / 2 / el) return nomem(u);
  int rc = hold(u, (n - *cap) * el);
  if (rc) return rc;
  pt_pyobj **q = realloc(*items, n * el);
  if (!q) return nomem(u);
  *items = q;
  *cap = n;
  return 0;
}

/* A new list/tuple/set holding stack[from..sp), which is then popped. */
static int build_seq(unpickler *u, pt_pyt t, size_t from) {
  size_t n = u->sp - from;
  pt_pyobj *o = new_obj(u, t);
  if (!o) return nomem(u);
  int rc = arr_reserve(u, &o->u.seq.items, &o->u.seq.cap, 0, n, 1);
  if (rc) {
    put_back(u->p, o);
    return rc;
  }
  if (n) memcpy(o->u.seq.items, u->stack + from, n * sizeof(pt_pyobj *));
  o->u.seq.len = n;
  u->sp = from;
  return push(u, o);
}

/* ---- memo ------------------------------------------------------------------ */

static int memo_put(unpickler *u, uint64_t key) {
  int rc = u->scanning ? 0 : avail(u, 1);
  if (rc) return rc;
  rc = ks_add(&u->defined, key); /* a bit a key: what MEMOIZE counts */
  if (rc < 0) return nomem(u);
  if (u->scanning) return 0;
  if (u->fetched && !ks_has(u->fetched, key)) { /* no later GET: nothing to keep */
    pt_u64map_del(&u->memo, key);
    return 0;
  }
  if (!pt_u64map_get(&u->memo, key) && u->memo.len >= u->lim.max_memo) /* the entries kept */
    return fail(u, PT_ELIMIT, u->op, "memo larger than the limit of %zu entries",
                u->lim.max_memo);
  pt_pyobj *v = u->stack[u->sp - 1];
  v->flags |= F_PINNED;
  if (pt_u64map_put(&u->memo, key, (uint64_t)(uintptr_t)v) < 0) return nomem(u);
  return 0;
}

static int memo_get(unpickler *u, uint64_t key) {
  if (u->scanning) return ks_add(u->fetched, key) < 0 ? nomem(u) : 0;
  uint64_t *at = pt_u64map_get(&u->memo, key);
  if (!at)
    return fail(u, PT_EFORMAT, u->op, "%s: memo key %llu not found", opname(u),
                (unsigned long long)key);
  return push(u, (pt_pyobj *)(uintptr_t)*at);
}

/* ---- reading the input ------------------------------------------------------ */

/* Read more input into the window, keeping [pos, len) and making room for at
 * least want bytes past pos (growing the window up to WIN_MAX).  Returns the
 * bytes now available from pos. */
static int fill(unpickler *u, size_t want, size_t *have /* OUT */) {
  if (u->pos) { /* slide what is left to the front */
    memmove(u->buf, u->buf + u->pos, u->len - u->pos);
    u->base += u->pos;
    u->len -= u->pos;
    u->pos = 0;
  }
  if (want > u->cap && u->cap < WIN_MAX) {
    size_t nc = u->cap;
    while (nc < want && nc < WIN_MAX) nc *= 2;
    uint8_t *b = realloc(u->buf, nc);
    if (!b) return nomem(u);
    u->buf = b;
    u->cap = nc;
  }
  while (!u->eof && u->len < want && u->len < u->cap) {
    long r = u->src->read(u->src->ctx, u->buf + u->len, u->cap - u->len, u->err);
    if (r < 0) return (int)r;
    if (r == 0) u->eof = true;
    u->len += (size_t)r;
  }
  *have = u->len;
  return 0;
}

static int need(unpickler *u, uint64_t n) {
  size_t left = u->len - u->pos;
  if (n <= left) return 0;
  int rc = fill(u, n, &left);
  if (rc) return rc;
  if (n <= left) return 0;
  return fail(u, PT_EFORMAT, u->op, "truncated: %s needs %llu more bytes, %zu left", opname(u),
              (unsigned long long)n, left);
}

static uint64_t le(const uint8_t *s, size_t n) {
  uint64_t v = 0;
  while (n--) v = v << 8 | s[n];
  return v;
}

/* Read an n-byte little-endian unsigned argument. */
static int arg_u(unpickler *u, size_t n, uint64_t *v /* OUT */) {
  int rc = need(u, n);
  if (rc) return rc;
  *v = le(u->buf + u->pos, n);
  u->pos += n;
  return 0;
}

/* A 4-byte little-endian signed argument. */
static int arg_i32(unpickler *u, int64_t *v /* OUT */) {
  uint64_t x;
  int rc = arg_u(u, 4, &x);
  if (!rc) *v = x & 0x80000000u ? (int64_t)x - ((int64_t)1 << 32) : (int64_t)x;
  return rc;
}

/* A protocol-0 text argument: the bytes up to the next newline, which is
 * consumed and not included.  Valid until the next read. */
static int arg_line(unpickler *u, const char **s /* OUT */, size_t *n /* OUT */) {
  size_t from = 0;
  for (;;) {
    const uint8_t *start = u->buf + u->pos;
    const uint8_t *nl = memchr(start + from, '\n', u->len - u->pos - from);
    if (nl) {
      *s = (const char *)start;
      *n = (size_t)(nl - start);
      u->pos += *n + 1;
      return 0;
    }
    size_t have = u->len - u->pos, now;
    if (u->eof || have >= WIN_MAX)
      return fail(u, PT_EFORMAT, u->op, u->eof ? "truncated: %s argument has no terminating newline"
                                               : "%s argument longer than the limit of 64 MiB",
                  opname(u));
    from = have;
    int rc = fill(u, have + WIN_MIN, &now);
    if (rc) return rc;
  }
}

/* Skip up to n input bytes; *got is how many there were. */
static int skip(unpickler *u, uint64_t n, uint64_t *got /* OUT */) {
  *got = 0;
  while (*got < n) {
    size_t left = u->len - u->pos;
    if (!left) {
      int rc = fill(u, WIN_MIN, &left);
      if (rc) return rc;
      if (!left) break;
    }
    size_t k = n - *got < left ? (size_t)(n - *got) : left;
    u->pos += k;
    *got += k;
  }
  return 0;
}

/* The n bytes of a counted string, copied into *out (malloc'd; NULL when n
 * is 0), or skipped while scanning.  A string past max_str is an error, and
 * so is one the input ends inside (told the way need() tells it). */
static int arg_bytes(unpickler *u, uint64_t n, char **out /* OUT */) {
  *out = NULL;
  if (u->scanning || n > u->lim.max_str) {
    uint64_t got;
    int rc = skip(u, n, &got);
    if (rc) return rc;
    if (got < n)
      return fail(u, PT_EFORMAT, u->op, "truncated: %s needs %llu more bytes, %llu left", opname(u),
                  (unsigned long long)n, (unsigned long long)got);
    if (!u->scanning)
      return fail(u, PT_ELIMIT, u->op, "%s of %llu bytes: longer than the limit of %zu", opname(u),
                  (unsigned long long)n, u->lim.max_str);
    return 0;
  }
  if (!n) return 0;
  if (n <= u->cap) { /* fits the window: the common case */
    int rc = need(u, n);
    if (rc) return rc;
    if ((rc = hold(u, (size_t)n))) return rc;
    if (!(*out = malloc((size_t)n))) return nomem(u);
    memcpy(*out, u->buf + u->pos, (size_t)n);
    u->pos += (size_t)n;
    return 0;
  }
  /* larger than the window: read straight into a buffer that grows as bytes come */
  size_t cap = 0, got = 0;
  char *b = NULL;
  int rc = 0;
  while (got < n) {
    size_t left = u->len - u->pos;
    if (!left) {
      if ((rc = fill(u, WIN_MIN, &left))) break;
      if (!left) {
        rc = fail(u, PT_EFORMAT, u->op, "truncated: %s needs %llu more bytes, %zu left", opname(u),
                  (unsigned long long)n, got);
        break;
      }
    }
    size_t k = n - got < left ? (size_t)(n - got) : left;
    if (got + k > cap) {
      size_t nc = cap ? cap : WIN_MIN;
      while (nc < got + k) nc *= 2;
      if (nc > n) nc = (size_t)n;
      if ((rc = hold(u, nc - cap))) break;
      char *nb = realloc(b, nc);
      if (!nb) {
        rc = nomem(u);
        break;
      }
      b = nb;
      cap = nc;
    }
    memcpy(b + got, u->buf + u->pos, k);
    u->pos += k;
    got += k;
  }
  if (rc) {
    unhold(u->p, cap);
    free(b);
    return rc;
  }
  *out = b;
  return 0;
}

/* Decimal text (optional sign) to int64.  0 ok, 1 bad syntax, 2 too wide. */
static int parse_i64(const char *s, size_t n, int64_t *v /* OUT */) {
  size_t i = 0;
  bool neg = false;
  if (i < n && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
  if (i == n) return 1;
  for (size_t j = i; j < n; j++)
    if (s[j] < '0' || s[j] > '9') return 1;
  uint64_t lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, x = 0;
  for (; i < n; i++) {
    unsigned d = (unsigned)(s[i] - '0');
    if (x > (lim - d) / 10) return 2;
    x = x * 10 + d;
  }
  if (!neg) *v = (int64_t)x;
  else *v = x == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)x;
  return 0;
}

static int text_int(unpickler *u, const char *s, size_t n, int64_t *v /* OUT */) {
  int r = parse_i64(s, n, v);
  if (r == 1)
    return fail(u, PT_EFORMAT, u->op, "%s: bad integer text \"%.*s\"", opname(u),
                n > 40 ? 40 : (int)n, s);
  if (r == 2)
    return fail(u, PT_ELIMIT, u->op, "%s: integer %.*s%s is wider than 64 bits", opname(u),
                n > 40 ? 40 : (int)n, s, n > 40 ? "..." : "");
  return 0;
}

/* A memo index written as text (PUT, GET): a non-negative decimal. */
static int text_index(unpickler *u, uint64_t *idx /* OUT */) {
  const char *s;
  size_t n;
  int64_t v;
  int rc = arg_line(u, &s, &n);
  if (rc) return rc;
  if (parse_i64(s, n, &v) || v < 0)
    return fail(u, PT_EFORMAT, u->op, "%s: bad memo index \"%.*s\"", opname(u),
                n > 40 ? 40 : (int)n, s);
  *idx = (uint64_t)v;
  return 0;
}

/* Two's-complement little-endian bytes (LONG1, LONG4) to int64. */
static int long_bytes(unpickler *u, const uint8_t *s, size_t n, int64_t *v /* OUT */) {
  if (n == 0) {
    *v = 0;
    return 0;
  }
  size_t k = n < 8 ? n : 8;
  uint8_t sign = s[k - 1] & 0x80 ? 0xff : 0x00;
  for (size_t i = 8; i < n; i++)
    if (s[i] != sign)
      return fail(u, PT_ELIMIT, u->op, "%s: integer of %zu bytes is wider than 64 bits",
                  opname(u), n);
  uint64_t x = le(s, k);
  if (k < 8 && sign) x |= ~(uint64_t)0 << (8 * k);
  *v = x <= (uint64_t)INT64_MAX ? (int64_t)x : -(int64_t)~x - 1;
  return 0;
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* A failed decode: its output buffer (held bytes) given back, rc passed on. */
static int drop_str(unpickler *u, char *out, size_t held, int rc) {
  unhold(u->p, held);
  free(out);
  return rc;
}

/* STRING: a quoted Python bytes literal body with backslash escapes, decoded
 * the way CPython's PyBytes_DecodeEscape does. */
static int op_string(unpickler *u) {
  const char *s;
  size_t n;
  int rc = arg_line(u, &s, &n);
  if (rc) return rc;
  if (n < 2 || s[0] != s[n - 1] || (s[0] != '\'' && s[0] != '"'))
    return fail(u, PT_EFORMAT, u->op, "STRING argument must be quoted");
  s++;
  n -= 2;
  if (!memchr(s, '\\', n)) return push_copy(u, PT_PY_STR, s, n);
  if ((rc = hold(u, n))) return rc;
  char *out = malloc(n ? n : 1), *o = out;
  if (!out) return nomem(u);
  const char *end = s + n;
  while (s < end) {
    char c = *s++;
    if (c != '\\') {
      *o++ = c;
      continue;
    }
    if (s == end) return drop_str(u, out, n, fail(u, PT_EFORMAT, u->op, "STRING: trailing backslash"));
    c = *s++;
    switch (c) {
    case '\\': *o++ = '\\'; break;
    case '\'': *o++ = '\''; break;
    case '"': *o++ = '"'; break;
    case 'a': *o++ = '\a'; break;
    case 'b': *o++ = '\b'; break;
    case 'f': *o++ = '\f'; break;
    case 'n': *o++ = '\n'; break;
    case 'r': *o++ = '\r'; break;
    case 't': *o++ = '\t'; break;
    case 'v': *o++ = '\v'; break;
    case 'x': {
      int h = s < end ? hexval((unsigned char)s[0]) : -1;
      int l = s + 1 < end ? hexval((unsigned char)s[1]) : -1;
      if (h < 0 || l < 0) return drop_str(u, out, n, fail(u, PT_EFORMAT, u->op, "STRING: invalid \\x escape"));
      *o++ = (char)(h << 4 | l);
      s += 2;
      break;
    }
    default:
      if (c >= '0' && c <= '7') {
        unsigned v = (unsigned)(c - '0');
        for (int i = 0; i < 2 && s < end && *s >= '0' && *s <= '7'; i++)
          v = v * 8 + (unsigned)(*s++ - '0');
        *o++ = (char)(v & 0xff);
      } else { /* unknown escape: kept as written */
        *o++ = '\\';
        *o++ = c;
      }
    }
  }
  size_t m = (size_t)(o - out);
  unhold(u->p, n - m);
  return push_owned(u, PT_PY_STR, out, m);
}

static char *put_utf8(char *o, uint32_t cp) {
  if (cp < 0x80) {
    *o++ = (char)cp;
  } else if (cp < 0x800) {
    *o++ = (char)(0xc0 | cp >> 6);
    *o++ = (char)(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) { /* lone surrogates pass through, as 'surrogatepass' */
    *o++ = (char)(0xe0 | cp >> 12);
    *o++ = (char)(0x80 | (cp >> 6 & 0x3f));
    *o++ = (char)(0x80 | (cp & 0x3f));
  } else {
    *o++ = (char)(0xf0 | cp >> 18);
    *o++ = (char)(0x80 | (cp >> 12 & 0x3f));
    *o++ = (char)(0x80 | (cp >> 6 & 0x3f));
    *o++ = (char)(0x80 | (cp & 0x3f));
  }
  return o;
}

/* UNICODE: raw-unicode-escape text — bytes are Latin-1 code points, and
 * \uXXXX / \UXXXXXXXX escapes count only after an odd run of backslashes.
 * Decoded to UTF-8 (at most 2 output bytes per input byte). */
static int op_unicode(unpickler *u) {
  const char *s;
  size_t n;
  int rc = arg_line(u, &s, &n);
  if (rc) return rc;
  bool plain = true;
  for (size_t i = 0; i < n && plain; i++)
    plain = s[i] != '\\' && !(s[i] & 0x80);
  if (plain) return push_copy(u, PT_PY_STR, s, n);
  if (n > SIZE_MAX / 4) return nomem(u);
  if ((rc = hold(u, 2 * n))) return rc;
  char *out = malloc(2 * n), *o = out;
  if (!out) return nomem(u);
  const char *end = s + n;
  while (s < end) {
    unsigned char c = (unsigned char)*s++;
    if (c != '\\') {
      o = put_utf8(o, c);
      continue;
    }
    size_t run = 1;
    *o++ = '\\';
    while (s < end && *s == '\\') {
      *o++ = '\\';
      s++;
      run++;
    }
    if (!(run & 1) || s == end || (*s != 'u' && *s != 'U')) continue;
    int digits = *s == 'u' ? 4 : 8;
    s++;
    o--; /* the escaping backslash */
    if (end - s < digits)
      return drop_str(u, out, 2 * n, fail(u, PT_EFORMAT, u->op, "UNICODE: truncated \\%c escape", digits == 4 ? 'u' : 'U'));
    uint32_t cp = 0;
    for (int i = 0; i < digits; i++) {
      int h = hexval((unsigned char)*s++);
      if (h < 0)
        return drop_str(u, out, 2 * n, fail(u, PT_EFORMAT, u->op, "UNICODE: bad hex digit in \\%c escape",
                    digits == 4 ? 'u' : 'U'));
      cp = cp << 4 | (uint32_t)h;
    }
    if (cp > 0x10ffff)
      return drop_str(u, out, 2 * n, fail(u, PT_EFORMAT, u->op, "UNICODE: code point 0x%lx out of range",
                  (unsigned long)cp));
    o = put_utf8(o, cp);
  }
  size_t m = (size_t)(o - out);
  unhold(u->p, 2 * n - m);
  return push_owned(u, PT_PY_STR, out, m);
}

static int op_float(unpickler *u) {
  const char *s;
  size_t n;
  char tmp[128];
  int rc = arg_line(u, &s, &n);
  if (rc) return rc;
  if (n == 0 || n >= sizeof tmp || memchr(s, '\0', n))
    return fail(u, PT_EFORMAT, u->op, "FLOAT: bad float text");
  memcpy(tmp, s, n);
  tmp[n] = '\0';
  char *end;
  double d = strtod(tmp, &end);
  if (end != tmp + n)
    return fail(u, PT_EFORMAT, u->op, "FLOAT: bad float text \"%s\"", tmp);
  pt_pyobj *o;
  if (!(rc = push_new(u, PT_PY_FLOAT, &o))) o->u.f = d;
  return rc;
}

/* A length-prefixed string or bytes: lenbytes-byte little-endian length
 * (unsigned, or signed when sgn), then the bytes, copied. */
static int op_counted(unpickler *u, size_t lenbytes, bool sgn, pt_pyt t) {
  uint64_t n;
  char *s;
  int rc = arg_u(u, lenbytes, &n);
  if (rc) return rc;
  if (sgn && (n & 0x80000000u))
    return fail(u, PT_EFORMAT, u->op, "%s: negative length", opname(u));
  if ((rc = arg_bytes(u, n, &s))) return rc;
  return u->scanning ? 0 : push_owned(u, t, s, (size_t)n);
}

static int op_long(unpickler *u, size_t lenbytes) {
  uint64_t n = 0;
  int64_t v = 0;
  char *s;
  int rc = arg_u(u, lenbytes, &n);
  if (rc) return rc;
  if (lenbytes == 4 && (n & 0x80000000u))
    return fail(u, PT_EFORMAT, u->op, "LONG4: negative length");
  if ((rc = arg_bytes(u, n, &s))) return rc;
  if (u->scanning) return 0;
  rc = long_bytes(u, (const uint8_t *)s, (size_t)n, &v);
  unhold(u->p, (size_t)n);
  free(s);
  return rc ? rc : push_int(u, v);
}

/* Is the value at stack position q the list under src->stream_key in the
 * top-level dict, being built?  Python's pickler writes a dict of several
 * keys as MARK key value ... SETITEMS, so the stack then reads: the dict at
 * 0, a MARK (height 1), key, value, ..., the key, the list at q. */
static bool outer_list(const unpickler *u, size_t q, size_t fence_below) {
  return q >= 2 && fence_below == 1 && (q - 1) % 2 == 1 && u->stack[q]->type == PT_PY_LIST &&
         u->stack[0]->type == PT_PY_DICT && pt_py_is_str(u->stack[q - 1], u->src->stream_key);
}

/*
 * Is the list at stack position `at` one of the streamed lists, an item of
 * the outer list?  Either the outer list's items sit above a MARK of their
 * own (MARK item item ... APPENDS) or the list sits right above it (item
 * APPEND).  Its index in the outer list goes to *index.
 */
static bool streamed_list(unpickler *u, size_t at, size_t *index /* OUT */) {
  if (!u->src->stream_key || !u->src->item || !u->nmarks) return false;
  size_t h = u->marks[u->nmarks - 1];
  if (h >= 1 && h <= at && u->nmarks >= 2 && outer_list(u, h - 1, u->marks[u->nmarks - 2])) {
    *index = u->stack[h - 1]->u.seq.len + (at - h);
    return true;
  }
  if (at >= 1 && h <= at - 1 && outer_list(u, at - 1, h)) {
    *index = u->stack[at - 1]->u.seq.len;
    return true;
  }
  return false;
}

/* Hand stack[from..sp) to the item callback as items of the streamed list l,
 * free each, and pop them. */
static int stream_items(unpickler *u, pt_pyobj *l, size_t list, size_t from) {
  if (!(l->flags & F_STREAMED)) {
    if (l->u.seq.len)
      return fail(u, PT_EFORMAT, u->op, "a streamed list already holds %zu items", l->u.seq.len);
    unhold(u->p, l->u.seq.cap * sizeof(pt_pyobj *));
    free(l->u.seq.items);
    l->u.seq.items = NULL;
    l->u.seq.cap = 0; /* counts the items streamed */
    l->flags |= F_STREAMED;
  }
  for (size_t i = from; i < u->sp; i++) {
    int rc = u->src->item(u->src->item_ctx, list, l->u.seq.cap++, u->stack[i], u->err);
    if (rc < 0) return rc;
  }
  for (size_t i = from; i < u->sp; i++) {
    int rc = free_tree(u, u->stack[i]);
    if (rc < 0) return rc;
  }
  u->sp = from;
  return 0;
}

/* APPENDS, ADDITEMS, SETITEMS: the values above the top mark go into the
 * container just below it (which must itself be above the next mark). */
static int op_extend(unpickler *u, pt_pyt want) {
  size_t m;
  int rc = pop_mark(u, &m);
  if (rc) return rc;
  if (m <= fence(u))
    return fail(u, PT_EFORMAT, u->op, "stack underflow: %s has no %s below its MARK",
                opname(u), type_name(want));
  pt_pyobj *c = u->stack[m - 1];
  size_t n = u->sp - m, list;
  if (c->type != want)
    return fail(u, PT_EFORMAT, u->op, "%s into a %s, not a %s", opname(u), type_name(c->type),
                type_name(want));
  if (want == PT_PY_LIST && streamed_list(u, m - 1, &list)) return stream_items(u, c, list, m);
  if (want == PT_PY_DICT) {
    if (n % 2)
      return fail(u, PT_EFORMAT, u->op, "SETITEMS with an odd number of values (%zu)", n);
    if ((rc = arr_reserve(u, &c->u.dict.kv, &c->u.dict.cap, c->u.dict.len, n / 2, 2))) return rc;
    if (n) memcpy(c->u.dict.kv + 2 * c->u.dict.len, u->stack + m, n * sizeof(pt_pyobj *));
    c->u.dict.len += n / 2;
  } else {
    if ((rc = arr_reserve(u, &c->u.seq.items, &c->u.seq.cap, c->u.seq.len, n, 1))) return rc;
    if (n) memcpy(c->u.seq.items + c->u.seq.len, u->stack + m, n * sizeof(pt_pyobj *));
    c->u.seq.len += n;
  }
  u->sp = m;
  return 0;
}

static int op_dict(unpickler *u) {
  size_t m;
  int rc = pop_mark(u, &m);
  if (rc) return rc;
  size_t n = u->sp - m;
  if (n % 2) return fail(u, PT_EFORMAT, u->op, "DICT with an odd number of values (%zu)", n);
  pt_pyobj *o = new_obj(u, PT_PY_DICT);
  if (!o) return nomem(u);
  if ((rc = arr_reserve(u, &o->u.dict.kv, &o->u.dict.cap, 0, n / 2, 2))) {
    put_back(u->p, o);
    return rc;
  }
  if (n) memcpy(o->u.dict.kv, u->stack + m, n * sizeof(pt_pyobj *));
  o->u.dict.len = n / 2;
  u->sp = m;
  return push(u, o);
}

/* Run one opcode; *done is set by STOP. */
static int step(unpickler *u, bool *done) {
  uint8_t c = u->opc = u->buf[u->pos++];
  uint64_t x = 0;
  size_t list;
  int64_t v = 0;
  int rc = 0;
  pt_pyobj *o;
  switch (c) {
  case OP_PROTO:
    if ((rc = arg_u(u, 1, &x))) return rc;
    if (x > 5) return fail(u, PT_EFORMAT, u->op, "unsupported pickle protocol %u", (unsigned)x);
    return 0;
  case OP_FRAME: { /* frames only group opcodes; check the length (as far as WIN_MAX) and go on */
    if ((rc = arg_u(u, 8, &x))) return rc;
    size_t have = u->len - u->pos;
    if (x > have && (rc = fill(u, x < WIN_MAX ? (size_t)x : WIN_MAX, &have))) return rc;
    if (x > have && u->eof)
      return fail(u, PT_EFORMAT, u->op, "truncated: FRAME of %llu bytes, %zu left",
                  (unsigned long long)x, have);
    return 0;
  }
  case OP_STOP:
    if (u->nmarks) return fail(u, PT_EFORMAT, u->op, "STOP with a MARK still open");
    if (u->sp != 1)
      return fail(u, PT_EFORMAT, u->op, "STOP with %zu values on the stack, not 1", u->sp);
    u->p->root = u->stack[0];
    *done = true; /* bytes after STOP are ignored, as Python ignores them */
    return 0;
  case OP_MARK:
    if (u->nmarks >= u->lim.max_marks)
      return fail(u, PT_ELIMIT, u->op, "more than the limit of %zu open MARKs",
                  u->lim.max_marks);
    if (u->nmarks == u->marks_cap) {
      size_t *m = grow(u->marks, &u->marks_cap, u->nmarks + 1, sizeof *m);
      if (!m) return nomem(u);
      u->marks = m;
    }
    u->marks[u->nmarks++] = u->sp;
    return 0;
  case OP_POP: /* pops the top mark when nothing is above it, as CPython does */
    if (u->nmarks && u->marks[u->nmarks - 1] == u->sp) {
      u->nmarks--;
      return 0;
    }
    if ((rc = avail(u, 1))) return rc;
    u->sp--;
    return 0;
  case OP_POP_MARK: {
    size_t m;
    if ((rc = pop_mark(u, &m))) return rc;
    u->sp = m;
    return 0;
  }
  case OP_DUP: /* a value held twice is never freed before the end */
    if ((rc = avail(u, 1))) return rc;
    u->stack[u->sp - 1]->flags |= F_PINNED;
    return push(u, u->stack[u->sp - 1]);
  case OP_NONE: return push(u, u->none);
  case OP_NEWTRUE: return push(u, u->yes);
  case OP_NEWFALSE: return push(u, u->no);
  case OP_INT: {
    const char *s;
    size_t n;
    if ((rc = arg_line(u, &s, &n))) return rc;
    if (n == 2 && s[0] == '0' && (s[1] == '0' || s[1] == '1')) /* I00 / I01: bools */
      return push(u, s[1] == '1' ? u->yes : u->no);
    if ((rc = text_int(u, s, n, &v))) return rc;
    return push_int(u, v);
  }
  case OP_LONG: {
    const char *s;
    size_t n;
    if ((rc = arg_line(u, &s, &n))) return rc;
    if (n && s[n - 1] == 'L') n--; /* Python 2's repr suffix */
    if ((rc = text_int(u, s, n, &v))) return rc;
    return push_int(u, v);
  }
  case OP_BININT:
    if ((rc = arg_i32(u, &v))) return rc;
    return push_int(u, v);
  case OP_BININT1:
    if ((rc = arg_u(u, 1, &x))) return rc;
    return push_int(u, (int64_t)x);
  case OP_BININT2:
    if ((rc = arg_u(u, 2, &x))) return rc;
    return push_int(u, (int64_t)x);
  case OP_LONG1: return op_long(u, 1);
  case OP_LONG4: return op_long(u, 4);
  case OP_FLOAT: return op_float(u);
  case OP_BINFLOAT: {
    double d;
    if ((rc = need(u, 8))) return rc;
    x = 0;
    for (int i = 0; i < 8; i++) x = x << 8 | u->buf[u->pos++]; /* big-endian */
    memcpy(&d, &x, sizeof d);
    if (!(rc = push_new(u, PT_PY_FLOAT, &o))) o->u.f = d;
    return rc;
  }
  case OP_STRING: return op_string(u);
  case OP_BINSTRING: return op_counted(u, 4, true, PT_PY_STR);
  case OP_SHORT_BINSTRING: return op_counted(u, 1, false, PT_PY_STR);
  case OP_UNICODE: return op_unicode(u);
  case OP_BINUNICODE: return op_counted(u, 4, false, PT_PY_STR);
  case OP_SHORT_BINUNICODE: return op_counted(u, 1, false, PT_PY_STR);
  case OP_BINUNICODE8: return op_counted(u, 8, false, PT_PY_STR);
  case OP_BINBYTES: return op_counted(u, 4, false, PT_PY_BYTES);
  case OP_SHORT_BINBYTES: return op_counted(u, 1, false, PT_PY_BYTES);
  case OP_BINBYTES8: return op_counted(u, 8, false, PT_PY_BYTES);
  case OP_BYTEARRAY8: return op_counted(u, 8, false, PT_PY_BYTES);
  case OP_EMPTY_LIST: return push_new(u, PT_PY_LIST, &o);
  case OP_EMPTY_DICT: return push_new(u, PT_PY_DICT, &o);
  case OP_EMPTY_SET: return push_new(u, PT_PY_SET, &o);
  case OP_EMPTY_TUPLE: return push_new(u, PT_PY_TUPLE, &o);
  case OP_LIST:
  case OP_TUPLE:
  case OP_FROZENSET: {
    size_t m;
    if ((rc = pop_mark(u, &m))) return rc;
    return build_seq(u, c == OP_LIST ? PT_PY_LIST : c == OP_TUPLE ? PT_PY_TUPLE : PT_PY_SET, m);
  }
  case OP_TUPLE1:
  case OP_TUPLE2:
  case OP_TUPLE3: {
    size_t k = (size_t)(c - OP_TUPLE1) + 1;
    if ((rc = avail(u, k))) return rc;
    return build_seq(u, PT_PY_TUPLE, u->sp - k);
  }
  case OP_DICT: return op_dict(u);
  case OP_APPEND:
    if ((rc = avail(u, 2))) return rc;
    o = u->stack[u->sp - 2];
    if (o->type != PT_PY_LIST)
      return fail(u, PT_EFORMAT, u->op, "APPEND to a %s, not a list", type_name(o->type));
    if (streamed_list(u, u->sp - 2, &list)) return stream_items(u, o, list, u->sp - 1);
    if ((rc = arr_reserve(u, &o->u.seq.items, &o->u.seq.cap, o->u.seq.len, 1, 1))) return rc;
    o->u.seq.items[o->u.seq.len++] = u->stack[--u->sp];
    return 0;
  case OP_APPENDS: return op_extend(u, PT_PY_LIST);
  case OP_ADDITEMS: return op_extend(u, PT_PY_SET);
  case OP_SETITEMS: return op_extend(u, PT_PY_DICT);
  case OP_SETITEM:
    if ((rc = avail(u, 3))) return rc;
    o = u->stack[u->sp - 3];
    if (o->type != PT_PY_DICT)
      return fail(u, PT_EFORMAT, u->op, "SETITEM into a %s, not a dict", type_name(o->type));
    if ((rc = arr_reserve(u, &o->u.dict.kv, &o->u.dict.cap, o->u.dict.len, 1, 2))) return rc;
    o->u.dict.kv[2 * o->u.dict.len] = u->stack[u->sp - 2];
    o->u.dict.kv[2 * o->u.dict.len + 1] = u->stack[u->sp - 1];
    o->u.dict.len++;
    u->sp -= 2;
    return 0;
  case OP_PUT:
    if ((rc = text_index(u, &x))) return rc;
    return memo_put(u, x);
  case OP_BINPUT:
    if ((rc = arg_u(u, 1, &x))) return rc;
    return memo_put(u, x);
  case OP_LONG_BINPUT:
    if ((rc = arg_u(u, 4, &x))) return rc;
    return memo_put(u, x);
  case OP_MEMOIZE: return memo_put(u, u->defined.n);
  case OP_GET:
    if ((rc = text_index(u, &x))) return rc;
    return memo_get(u, x);
  case OP_BINGET:
    if ((rc = arg_u(u, 1, &x))) return rc;
    return memo_get(u, x);
  case OP_LONG_BINGET:
    if ((rc = arg_u(u, 4, &x))) return rc;
    return memo_get(u, x);
  case OP_GLOBAL:
  case OP_STACK_GLOBAL:
  case OP_REDUCE:
  case OP_BUILD:
  case OP_INST:
  case OP_OBJ:
  case OP_NEWOBJ:
  case OP_NEWOBJ_EX:
  case OP_EXT1:
  case OP_EXT2:
  case OP_EXT4:
  case OP_PERSID:
  case OP_BINPERSID:
    return fail(u, PT_EFORBID, u->op,
                "forbidden opcode %s (0x%02x): it would import or call code", opnames[c], c);
  case OP_NEXT_BUFFER:
  case OP_READONLY_BUFFER:
    return fail(u, PT_EFORBID, u->op,
                "unsupported opcode %s (0x%02x): out-of-band buffers are not accepted",
                opnames[c], c);
  default:
    return fail(u, PT_EFORMAT, u->op, "unknown opcode 0x%02x", c);
  }
}

/* The first pass: the opcodes' arguments read and skipped, nothing built;
 * only which memo keys are defined and which a GET fetches.  It stops at the
 * first opcode it cannot read; the second pass then fails there, after every
 * GET this pass saw. */
static int scan(unpickler *u, uint8_t c, bool *done) {
  uint64_t x;
  const char *s;
  size_t n;
  int64_t v;
  switch (c) {
  case OP_PROTO:
  case OP_BININT1: return arg_u(u, 1, &x);
  case OP_BININT2: return arg_u(u, 2, &x);
  case OP_BININT: return arg_u(u, 4, &x);
  case OP_FRAME:
  case OP_BINFLOAT: return arg_u(u, 8, &x);
  case OP_STOP: *done = true; return 0;
  case OP_INT:
  case OP_LONG:
  case OP_FLOAT:
  case OP_STRING:
  case OP_UNICODE: return arg_line(u, &s, &n);
  case OP_LONG1: return op_long(u, 1);
  case OP_LONG4: return op_long(u, 4);
  case OP_BINSTRING:
  case OP_BINUNICODE:
  case OP_BINBYTES: return op_counted(u, 4, c == OP_BINSTRING, PT_PY_STR);
  case OP_SHORT_BINSTRING:
  case OP_SHORT_BINUNICODE:
  case OP_SHORT_BINBYTES: return op_counted(u, 1, false, PT_PY_STR);
  case OP_BINUNICODE8:
  case OP_BINBYTES8:
  case OP_BYTEARRAY8: return op_counted(u, 8, false, PT_PY_STR);
  case OP_PUT: return text_index(u, &x) ? PT_EFORMAT : memo_put(u, x);
  case OP_BINPUT: return arg_u(u, 1, &x) ? PT_EFORMAT : memo_put(u, x);
  case OP_LONG_BINPUT: return arg_u(u, 4, &x) ? PT_EFORMAT : memo_put(u, x);
  case OP_MEMOIZE: return memo_put(u, u->defined.n);
  case OP_GET: return text_index(u, &x) ? PT_EFORMAT : memo_get(u, x);
  case OP_BINGET: return arg_u(u, 1, &x) ? PT_EFORMAT : memo_get(u, x);
  case OP_LONG_BINGET: return arg_u(u, 4, &x) ? PT_EFORMAT : memo_get(u, x);
  case OP_MARK: case OP_EMPTY_TUPLE: case OP_POP: case OP_POP_MARK: case OP_DUP:
  case OP_NONE: case OP_NEWTRUE: case OP_NEWFALSE: case OP_EMPTY_LIST: case OP_APPEND:
  case OP_DICT: case OP_APPENDS: case OP_LIST: case OP_SETITEM: case OP_TUPLE:
  case OP_SETITEMS: case OP_EMPTY_DICT: case OP_TUPLE1: case OP_TUPLE2: case OP_TUPLE3:
  case OP_EMPTY_SET: case OP_ADDITEMS: case OP_FROZENSET:
    return 0;
  default:
    (void)v;
    return PT_EFORMAT; /* forbidden or unknown: the second pass says which */
  }
}

/* Run opcodes from the start of the input to STOP (or the first error). */
static int run(unpickler *u) {
  bool done = false;
  int rc = 0;
  while (!rc && !done) {
    if (u->pos >= u->len) {
      size_t have;
      if ((rc = fill(u, 1, &have))) break;
      if (!have) {
        rc = fail(u, PT_EFORMAT, here(u), "truncated: input ends without STOP");
        break;
      }
    }
    u->op = here(u);
    if (u->scanning) {
      u->opc = u->buf[u->pos++];
      rc = scan(u, u->opc, &done);
    } else {
      rc = step(u, &done);
    }
  }
  return rc;
}

/* ---- public API -------------------------------------------------------------- */

typedef struct mem_src {
  const uint8_t *buf;
  size_t len, pos;
} mem_src;

static long mem_read(void *ctx, void *buf, size_t n, pt_err *err) {
  (void)err;
  mem_src *m = ctx;
  if (n > m->len - m->pos) n = m->len - m->pos;
  if (n) memcpy(buf, m->buf + m->pos, n);
  m->pos += n;
  return (long)n;
}

int pt_pickle_parse(const uint8_t *buf, size_t len, const char *name,
                    const pt_pickle_limits *lim, pt_err *err, pt_pickle **out /* OUT */) {
  if (!name) name = "pickle";
  if (!out) return pt_err_set(err, PT_EUSAGE, "%s: no place for the result", name);
  *out = NULL;
  if (!buf && len) return pt_err_set(err, PT_EUSAGE, "%s: no input buffer", name);
  mem_src m = {buf, len, 0};
  pt_pickle_source src = {.read = mem_read, .ctx = &m};
  return pt_pickle_parse_stream(&src, name, lim, err, out);
}

static void unpickler_done(unpickler *u) {
  free(u->buf);
  free(u->stack);
  free(u->marks);
  free(u->work);
  ks_free(&u->defined);
  pt_u64map_free(&u->memo);
  u->buf = NULL;
  u->stack = u->work = NULL;
  u->marks = NULL;
}

static int unpickler_init(unpickler *u) {
  u->cap = WIN_MIN;
  u->buf = malloc(u->cap);
  return u->buf ? 0 : nomem(u);
}

int pt_pickle_parse_stream(const pt_pickle_source *src, const char *name,
                           const pt_pickle_limits *lim, pt_err *err, pt_pickle **out /* OUT */) {
  if (!name) name = "pickle";
  if (!out) return pt_err_set(err, PT_EUSAGE, "%s: no place for the result", name);
  *out = NULL;
  if (!src || !src->read) return pt_err_set(err, PT_EUSAGE, "%s: no input", name);
  unpickler u;
  memset(&u, 0, sizeof u);
  u.src = src;
  u.name = name;
  u.err = err;
  if (lim) u.lim = *lim;
  if (!u.lim.max_stack) u.lim.max_stack = DEFAULT_MAX_STACK;
  if (!u.lim.max_marks) u.lim.max_marks = DEFAULT_MAX_MARKS;
  if (!u.lim.max_memo) u.lim.max_memo = DEFAULT_MAX_MEMO;
  if (!u.lim.max_str) u.lim.max_str = DEFAULT_MAX_STR;
  if (!u.lim.max_bytes) u.lim.max_bytes = DEFAULT_MAX_BYTES;
  u.p = calloc(1, sizeof *u.p);
  if (!u.p) return pt_err_set(err, PT_ENOMEM, "%s: out of memory", name);

  int rc = 0;
  keyset fetched = {0};
  pt_err scratch;
  /* the first pass, where the input can be read twice (a first rewind says so): which keys a GET fetches */
  if (src->stream_key && src->item && src->rewind && src->rewind(src->ctx, &scratch) == 0) {
    u.scanning = true;
    u.fetched = &fetched;
    u.err = &scratch;
    if ((rc = unpickler_init(&u)) == 0) rc = run(&u);
    if (rc == PT_ENOMEM) rc = pt_err_set(err, PT_ENOMEM, "%s: out of memory", name);
    else if ((rc = src->rewind(src->ctx, err)) < 0) rc = pt_err_prefix(err, rc, "%s", name);
    else rc = 0;
    unpickler_done(&u);
    u.scanning = false;
    u.err = err;
    u.pos = u.len = u.base = 0;
    u.eof = false;
    memset(&u.defined, 0, sizeof u.defined);
  }
  if (rc == 0) rc = unpickler_init(&u);
  if (rc == 0 && (!(u.none = new_obj(&u, PT_PY_NONE)) || !(u.yes = new_obj(&u, PT_PY_BOOL)) ||
                  !(u.no = new_obj(&u, PT_PY_BOOL)))) {
    rc = nomem(&u);
  } else if (rc == 0) {
    u.none->flags |= F_PINNED;
    u.yes->flags |= F_PINNED;
    u.no->flags |= F_PINNED;
    u.yes->u.i = 1;
    rc = run(&u);
  }
  unpickler_done(&u);
  ks_free(&fetched);
  if (rc) {
    pt_pickle_free(u.p);
    return rc;
  }
  *out = u.p;
  return 0;
}

const pt_pyobj *pt_pickle_root(const pt_pickle *p) { return p ? p->root : NULL; }

size_t pt_pickle_peak_bytes(const pt_pickle *p) { return p ? p->peak : 0; }

int pt_py_lives(const pt_pyobj *o) { return o && (o->flags & F_PINNED); }

size_t pt_py_streamed(const pt_pyobj *l) {
  return l && l->type == PT_PY_LIST && (l->flags & F_STREAMED) ? l->u.seq.cap : 0;
}

void pt_pickle_free(pt_pickle *p) {
  if (!p) return;
  for (slab *s = p->slabs, *next; s; s = next) {
    next = s->next;
    for (size_t i = 0; i < SLAB_OBJS; i++)
      if (s->obj[i].flags & F_LIVE) release_parts(p, &s->obj[i]);
    free(s);
  }
  free(p);
}

/* Dicts keep every SETITEM in order, duplicates included, so the last
 * matching key is the one Python's dict would hold. */
const pt_pyobj *pt_py_get(const pt_pyobj *dict, const char *key) {
  if (!dict || !key || dict->type != PT_PY_DICT) return NULL;
  size_t n = strlen(key);
  for (size_t i = dict->u.dict.len; i-- > 0;) {
    const pt_pyobj *k = dict->u.dict.kv[2 * i];
    if (k->type == PT_PY_STR && k->u.s.len == n && memcmp(k->u.s.ptr, key, n) == 0)
      return dict->u.dict.kv[2 * i + 1];
  }
  return NULL;
}

const pt_pyobj *pt_py_index(const pt_pyobj *seq, size_t i) {
  if (!seq || (seq->type != PT_PY_LIST && seq->type != PT_PY_TUPLE) || (seq->flags & F_STREAMED))
    return NULL;
  return i < seq->u.seq.len ? seq->u.seq.items[i] : NULL;
}

size_t pt_py_len(const pt_pyobj *o) {
  if (!o) return 0;
  switch (o->type) {
  case PT_PY_LIST:
  case PT_PY_TUPLE:
  case PT_PY_SET: return o->flags & F_STREAMED ? 0 : o->u.seq.len;
  case PT_PY_DICT: return o->u.dict.len;
  default: return 0;
  }
}

int pt_py_is_str(const pt_pyobj *o, const char *s) {
  if (!o || !s || o->type != PT_PY_STR) return 0;
  size_t n = strlen(s);
  return o->u.s.len == n && (n == 0 || memcmp(o->u.s.ptr, s, n) == 0);
}
