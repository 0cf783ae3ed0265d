/* jsonread.c — the strict, bounded JSON reader (see jsonread.h). */
#include "jsonread.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * A value.  While its parent is open, a value hangs from the parent's list
 * through next; when the parent closes, the list becomes the parent's array
 * kids (so pt_jr_index is constant time).  An object's members carry their
 * keys themselves.
 */
struct pt_jr_val {
  unsigned char type;
  int line, col;
  const char *key; /* a member's key, else NULL */
  size_t klen;
  int kline, kcol; /* where the key is */
  pt_jr_val *next;
  union {
    int b;
    struct {
      double v;
      const char *text;
    } num;
    struct {
      const char *s;
      size_t len;
    } str;
    struct {
      pt_jr_val **v;
      size_t n;
    } kids;
  } u;
};

/* The arena: blocks from the caller's allocator, never grown, freed together. */
typedef struct chunk {
  struct chunk *next;
  size_t used, cap;
  max_align_t data[];
} chunk;

#define CHUNK_BYTES 16384u

struct pt_jr_doc {
  pt_jr_allocf alloc;
  void *ud;
  chunk *chunks;
  pt_jr_val *root;
};

static void *std_alloc(void *ud, void *ptr, size_t nsize) {
  (void)ud;
  if (nsize == 0) {
    free(ptr);
    return NULL;
  }
  return malloc(nsize);
}

static void *arena(pt_jr_doc *d, size_t n) {
  n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
  chunk *c = d->chunks;
  if (!c || c->cap - c->used < n) {
    size_t cap = n > CHUNK_BYTES ? n : CHUNK_BYTES; /* n is bounded by the input limit: no overflow */
    c = d->alloc(d->ud, NULL, sizeof *c + cap);
    if (!c) return NULL;
    c->used = 0;
    c->cap = cap;
    c->next = d->chunks;
    d->chunks = c;
  }
  void *p = (char *)c->data + c->used;
  c->used += n;
  return p;
}

void pt_jr_free(pt_jr_doc *doc) {
  if (!doc) return;
  for (chunk *c = doc->chunks, *next; c; c = next) {
    next = c->next;
    doc->alloc(doc->ud, c, 0);
  }
  doc->alloc(doc->ud, doc, 0);
}

/* ---- the parser ------------------------------------------------------------- */

typedef struct parser {
  const unsigned char *p, *end;
  const unsigned char *line_start; /* first byte of the current line */
  int line, depth, max_depth;
  pt_jr_doc *doc;
  pt_err *err;
} parser;

static int col_of(const parser *P, const unsigned char *at) { return (int)(at - P->line_start) + 1; }

__attribute__((format(printf, 4, 5))) static int fail(parser *P, const unsigned char *at, int code, const char *fmt, ...) {
  if (!P->err) return code;
  int n = snprintf(P->err->msg, sizeof P->err->msg, "line %d, column %d: ", P->line, col_of(P, at));
  if (n < 0 || (size_t)n >= sizeof P->err->msg) return code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(P->err->msg + n, sizeof P->err->msg - (size_t)n, fmt, ap);
  va_end(ap);
  return code;
}

static int nomem(parser *P) { return fail(P, P->p, PT_ENOMEM, "out of memory"); }

/* The byte at `at`, as a message shows it: 'x', or byte 0xNN. */
static const char *shown_byte(const parser *P, const unsigned char *at, char buf[16]) {
  if (at >= P->end) return "the end of the input";
  if (*at >= 0x20 && *at < 0x7f) snprintf(buf, 16, "'%c'", *at);
  else snprintf(buf, 16, "byte 0x%02x", *at);
  return buf;
}

static int unexpected(parser *P, const char *expected) {
  char b[16];
  if (P->p >= P->end) return fail(P, P->p, PT_EFORMAT, "unexpected end of input (expected %s)", expected);
  return fail(P, P->p, PT_EFORMAT, "unexpected %s (expected %s)", shown_byte(P, P->p, b), expected);
}

static void skip_ws(parser *P) {
  while (P->p < P->end) {
    unsigned char c = *P->p;
    if (c == '\n') {
      P->p++;
      P->line++;
      P->line_start = P->p;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      P->p++;
    } else {
      break;
    }
  }
}

static pt_jr_val *new_val(parser *P, int type, const unsigned char *at) {
  pt_jr_val *v = arena(P->doc, sizeof *v);
  if (!v) return NULL;
  memset(v, 0, sizeof *v);
  v->type = (unsigned char)type;
  v->line = P->line;
  v->col = col_of(P, at);
  return v;
}

