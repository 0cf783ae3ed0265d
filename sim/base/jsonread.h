/*
 * jsonread.h — a small, strict, bounded JSON reader (RFC 8259) for files a
 * program is configured by, such as the one `pagetune export --format json`
 * writes and pagetune's allocator library reads.  libc only.
 *
 * The text is parsed whole into a tree that is queried by key and index.  A
 * tree, not a stream of callbacks: a configuration is small, its keys may
 * come in any order, and a reader that checks it wants to look a key up,
 * check its type and, when the value is wrong, name the value's own line and
 * column; every value keeps its position for that.  The tree lives in one
 * arena taken from the caller's allocator (or malloc), released at once by
 * pt_jr_free.
 *
 * Strict: one value and whitespace, nothing else; no comments, trailing
 * commas, single quotes, NaN or leading zeros; strings are valid UTF-8
 * (overlong forms, surrogates and code points past U+10FFFF refused) with no
 * raw control characters; \uXXXX escapes decode to UTF-8, surrogate pairs
 * combined, lone surrogates refused; a number must be a JSON number whole
 * and finite as a double (1e400 is refused; 1e-400 reads as 0); a key may
 * appear once per object.  Bounded: the input's size and the nesting depth
 * are limited, so the memory a parse takes is a fixed multiple of the input
 * (at most about 80 bytes per value) and the recursion is shallow.
 *
 * Errors: PT_EFORMAT for malformed text, PT_ELIMIT for a limit passed,
 * PT_ENOMEM when the allocator fails; err says "line L, column C: reason"
 * (lines from 1, columns in bytes from 1), and the caller puts the file's
 * name in front.  No global state.
 */
#ifndef PT_JSONREAD_H
#define PT_JSONREAD_H

#include <stddef.h>

#include "error.h"

#define PT_JR_MAX_BYTES (1u << 20) /* default input limit: 1 MiB */
#define PT_JR_MAX_DEPTH 32         /* default nesting limit (arrays and objects) */

enum pt_jr_type { PT_JR_NULL, PT_JR_BOOL, PT_JR_NUMBER, PT_JR_STRING, PT_JR_ARRAY, PT_JR_OBJECT };

typedef struct pt_jr_val pt_jr_val;
typedef struct pt_jr_doc pt_jr_doc;

/* An allocator in Lua's style: nsize 0 frees ptr (and returns NULL); else a new block of nsize bytes (ptr is
   always NULL: the reader never grows a block).  NULL when it cannot. */
typedef void *(*pt_jr_allocf)(void *ud, void *ptr, size_t nsize);

typedef struct pt_jr_opts {
  pt_jr_allocf alloc; /* NULL: malloc and free */
  void *ud;           /* passed to alloc */
  size_t max_bytes;   /* 0: PT_JR_MAX_BYTES */
  int max_depth;      /* 0: PT_JR_MAX_DEPTH */
} pt_jr_opts;

/* Parse text[0..len) (NUL bytes in it are malformed, not an end); opts may be NULL. */
int pt_jr_parse(const char *text, size_t len, const pt_jr_opts *opts, pt_jr_doc **doc /* OUT */, pt_err *err);
void pt_jr_free(pt_jr_doc *doc);
const pt_jr_val *pt_jr_root(const pt_jr_doc *doc);

/* ---- queries: each takes NULL (and a value of another type) and answers "absent" ---- */

enum pt_jr_type pt_jr_type(const pt_jr_val *v); /* PT_JR_NULL for NULL */
const char *pt_jr_type_name(enum pt_jr_type t); /* "null", "a boolean", "a number", "a string", "an array", "an object" */
void pt_jr_pos(const pt_jr_val *v, int *line /* OUT */, int *col /* OUT */);
/* Elements of an array or members of an object; 0 for anything else. */
size_t pt_jr_len(const pt_jr_val *v);
/* Element i of an array, member i of an object (in the text's order); NULL past the end. */
const pt_jr_val *pt_jr_index(const pt_jr_val *v, size_t i);
/* The member of obj named key; NULL when absent (a key holding \u0000 matches no C string). */
const pt_jr_val *pt_jr_get(const pt_jr_val *obj, const char *key);
/* A member's key (NUL-terminated; *len, if given, counts bytes and any \u0000 in it); NULL for a non-member. */
const char *pt_jr_key(const pt_jr_val *member, size_t *len /* OUT */);
/* A string's bytes, NUL-terminated, UTF-8; *len (if given) is its length, which a \u0000 makes differ from strlen. */
const char *pt_jr_string(const pt_jr_val *v, size_t *len /* OUT */);
/* A number's value (NAN for a non-number), and its text as written (for exact integers). */
double pt_jr_number(const pt_jr_val *v);
const char *pt_jr_number_text(const pt_jr_val *v);
/* A boolean's value: 1 or 0; -1 for a non-boolean. */
int pt_jr_bool(const pt_jr_val *v);

/* 0 when v has type t; else PT_EFORMAT with "line L, column C: WHAT must be T, not U" (v NULL: "WHAT is missing",
   with no position). */
int pt_jr_expect(const pt_jr_val *v, enum pt_jr_type t, const char *what, pt_err *err);
/* Format "line L, column C: " and then fmt into err, at v's position; returns code. */
int pt_jr_err_at(const pt_jr_val *v, pt_err *err, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
