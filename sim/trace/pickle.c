/*
 * pickle.c — a data-only Python unpickler (see pickle.h).
 *
 * PyTorch writes its memory snapshots with pickle.  This module reads them
 * without Python and without ever importing or calling anything: it runs
 * only the opcodes that build plain data (protocols 0–5) and refuses every
 * other one with its name and byte offset.  The input is untrusted: every
 * length, index and stack access is checked before use, the limits in
 * pt_pickle_limits bound the work stacks, and nothing recurses over the value
 * tree, so hostile nesting or memo cycles cost heap, never C stack.
 */
#include "pickle.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_STACK ((size_t)1 << 20)
#define DEFAULT_MAX_MARKS ((size_t)1 << 16)
#define DEFAULT_MAX_MEMO ((size_t)1 << 26)

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

/* ---- arena ----------------------------------------------------------------
 *
 * Every value, container array and decoded string lives in a list of chunks
 * handed out by bumping an offset; pt_pickle_free releases the list, so no
 * per-value free exists and nothing ever walks the (possibly cyclic) tree.
 * Chunk sizes double up to ARENA_MAX_CHUNK; an allocation larger than half a
 * chunk gets a chunk of its own, linked behind the current one so the space
 * left in the current chunk is not abandoned.  A container array that is the
 * last allocation of the current chunk grows in place (arena_extend); any
 * other growth copies, and since capacities double, the abandoned copies add
 * up to less than the final array.
 */
#define ARENA_ALIGN ((size_t)_Alignof(max_align_t))
#define ARENA_MIN_CHUNK ((size_t)64 << 10)
#define ARENA_MAX_CHUNK ((size_t)4 << 20)

typedef struct chunk {
  struct chunk *next;
  size_t size, used; /* bytes of data[] */
  max_align_t data[];
} chunk;

typedef struct arena {
  chunk *head;      /* current chunk: bumps happen here */
  size_t next_size; /* size of the next ordinary chunk */
} arena;

static size_t align_up(size_t n) { return (n + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1); }

static void *arena_alloc(arena *a, size_t n) {
  if (n > SIZE_MAX / 2) return NULL;
  n = n ? align_up(n) : ARENA_ALIGN;
  chunk *c = a->head;
  if (c && c->size - c->used >= n) {
    void *p = (char *)c->data + c->used;
    c->used += n;
    return p;
  }
  bool own = n > a->next_size / 2;
  size_t size = own ? n : a->next_size;
  c = malloc(offsetof(chunk, data) + size);
  if (!c) return NULL;
  c->size = size;
  c->used = n;
  if (own && a->head) { /* keep bumping in the current chunk */
    c->next = a->head->next;
    a->head->next = c;
  } else {
    c->next = a->head;
    a->head = c;
    if (!own && a->next_size < ARENA_MAX_CHUNK) a->next_size *= 2;
  }
  return c->data;
}

/* Grow the allocation p (old bytes) to new bytes in place if it is the last
 * one in the current chunk and the chunk has room. */
static bool arena_extend(arena *a, void *p, size_t old, size_t new) {
  chunk *c = a->head;
  if (!c || !p || new > SIZE_MAX / 2) return false;
  old = align_up(old);
  new = align_up(new);
  if ((uintptr_t)p + old != (uintptr_t)c->data + c->used) return false;
  if (new - old > c->size - c->used) return false;
  c->used += new - old;
  return true;
}

static void arena_free(arena *a) {
  chunk *c = a->head;
  while (c) {
    chunk *next = c->next;
    free(c);
    c = next;
  }
  a->head = NULL;
}

/* ---- the handle and the machine that fills it ------------------------------ */

struct pt_pickle {
  arena mem;
  pt_pyobj *root;
};

/* The memo.  Python numbers its entries 0, 1, 2, ... so they live in a dense
 * array indexed by key.  A pickle may also PUT at any index (0xffffffff takes
 * six bytes), so a key is only let grow the dense array when it is within
 * twice the entry count plus DENSE_SLACK; other keys go to a small hash table
 * (linear probing, Fibonacci hash).  Memory thus stays proportional to the
 * number of entries, and a key lives in one of the two places, never both. */