/* Length of the UTF-8 sequence at s (at most n bytes there), 0 when it is not valid UTF-8. */
static int utf8_len(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  int len = c < 0x80 ? 1 : c >= 0xf5 ? 0 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
  if (len == 0 || (size_t)len > n) return 0;
  for (int i = 1; i < len; i++)
    if ((s[i] & 0xc0) != 0x80) return 0;
  if (len == 3) {
    unsigned cp = (c & 0x0f) << 12 | (s[1] & 0x3fu) << 6;
    if (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff)) return 0; /* overlong; a surrogate */
  } else if (len == 4) {
    unsigned cp = (c & 0x07) << 18 | (s[1] & 0x3fu) << 12;
    if (cp < 0x10000 || cp > 0x10ffff) return 0;
  }
  return len;
}

static size_t put_utf8(char *o, unsigned cp) {
  if (cp < 0x80) {
    o[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (char)(0xc0 | cp >> 6);
    o[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xe0 | cp >> 12);
    o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
    o[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
  }
  o[0] = (char)(0xf0 | cp >> 18);
  o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
  o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
  o[3] = (char)(0x80 | (cp & 0x3f));
  return 4;
}

/* Four hex digits at P->p + 2 (P->p at the backslash of \uXXXX); -1 when they are not. */
static long hex4(const parser *P) {
  if (P->end - P->p < 6) return -1;
  long v = 0;
  for (int i = 2; i < 6; i++) {
    unsigned c = P->p[i];
    int d = c >= '0' && c <= '9' ? (int)c - '0' : c >= 'a' && c <= 'f' ? (int)c - 'a' + 10 : c >= 'A' && c <= 'F' ? (int)c - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

/* A string at P->p (its opening quote), decoded into the arena. */
static int parse_string(parser *P, const char **out, size_t *outlen) {
  const unsigned char *open = P->p;
  /* its end first: decoding never lengthens a string, so its raw length is enough room */
  const unsigned char *q = open + 1;
  while (q < P->end && *q != '"') q += *q == '\\' && P->end - q > 1 ? 2 : 1;
  if (q >= P->end) {
    P->p = P->end;
    return fail(P, P->end, PT_EFORMAT, "unexpected end of input in the string that starts at column %d", col_of(P, open));
  }
  char *buf = arena(P->doc, (size_t)(q - open));
  if (!buf) return nomem(P);
  size_t n = 0;
  P->p = open + 1;
  while (*P->p != '"') {
    unsigned c = *P->p;
    if (c < 0x20) return fail(P, P->p, PT_EFORMAT, "control character 0x%02x in a string (write it as \\u%04x)", c, c);
    if (c != '\\') {
      int len = utf8_len(P->p, (size_t)(P->end - P->p));
      if (!len) return fail(P, P->p, PT_EFORMAT, "byte 0x%02x in a string is not valid UTF-8", c);
      memcpy(buf + n, P->p, (size_t)len);
      n += (size_t)len;
      P->p += len;
      continue;
    }
    unsigned e = P->p[1];
    const char *simple = strchr("\"\\/bfnrt", (int)e);
    if (e && simple) {
      buf[n++] = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
      P->p += 2;
      continue;
    }
    if (e != 'u') {
      if (e >= 0x20 && e < 0x7f) return fail(P, P->p, PT_EFORMAT, "invalid escape \\%c in a string", (int)e);
      return fail(P, P->p, PT_EFORMAT, "invalid escape: byte 0x%02x after a backslash", e);
    }
    long cp = hex4(P);
    if (cp < 0) return fail(P, P->p, PT_EFORMAT, "\\u needs four hex digits");
    if (cp >= 0xdc00 && cp <= 0xdfff) return fail(P, P->p, PT_EFORMAT, "\\u%04lx is a low surrogate without a high one before it", cp);
    if (cp >= 0xd800 && cp <= 0xdbff) {
      const unsigned char *hi = P->p;
      P->p += 6;
      long lo = P->p + 1 < P->end && P->p[0] == '\\' && P->p[1] == 'u' ? hex4(P) : -1;
      if (lo < 0xdc00 || lo > 0xdfff) {
        P->p = hi;
        return fail(P, hi, PT_EFORMAT, "\\u%04lx is a high surrogate without a low one after it", cp);
      }
      cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    }
    n += put_utf8(buf + n, (unsigned)cp);
    P->p += 6;
  }
  buf[n] = 0;
  P->p++;
  *out = buf;
  *outlen = n;
  return 0;
}

static int digits(parser *P) {
  if (P->p >= P->end || *P->p < '0' || *P->p > '9') return unexpected(P, "a digit");
  while (P->p < P->end && *P->p >= '0' && *P->p <= '9') P->p++;
  return 0;
}

/* A number: JSON's grammar checked here, the value by strtod, which must take the whole token. */
static int parse_number(parser *P, pt_jr_val *v) {
  const unsigned char *start = P->p;
  int rc = 0;
  if (*P->p == '-') P->p++;
  if (P->p < P->end && *P->p == '0') {
    P->p++;
    if (P->p < P->end && *P->p >= '0' && *P->p <= '9') return fail(P, start, PT_EFORMAT, "a number may not start with 0 (leading zero)");
  } else if ((rc = digits(P)) < 0) {
    return rc;
  }
  if (P->p < P->end && *P->p == '.') {
    P->p++;
    if ((rc = digits(P)) < 0) return rc;
  }
  if (P->p < P->end && (*P->p == 'e' || *P->p == 'E')) {
    P->p++;
    if (P->p < P->end && (*P->p == '+' || *P->p == '-')) P->p++;
    if ((rc = digits(P)) < 0) return rc;
  }
  size_t len = (size_t)(P->p - start);
  char *text = arena(P->doc, len + 1);
  if (!text) return nomem(P);
  memcpy(text, start, len);
  text[len] = 0;
  char *endp;
  errno = 0;
  double d = strtod(text, &endp);
  if (endp != text + len) return fail(P, start, PT_EFORMAT, "number '%.40s' not read whole", text);
  if (isinf(d) || isnan(d)) return fail(P, start, PT_EFORMAT, "number '%.40s%s' is out of range", text, len > 40 ? "..." : "");
  v->u.num.v = d; /* an underflow (ERANGE, 0 or subnormal) is the nearest double: kept */
  v->u.num.text = text;
  return 0;
}

static int literal(parser *P, const char *word) {
  size_t n = strlen(word), have = (size_t)(P->end - P->p);
  if (memcmp(P->p, word, have < n ? have : n) != 0) return fail(P, P->p, PT_EFORMAT, "invalid literal (expected %s)", word);
  if (have < n) {
    const unsigned char *at = P->p;
    P->p = P->end;
    return fail(P, at, PT_EFORMAT, "unexpected end of input in '%s'", word);
  }
  P->p += n;
  return 0;
}

/* Members of an object sorted by key, then by position: equal keys side by side, in the text's order. */
static int by_key(const void *a, const void *b) {
  const pt_jr_val *x = *(pt_jr_val *const *)a, *y = *(pt_jr_val *const *)b;
  int c = memcmp(x->key, y->key, x->klen < y->klen ? x->klen : y->klen);
  if (c) return c;
  if (x->klen != y->klen) return x->klen < y->klen ? -1 : 1;
  if (x->kline != y->kline) return x->kline < y->kline ? -1 : 1;
  return x->kcol < y->kcol ? -1 : x->kcol > y->kcol;
}

static int before(const pt_jr_val *x, const pt_jr_val *y) { return x->kline < y->kline || (x->kline == y->kline && x->kcol < y->kcol); }

/* A key for a message: at most 40 bytes, anything but printable ASCII as '?'. */
static const char *shown_key(const pt_jr_val *m, char buf[48]) {
  size_t n = m->klen < 40 ? m->klen : 40, i;
  for (i = 0; i < n; i++) buf[i] = m->key[i] >= 0x20 && m->key[i] < 0x7f ? m->key[i] : '?';
  if (m->klen > 40) memcpy(buf + i, "...", 3), i += 3;
  buf[i] = 0;
  return buf;
}

/* The parent's list becomes its array; an object's keys must differ. */
static int close_container(parser *P, pt_jr_val *v, pt_jr_val *head, size_t n) {
  v->u.kids.n = n;
  if (!n) return 0;
  pt_jr_val **kids = arena(P->doc, n * sizeof *kids);
  if (!kids) return nomem(P);
  for (size_t i = 0; i < n; i++, head = head->next) kids[i] = head;
  v->u.kids.v = kids;
  if (v->type != PT_JR_OBJECT || n < 2) return 0;
  pt_jr_val **sorted = arena(P->doc, n * sizeof *sorted);
  if (!sorted) return nomem(P);
  memcpy(sorted, kids, n * sizeof *kids);
  qsort(sorted, n, sizeof *sorted, by_key);
  const pt_jr_val *dup = NULL, *first = NULL;
  for (size_t i = 0; i + 1 < n; i++)
    if (sorted[i]->klen == sorted[i + 1]->klen && !memcmp(sorted[i]->key, sorted[i + 1]->key, sorted[i]->klen) &&
        (!dup || before(sorted[i + 1], dup))) {
      dup = sorted[i + 1];
      first = sorted[i];
    }
  if (!dup) return 0;
  char b[48];
  return pt_err_set(P->err, PT_EFORMAT, "line %d, column %d: duplicate key \"%s\" (first at line %d, column %d)", dup->kline, dup->kcol,
                    shown_key(dup, b), first->kline, first->kcol);
}

static int parse_value(parser *P, pt_jr_val **out);

static int parse_container(parser *P, pt_jr_val *v) {
  int obj = v->type == PT_JR_OBJECT;
  char close = obj ? '}' : ']';
  if (++P->depth > P->max_depth) return fail(P, P->p, PT_ELIMIT, "nesting deeper than %d", P->max_depth);
  P->p++;
  skip_ws(P);
  pt_jr_val *head = NULL, *tail = NULL;
  size_t n = 0;
  int rc;
  if (P->p < P->end && *P->p == close) {
    P->p++;
    P->depth--;
    return close_container(P, v, NULL, 0);
  }
  for (;;) {
    const char *key = NULL;
    size_t klen = 0;
    int kline = P->line, kcol = col_of(P, P->p);
    if (obj) {
      if (P->p >= P->end || *P->p != '"') return unexpected(P, n ? "a string key after ','" : "a string key or '}'");
      if ((rc = parse_string(P, &key, &klen)) < 0) return rc;
      skip_ws(P);
      if (P->p >= P->end || *P->p != ':') return unexpected(P, "':' after the key");
      P->p++;
      skip_ws(P);
    }
    pt_jr_val *kid;
    if (!obj && n && P->p < P->end && *P->p == ']') return fail(P, P->p, PT_EFORMAT, "']' after ',' (a trailing comma)");
    if ((rc = parse_value(P, &kid)) < 0) return rc;
    if (obj) {
      kid->key = key;
      kid->klen = klen;
      kid->kline = kline;
      kid->kcol = kcol;
    }
    if (tail) tail->next = kid;
    else head = kid;
    tail = kid;
    n++;
    skip_ws(P);
    if (P->p < P->end && *P->p == ',') {
      P->p++;
      skip_ws(P);
      if (obj && P->p < P->end && *P->p == '}') return fail(P, P->p, PT_EFORMAT, "'}' after ',' (a trailing comma)");
      continue;
    }
    if (P->p < P->end && *P->p == close) break;
    return unexpected(P, obj ? "',' or '}'" : "',' or ']'");
  }
  P->p++;
  P->depth--;
  return close_container(P, v, head, n);
}

static int parse_value(parser *P, pt_jr_val **out) {
  if (P->p >= P->end) return unexpected(P, "a value");
  unsigned c = *P->p;
  int type = c == '{' ? PT_JR_OBJECT : c == '[' ? PT_JR_ARRAY : c == '"' ? PT_JR_STRING
           : c == '-' || (c >= '0' && c <= '9') ? PT_JR_NUMBER : c == 't' || c == 'f' ? PT_JR_BOOL : c == 'n' ? PT_JR_NULL : -1;
  if (type < 0) return unexpected(P, "a value");
  pt_jr_val *v = new_val(P, type, P->p);
  if (!v) return nomem(P);
  int rc;
  switch (type) {
  case PT_JR_OBJECT:
  case PT_JR_ARRAY: rc = parse_container(P, v); break;
  case PT_JR_STRING: rc = parse_string(P, &v->u.str.s, &v->u.str.len); break;
  case PT_JR_NUMBER: rc = parse_number(P, v); break;
  case PT_JR_BOOL:
    v->u.b = c == 't';
    rc = literal(P, c == 't' ? "true" : "false");
    break;
  default: rc = literal(P, "null"); break;
  }
  if (rc < 0) return rc;
  *out = v;
  return 0;
}

int pt_jr_parse(const char *text, size_t len, const pt_jr_opts *opts, pt_jr_doc **doc, pt_err *err) {
  *doc = NULL;
  pt_jr_allocf alloc = opts && opts->alloc ? opts->alloc : std_alloc;
  void *ud = opts ? opts->ud : NULL;
  size_t max_bytes = opts && opts->max_bytes ? opts->max_bytes : PT_JR_MAX_BYTES;
  int max_depth = opts && opts->max_depth > 0 ? opts->max_depth : PT_JR_MAX_DEPTH;
  if (len > max_bytes)
    return pt_err_set(err, PT_ELIMIT, "line 1, column 1: the input is %zu bytes, more than the limit of %zu", len, max_bytes);
  if (!text && len) return pt_err_set(err, PT_EUSAGE, "line 1, column 1: no text");
  pt_jr_doc *d = alloc(ud, NULL, sizeof *d);
  if (!d) return pt_err_set(err, PT_ENOMEM, "line 1, column 1: out of memory");
  d->alloc = alloc;
  d->ud = ud;
  d->chunks = NULL;
  d->root = NULL;
  static const unsigned char empty[1];
  const unsigned char *s = text ? (const unsigned char *)text : empty;
  parser P = {s, s + len, s, 1, 0, max_depth, d, err};
  skip_ws(&P);
  int rc = parse_value(&P, &d->root);
  if (rc == 0) {
    skip_ws(&P);
    if (P.p < P.end) {
      char b[16];
      rc = fail(&P, P.p, PT_EFORMAT, "unexpected %s after the value", shown_byte(&P, P.p, b));
    }
  }
  if (rc < 0) {
    pt_jr_free(d);
    return rc;
  }
  *doc = d;
  return 0;
}

/* ---- queries -------------------------------------------------------------------- */

const pt_jr_val *pt_jr_root(const pt_jr_doc *doc) { return doc ? doc->root : NULL; }

enum pt_jr_type pt_jr_type(const pt_jr_val *v) { return v ? (enum pt_jr_type)v->type : PT_JR_NULL; }

const char *pt_jr_type_name(enum pt_jr_type t) {
  static const char *const names[] = {"null", "a boolean", "a number", "a string", "an array", "an object"};
  return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

void pt_jr_pos(const pt_jr_val *v, int *line, int *col) {
  *line = v ? v->line : 0;
  *col = v ? v->col : 0;
}

size_t pt_jr_len(const pt_jr_val *v) { return v && (v->type == PT_JR_ARRAY || v->type == PT_JR_OBJECT) ? v->u.kids.n : 0; }

const pt_jr_val *pt_jr_index(const pt_jr_val *v, size_t i) { return i < pt_jr_len(v) ? v->u.kids.v[i] : NULL; }

const pt_jr_val *pt_jr_get(const pt_jr_val *obj, const char *key) {
  if (!obj || obj->type != PT_JR_OBJECT || !key) return NULL;
  size_t n = strlen(key);
  for (size_t i = 0; i < obj->u.kids.n; i++) {
    const pt_jr_val *m = obj->u.kids.v[i];
    if (m->klen == n && !memcmp(m->key, key, n)) return m;
  }
  return NULL;
}

const char *pt_jr_key(const pt_jr_val *m, size_t *len) {
  if (len) *len = m && m->key ? m->klen : 0;
  return m ? m->key : NULL;
}

const char *pt_jr_string(const pt_jr_val *v, size_t *len) {
  int ok = v && v->type == PT_JR_STRING;
  if (len) *len = ok ? v->u.str.len : 0;
  return ok ? v->u.str.s : NULL;
}

double pt_jr_number(const pt_jr_val *v) { return v && v->type == PT_JR_NUMBER ? v->u.num.v : NAN; }

const char *pt_jr_number_text(const pt_jr_val *v) { return v && v->type == PT_JR_NUMBER ? v->u.num.text : NULL; }

int pt_jr_bool(const pt_jr_val *v) { return v && v->type == PT_JR_BOOL ? v->u.b : -1; }

int pt_jr_err_at(const pt_jr_val *v, pt_err *err, int code, const char *fmt, ...) {
  if (!err) return code;
  int n = snprintf(err->msg, sizeof err->msg, "line %d, column %d: ", v ? v->line : 0, v ? v->col : 0);
  if (n < 0 || (size_t)n >= sizeof err->msg) return code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->msg + n, sizeof err->msg - (size_t)n, fmt, ap);
  va_end(ap);
  return code;
}

int pt_jr_expect(const pt_jr_val *v, enum pt_jr_type t, const char *what, pt_err *err) {
  if (!v) return pt_err_set(err, PT_EFORMAT, "%s is missing", what);
  if (v->type == t) return 0;
  return pt_jr_err_at(v, err, PT_EFORMAT, "%s must be %s, not %s", what, pt_jr_type_name(t), pt_jr_type_name((enum pt_jr_type)v->type));
}