#define DENSE_SLACK ((size_t)1024)

typedef struct memo_slot {
  uint64_t key;
  pt_pyobj *val; /* NULL: slot empty (values are never NULL) */
} memo_slot;

/* Ints in [SMALL_INT_MIN, SMALL_INT_MAX) are shared, as CPython shares them:
 * snapshots hold millions of stream numbers, flags and line numbers. */
#define SMALL_INT_MIN (-8)
#define SMALL_INT_MAX 256

/* One parse.  Marks are kept apart from the value stack, as CPython's
 * _pickle.c does: marks[] holds stack heights, and the top mark is a fence
 * that ordinary opcodes may not pop through. */
typedef struct unpickler {
  const uint8_t *buf;
  size_t len, pos;
  size_t op;        /* offset of the opcode being run, for messages */
  const char *name; /* for messages */
  pt_err *err;
  pt_pickle *p;
  pt_pickle_limits lim;
  pt_pyobj **stack;
  size_t sp, stack_cap;
  size_t *marks;
  size_t nmarks, marks_cap;
  size_t memo_n;     /* entries in dense and sparse together */
  pt_pyobj **dense;  /* dense[k]: entry k, or NULL */
  size_t dense_cap;
  memo_slot *sparse; /* keys >= dense_cap */
  size_t sparse_cap, sparse_n; /* sparse_cap is 0 or a power of two */
  unsigned sparse_bits;        /* log2(sparse_cap) */
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

static const char *opname(unpickler *u) { return opnames[u->buf[u->op]]; }

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

static pt_pyobj *new_obj(unpickler *u, pt_pyt t) {
  pt_pyobj *o = arena_alloc(&u->p->mem, sizeof *o);
  if (o) {
    memset(o, 0, sizeof *o);
    o->type = t;
  }
  return o;
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
  if (cached) *cached = o;
  return push(u, o);
}

static int push_str(unpickler *u, pt_pyt t, const void *s, size_t n) {
  pt_pyobj *o;
  int rc = push_new(u, t, &o);
  if (!rc) {
    o->u.s.ptr = s;
    o->u.s.len = n;
  }
  return rc;
}

/* Make room for add more entries (per pointers each) in the arena array
 * *items that holds len of *cap. */
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
  if (arena_extend(&u->p->mem, *items, *cap * el, n * el)) {
    *cap = n;
    return 0;
  }
  pt_pyobj **q = arena_alloc(&u->p->mem, n * el);
  if (!q) return nomem(u);
  if (len) memcpy(q, *items, len * el);
  *items = q;
  *cap = n;
  return 0;
}

/* A new list/tuple/set holding stack[from..sp), which is then popped. */
static int build_seq(unpickler *u, pt_pyt t, size_t from) {
  size_t n = u->sp - from;
  pt_pyobj *o = new_obj(u, t);
  if (!o) return nomem(u);
  if (n) {
    o->u.seq.items = arena_alloc(&u->p->mem, n * sizeof(pt_pyobj *));
    if (!o->u.seq.items) return nomem(u);
    memcpy(o->u.seq.items, u->stack + from, n * sizeof(pt_pyobj *));
  }
  o->u.seq.len = o->u.seq.cap = n;
  u->sp = from;
  return push(u, o);
}

/* ---- memo ------------------------------------------------------------------ */

/* The slot of key in a table of cap = 1 << bits slots, or the empty slot
 * where it would go (the load stays at most 1/2, so one exists). */
static memo_slot *sparse_find(memo_slot *t, size_t cap, unsigned bits, uint64_t key) {
  size_t mask = cap - 1;
  for (size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> (64 - bits));; i = (i + 1) & mask)
    if (!t[i].val || t[i].key == key) return &t[i];
}

/* Rebuild the sparse table with ncap slots, moving keys below dense_cap
 * into the dense array. */
static int sparse_rebuild(unpickler *u, size_t ncap) {
  if (ncap > SIZE_MAX / sizeof(memo_slot)) return nomem(u);
  memo_slot *nt = calloc(ncap, sizeof *nt);
  if (!nt) return nomem(u);
  unsigned bits = 0;
  while (((size_t)1 << bits) < ncap) bits++;
  size_t n = 0;
  for (size_t i = 0; i < u->sparse_cap; i++) {
    memo_slot sl = u->sparse[i];
    if (!sl.val) continue;
    if (sl.key < u->dense_cap) {
      u->dense[sl.key] = sl.val;
    } else {
      *sparse_find(nt, ncap, bits, sl.key) = sl;
      n++;
    }
  }
  free(u->sparse);
  u->sparse = nt;
  u->sparse_cap = ncap;
  u->sparse_bits = bits;
  u->sparse_n = n;
  return 0;
}

/* The slot that holds key: a dense entry or a sparse value, NULL if absent. */
static pt_pyobj **memo_slot_of(unpickler *u, uint64_t key) {
  if (key < u->dense_cap) return &u->dense[key];
  if (!u->sparse_n) return NULL;
  memo_slot *sl = sparse_find(u->sparse, u->sparse_cap, u->sparse_bits, key);
  return sl->val ? &sl->val : NULL;
}

static int memo_put(unpickler *u, uint64_t key) {
  int rc = avail(u, 1);
  if (rc) return rc;
  pt_pyobj *v = u->stack[u->sp - 1], **at = memo_slot_of(u, key);
  if (at && *at) { /* Python lets a PUT overwrite */
    *at = v;
    return 0;
  }
  if (u->memo_n >= u->lim.max_memo)
    return fail(u, PT_ELIMIT, u->op, "memo larger than the limit of %zu entries",
                u->lim.max_memo);
  if (key >= u->dense_cap && key < 2 * (uint64_t)u->memo_n + DENSE_SLACK) {
    size_t ncap = u->dense_cap ? u->dense_cap : DENSE_SLACK;
    while (ncap <= key) ncap *= 2; /* key < 2 * memo_n + 1024: no overflow */
    size_t ocap = u->dense_cap;
    pt_pyobj **d = grow(u->dense, &u->dense_cap, ncap, sizeof *d);
    if (!d) return nomem(u);
    memset(d + ocap, 0, (u->dense_cap - ocap) * sizeof *d);
    u->dense = d;
    if (u->sparse_n && (rc = sparse_rebuild(u, u->sparse_cap))) return rc;
  }
  if (key < u->dense_cap) {
    u->dense[key] = v;
  } else {
    if (u->sparse_n + 1 > u->sparse_cap / 2 && /* keep the load at most 1/2 */
        (rc = sparse_rebuild(u, u->sparse_cap ? u->sparse_cap * 2 : 64)))
      return rc;
    memo_slot *sl = sparse_find(u->sparse, u->sparse_cap, u->sparse_bits, key);
    sl->key = key;
    sl->val = v;
    u->sparse_n++;
  }
  u->memo_n++;
  return 0;
}

static int memo_get(unpickler *u, uint64_t key) {
  pt_pyobj **at = memo_slot_of(u, key);
  if (!at || !*at)
    return fail(u, PT_EFORMAT, u->op, "%s: memo key %llu not found", opname(u),
                (unsigned long long)key);
  return push(u, *at);
}

/* ---- reading arguments ------------------------------------------------------ */

static int need(unpickler *u, uint64_t n) {
  size_t left = u->len - u->pos;
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
 * consumed and not included. */
static int arg_line(unpickler *u, const char **s /* OUT */, size_t *n /* OUT */) {
  const uint8_t *start = u->buf + u->pos;
  const uint8_t *nl = memchr(start, '\n', u->len - u->pos);
  if (!nl)
    return fail(u, PT_EFORMAT, u->op, "truncated: %s argument has no terminating newline",
                opname(u));
  *s = (const char *)start;
  *n = (size_t)(nl - start);
  u->pos += *n + 1;
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

/* STRING: a quoted Python bytes literal body with backslash escapes, decoded
 * the way CPython's PyBytes_DecodeEscape does.  Zero-copy when there is no
 * backslash. */
static int op_string(unpickler *u) {
  const char *s;
  size_t n;
  int rc = arg_line(u, &s, &n);
  if (rc) return rc;
  if (n < 2 || s[0] != s[n - 1] || (s[0] != '\'' && s[0] != '"'))
    return fail(u, PT_EFORMAT, u->op, "STRING argument must be quoted");
  s++;
  n -= 2;
  if (!memchr(s, '\\', n)) return push_str(u, PT_PY_STR, s, n);
  char *out = arena_alloc(&u->p->mem, n), *o = out;
  if (!out) return nomem(u);
  const char *end = s + n;
  while (s < end) {
    char c = *s++;
    if (c != '\\') {
      *o++ = c;
      continue;
    }
    if (s == end) return fail(u, PT_EFORMAT, u->op, "STRING: trailing backslash");
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
      if (h < 0 || l < 0) return fail(u, PT_EFORMAT, u->op, "STRING: invalid \\x escape");
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
  return push_str(u, PT_PY_STR, out, (size_t)(o - out));
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
 * Decoded to UTF-8 in the arena (at most 2 output bytes per input byte);
 * zero-copy when the text is plain ASCII. */
static int op_unicode(unpickler *u) {
  const char *s;
  size_t n;
  int rc = arg_line(u, &s, &n);
  if (rc) return rc;
  bool plain = true;
  for (size_t i = 0; i < n && plain; i++)
    plain = s[i] != '\\' && !(s[i] & 0x80);
  if (plain) return push_str(u, PT_PY_STR, s, n);
  if (n > SIZE_MAX / 4) return nomem(u);
  char *out = arena_alloc(&u->p->mem, 2 * n), *o = out;
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
      return fail(u, PT_EFORMAT, u->op, "UNICODE: truncated \\%c escape", digits == 4 ? 'u' : 'U');
    uint32_t cp = 0;
    for (int i = 0; i < digits; i++) {
      int h = hexval((unsigned char)*s++);
      if (h < 0)
        return fail(u, PT_EFORMAT, u->op, "UNICODE: bad hex digit in \\%c escape",
                    digits == 4 ? 'u' : 'U');
      cp = cp << 4 | (uint32_t)h;
    }
    if (cp > 0x10ffff)
      return fail(u, PT_EFORMAT, u->op, "UNICODE: code point 0x%lx out of range",
                  (unsigned long)cp);
    o = put_utf8(o, cp);
  }
  return push_str(u, PT_PY_STR, out, (size_t)(o - out));
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
 * (unsigned, or signed when sgn), then the bytes, referenced in place. */
static int op_counted(unpickler *u, size_t lenbytes, bool sgn, pt_pyt t) {
  uint64_t n;
  int rc = arg_u(u, lenbytes, &n);
  if (rc) return rc;
  if (sgn && (n & 0x80000000u))
    return fail(u, PT_EFORMAT, u->op, "%s: negative length", opname(u));
  if ((rc = need(u, n))) return rc;
  const uint8_t *p = u->buf + u->pos;
  u->pos += (size_t)n;
  return push_str(u, t, p, (size_t)n);
}

static int op_long(unpickler *u, size_t lenbytes) {
  uint64_t n = 0;
  int64_t v = 0;
  int rc = arg_u(u, lenbytes, &n);
  if (rc) return rc;
  if (lenbytes == 4 && (n & 0x80000000u))
    return fail(u, PT_EFORMAT, u->op, "LONG4: negative length");
  if ((rc = need(u, n))) return rc;
  const uint8_t *p = u->buf + u->pos;
  u->pos += (size_t)n;
  if ((rc = long_bytes(u, p, (size_t)n, &v))) return rc;
  return push_int(u, v);
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
  size_t n = u->sp - m;
  if (c->type != want)
    return fail(u, PT_EFORMAT, u->op, "%s into a %s, not a %s", opname(u), type_name(c->type),
                type_name(want));
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
  if (n) {
    o->u.dict.kv = arena_alloc(&u->p->mem, n * sizeof(pt_pyobj *));
    if (!o->u.dict.kv) return nomem(u);
    memcpy(o->u.dict.kv, u->stack + m, n * sizeof(pt_pyobj *));
  }
  o->u.dict.len = o->u.dict.cap = n / 2;
  u->sp = m;
  return push(u, o);
}

/* Run one opcode; *done is set by STOP. */
static int step(unpickler *u, bool *done) {
  uint8_t c = u->buf[u->pos++];
  uint64_t x = 0;
  int64_t v = 0;
  int rc = 0;
  pt_pyobj *o;
  switch (c) {
  case OP_PROTO:
    if ((rc = arg_u(u, 1, &x))) return rc;
    if (x > 5) return fail(u, PT_EFORMAT, u->op, "unsupported pickle protocol %u", (unsigned)x);
    return 0;
  case OP_FRAME: /* frames only group opcodes; check the length and go on */
    if ((rc = arg_u(u, 8, &x))) return rc;
    if (x > u->len - u->pos)
      return fail(u, PT_EFORMAT, u->op, "truncated: FRAME of %llu bytes, %zu left",
                  (unsigned long long)x, u->len - u->pos);
    return 0;
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
  case OP_DUP:
    if ((rc = avail(u, 1))) return rc;
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
  case OP_MEMOIZE: return memo_put(u, u->memo_n);
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

/* ---- public API -------------------------------------------------------------- */

int pt_pickle_parse(const uint8_t *buf, size_t len, const char *name,
                    const pt_pickle_limits *lim, pt_err *err, pt_pickle **out /* OUT */) {
  if (!name) name = "pickle";
  if (!out) return pt_err_set(err, PT_EUSAGE, "%s: no place for the result", name);
  *out = NULL;
  if (!buf && len) return pt_err_set(err, PT_EUSAGE, "%s: no input buffer", name);
  unpickler u;
  memset(&u, 0, sizeof u);
  u.buf = buf;
  u.len = len;
  u.name = name;
  u.err = err;
  if (lim) u.lim = *lim;
  if (!u.lim.max_stack) u.lim.max_stack = DEFAULT_MAX_STACK;
  if (!u.lim.max_marks) u.lim.max_marks = DEFAULT_MAX_MARKS;
  if (!u.lim.max_memo) u.lim.max_memo = DEFAULT_MAX_MEMO;
  u.p = calloc(1, sizeof *u.p);
  if (!u.p) return pt_err_set(err, PT_ENOMEM, "%s: out of memory", name);
  u.p->mem.next_size = ARENA_MIN_CHUNK;

  int rc = 0;
  if (!(u.none = new_obj(&u, PT_PY_NONE)) || !(u.yes = new_obj(&u, PT_PY_BOOL)) ||
      !(u.no = new_obj(&u, PT_PY_BOOL))) {
    rc = nomem(&u);
  } else {
    u.yes->u.i = 1;
    bool done = false;
    while (!rc && !done) {
      if (u.pos >= u.len) {
        rc = fail(&u, PT_EFORMAT, u.len, "truncated: input ends without STOP");
        break;
      }
      u.op = u.pos;
      rc = step(&u, &done);
    }
  }
  free(u.stack);
  free(u.marks);
  free(u.dense);
  free(u.sparse);
  if (rc) {
    pt_pickle_free(u.p);
    return rc;
  }
  *out = u.p;
  return 0;
}

const pt_pyobj *pt_pickle_root(const pt_pickle *p) { return p ? p->root : NULL; }

void pt_pickle_free(pt_pickle *p) {
  if (!p) return;
  arena_free(&p->mem);
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
  if (!seq || (seq->type != PT_PY_LIST && seq->type != PT_PY_TUPLE)) return NULL;
  return i < seq->u.seq.len ? seq->u.seq.items[i] : NULL;
}

size_t pt_py_len(const pt_pyobj *o) {
  if (!o) return 0;
  switch (o->type) {
  case PT_PY_LIST:
  case PT_PY_TUPLE:
  case PT_PY_SET: return o->u.seq.len;
  case PT_PY_DICT: return o->u.dict.len;
  default: return 0;
  }
}

int pt_py_is_str(const pt_pyobj *o, const char *s) {
  if (!o || !s || o->type != PT_PY_STR) return 0;
  size_t n = strlen(s);
  return o->u.s.len == n && (n == 0 || memcmp(o->u.s.ptr, s, n) == 0);
}
