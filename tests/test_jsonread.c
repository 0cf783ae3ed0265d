/*
 * test_jsonread.c — the strict JSON reader: the tree and its queries, every
 * class of malformed input with its line and column, the limits (depth,
 * size), every prefix of a real file, and an allocator that fails each call
 * in turn.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonread.h"
#include "testutil.h"

static int parse(const char *s, size_t n, pt_jr_doc **d, pt_err *err) { return pt_jr_parse(s, n, NULL, d, err); }

static void test_tree(void) {
  const char *s = "{\n  \"a\": [1, -2.5e3, true, false, null],\n  \"s\": \"x\\n\\u00e9\\ud83d\\ude00\\/\",\n  \"o\": {}, \"z\": \"a\\u0000b\"\n}\n";
  pt_jr_doc *d;
  pt_err err = {""};
  CU_ASSERT_EQUAL_FATAL(parse(s, strlen(s), &d, &err), 0);
  const pt_jr_val *r = pt_jr_root(d);
  CU_ASSERT_EQUAL(pt_jr_type(r), PT_JR_OBJECT);
  CU_ASSERT_EQUAL(pt_jr_len(r), 4);
  const pt_jr_val *a = pt_jr_get(r, "a");
  CU_ASSERT_EQUAL(pt_jr_type(a), PT_JR_ARRAY);
  CU_ASSERT_EQUAL(pt_jr_len(a), 5);
  CU_ASSERT_EQUAL(pt_jr_number(pt_jr_index(a, 0)), 1);
  CU_ASSERT_EQUAL(pt_jr_number(pt_jr_index(a, 1)), -2500);
  CU_ASSERT_STRING_EQUAL(pt_jr_number_text(pt_jr_index(a, 1)), "-2.5e3");
  CU_ASSERT_EQUAL(pt_jr_bool(pt_jr_index(a, 2)), 1);
  CU_ASSERT_EQUAL(pt_jr_bool(pt_jr_index(a, 3)), 0);
  CU_ASSERT_EQUAL(pt_jr_type(pt_jr_index(a, 4)), PT_JR_NULL);
  CU_ASSERT_PTR_NULL(pt_jr_index(a, 5));
  int line, col;
  pt_jr_pos(pt_jr_index(a, 1), &line, &col);
  CU_ASSERT_EQUAL(line, 2);
  CU_ASSERT_EQUAL(col, 12);
  size_t n;
  CU_ASSERT_STRING_EQUAL(pt_jr_string(pt_jr_get(r, "s"), &n), "x\n\xc3\xa9\xf0\x9f\x98\x80/");
  CU_ASSERT_EQUAL(n, 9);
  CU_ASSERT_EQUAL(pt_jr_len(pt_jr_get(r, "o")), 0);
  const char *z = pt_jr_string(pt_jr_get(r, "z"), &n);
  CU_ASSERT_EQUAL(n, 3);
  CU_ASSERT(z && !memcmp(z, "a\0b", 3));
  CU_ASSERT_STRING_EQUAL(pt_jr_key(pt_jr_index(r, 2), NULL), "o");
  /* queries on the wrong type or NULL answer "absent" */
  CU_ASSERT_PTR_NULL(pt_jr_get(a, "a"));
  CU_ASSERT_PTR_NULL(pt_jr_get(r, "missing"));
  CU_ASSERT(isnan(pt_jr_number(r)));
  CU_ASSERT_PTR_NULL(pt_jr_string(a, NULL));
  CU_ASSERT_EQUAL(pt_jr_bool(NULL), -1);
  CU_ASSERT_EQUAL(pt_jr_len(NULL), 0);
  CU_ASSERT_EQUAL(pt_jr_expect(a, PT_JR_OBJECT, "a", &err), PT_EFORMAT);
  CU_ASSERT_STRING_EQUAL(err.msg, "line 2, column 8: a must be an object, not an array");
  CU_ASSERT_EQUAL(pt_jr_expect(NULL, PT_JR_STRING, "k", &err), PT_EFORMAT);
  CU_ASSERT_STRING_EQUAL(err.msg, "k is missing");
  pt_jr_free(d);
  /* scalars at the top, and numbers at their edges */
  const char *ok[] = {"0", "-0", " 7 ", "\"\"", "null", "1e-400", "1.7976931348623157e308", "18446744073709551616", "[[],{}]"};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    CU_ASSERT_EQUAL(parse(ok[i], strlen(ok[i]), &d, &err), 0);
    pt_jr_free(d);
  }
  CU_ASSERT_EQUAL_FATAL(parse("18446744073709551617", 20, &d, &err), 0);
  CU_ASSERT_STRING_EQUAL(pt_jr_number_text(pt_jr_root(d)), "18446744073709551617"); /* exact, for integers */
  pt_jr_free(d);
}

/* Each malformed class: the code and the whole message (position and reason). */
static void test_malformed(void) {
  static const struct {
    const char *text;
    size_t len; /* 0: strlen */
    int code;
    const char *msg;
  } cases[] = {
      {"", 0, PT_EFORMAT, "line 1, column 1: unexpected end of input (expected a value)"},
      {" \n ", 0, PT_EFORMAT, "line 2, column 2: unexpected end of input (expected a value)"},
      {"{", 0, PT_EFORMAT, "line 1, column 2: unexpected end of input (expected a string key or '}')"},
      {"[1,]", 0, PT_EFORMAT, "line 1, column 4: ']' after ',' (a trailing comma)"},
      {"{\"a\":1,}", 0, PT_EFORMAT, "line 1, column 8: '}' after ',' (a trailing comma)"},
      {"{\"a\" 1}", 0, PT_EFORMAT, "line 1, column 6: unexpected '1' (expected ':' after the key)"},
      {"{a:1}", 0, PT_EFORMAT, "line 1, column 2: unexpected 'a' (expected a string key or '}')"},
      {"[1 2]", 0, PT_EFORMAT, "line 1, column 4: unexpected '2' (expected ',' or ']')"},
      {"01", 0, PT_EFORMAT, "line 1, column 1: a number may not start with 0 (leading zero)"},
      {"-", 0, PT_EFORMAT, "line 1, column 2: unexpected end of input (expected a digit)"},
      {"1.", 0, PT_EFORMAT, "line 1, column 3: unexpected end of input (expected a digit)"},
      {"1.e5", 0, PT_EFORMAT, "line 1, column 3: unexpected 'e' (expected a digit)"},
      {"1e", 0, PT_EFORMAT, "line 1, column 3: unexpected end of input (expected a digit)"},
      {"+1", 0, PT_EFORMAT, "line 1, column 1: unexpected '+' (expected a value)"},
      {".5", 0, PT_EFORMAT, "line 1, column 1: unexpected '.' (expected a value)"},
      {"1e400", 0, PT_EFORMAT, "line 1, column 1: number '1e400' is out of range"},
      {"[-1.8e308]", 0, PT_EFORMAT, "line 1, column 2: number '-1.8e308' is out of range"},
      {"NaN", 0, PT_EFORMAT, "line 1, column 1: unexpected 'N' (expected a value)"},
      {"Infinity", 0, PT_EFORMAT, "line 1, column 1: unexpected 'I' (expected a value)"},
      {"tru", 0, PT_EFORMAT, "line 1, column 1: unexpected end of input in 'true'"},
      {"trux", 0, PT_EFORMAT, "line 1, column 1: invalid literal (expected true)"},
      {"truex", 0, PT_EFORMAT, "line 1, column 5: unexpected 'x' after the value"},
      {"nul", 0, PT_EFORMAT, "line 1, column 1: unexpected end of input in 'null'"},
      {"1 2", 0, PT_EFORMAT, "line 1, column 3: unexpected '2' after the value"},
      {"'a'", 0, PT_EFORMAT, "line 1, column 1: unexpected ''' (expected a value)"},
      {"/* c */ {}", 0, PT_EFORMAT, "line 1, column 1: unexpected '/' (expected a value)"},
      {"\xef\xbb\xbf{}", 0, PT_EFORMAT, "line 1, column 1: unexpected byte 0xef (expected a value)"},
      {"\"abc", 0, PT_EFORMAT, "line 1, column 5: unexpected end of input in the string that starts at column 1"},
      {"\"ab\\", 0, PT_EFORMAT, "line 1, column 5: unexpected end of input in the string that starts at column 1"},
      {"\"\\x\"", 0, PT_EFORMAT, "line 1, column 2: invalid escape \\x in a string"},
      {"\"\\u12\"", 0, PT_EFORMAT, "line 1, column 2: \\u needs four hex digits"},
      {"\"\\u12g4\"", 0, PT_EFORMAT, "line 1, column 2: \\u needs four hex digits"},
      {"\"\\ud800\"", 0, PT_EFORMAT, "line 1, column 2: \\ud800 is a high surrogate without a low one after it"},
      {"\"\\ud800\\u0041\"", 0, PT_EFORMAT, "line 1, column 2: \\ud800 is a high surrogate without a low one after it"},
      {"\"\\udc00\"", 0, PT_EFORMAT, "line 1, column 2: \\udc00 is a low surrogate without a high one before it"},
      {"\"a\tb\"", 0, PT_EFORMAT, "line 1, column 3: control character 0x09 in a string (write it as \\u0009)"},
      {"\"a\nb\"", 0, PT_EFORMAT, "line 1, column 3: control character 0x0a in a string (write it as \\u000a)"},
      {"\"\xff\"", 0, PT_EFORMAT, "line 1, column 2: byte 0xff in a string is not valid UTF-8"},
      {"\"\xc0\x80\"", 0, PT_EFORMAT, "line 1, column 2: byte 0xc0 in a string is not valid UTF-8"},         /* overlong NUL */
      {"\"\xe0\x80\xaf\"", 0, PT_EFORMAT, "line 1, column 2: byte 0xe0 in a string is not valid UTF-8"},     /* overlong '/' */
      {"\"\xed\xa0\x80\"", 0, PT_EFORMAT, "line 1, column 2: byte 0xed in a string is not valid UTF-8"},     /* a surrogate */
      {"\"\xf4\x90\x80\x80\"", 0, PT_EFORMAT, "line 1, column 2: byte 0xf4 in a string is not valid UTF-8"}, /* past U+10FFFF */
      {"\"\xe2\x82\"", 0, PT_EFORMAT, "line 1, column 2: byte 0xe2 in a string is not valid UTF-8"},         /* cut short */
      {"\"a\0b\"", 5, PT_EFORMAT, "line 1, column 3: control character 0x00 in a string (write it as \\u0000)"},
      {"{}\0", 3, PT_EFORMAT, "line 1, column 3: unexpected byte 0x00 after the value"},
      {"[1\0]", 4, PT_EFORMAT, "line 1, column 3: unexpected byte 0x00 (expected ',' or ']')"},
      {"{\"a\":1,\n \"b\":2,\n \"a\":3}", 0, PT_EFORMAT, "line 3, column 2: duplicate key \"a\" (first at line 1, column 2)"},
      {"{\n  \"a\": tru }", 0, PT_EFORMAT, "line 2, column 8: invalid literal (expected true)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    pt_jr_doc *d = (pt_jr_doc *)&d; /* set to NULL on failure */
    pt_err err = {""};
    size_t n = cases[i].len ? cases[i].len : strlen(cases[i].text);
    int rc = parse(cases[i].text, n, &d, &err);
    CU_ASSERT_EQUAL(rc, cases[i].code);
    CU_ASSERT_PTR_NULL(d);
    if (strcmp(err.msg, cases[i].msg)) fprintf(stderr, "\ncase %zu: got \"%s\"\n", i, err.msg);
    CU_ASSERT_STRING_EQUAL(err.msg, cases[i].msg);
  }
}

static char *nested(int depth, int closed) {
  char *s = malloc((size_t)depth * 2 + 1);
  if (!s) return NULL;
  memset(s, '[', (size_t)depth);
  memset(s + depth, ']', closed ? (size_t)depth : 0);
  s[closed ? depth * 2 : depth] = 0;
  return s;
}

static void test_limits(void) {
  pt_jr_doc *d;
  pt_err err;
  char *s = nested(PT_JR_MAX_DEPTH, 1);
  CU_ASSERT_EQUAL(parse(s, strlen(s), &d, &err), 0);
  pt_jr_free(d);
  free(s);
  s = nested(PT_JR_MAX_DEPTH + 1, 1);
  CU_ASSERT_EQUAL(parse(s, strlen(s), &d, &err), PT_ELIMIT);
  CU_ASSERT_STRING_EQUAL(err.msg, "line 1, column 33: nesting deeper than 32");
  free(s);
  s = nested(200000, 0); /* far past it, unclosed: refused at the limit, no deep recursion */
  CU_ASSERT_EQUAL(parse(s, strlen(s), &d, &err), PT_ELIMIT);
  free(s);
  const char *deep_obj = "{\"a\":{\"a\":{\"a\":1}}}";
  pt_jr_opts o = {.max_depth = 2};
  CU_ASSERT_EQUAL(pt_jr_parse(deep_obj, strlen(deep_obj), &o, &d, &err), PT_ELIMIT);
  CU_ASSERT_STRING_EQUAL(err.msg, "line 1, column 11: nesting deeper than 2");
  o = (pt_jr_opts){.max_bytes = 4};
  CU_ASSERT_EQUAL(pt_jr_parse("[1,2]", 5, &o, &d, &err), PT_ELIMIT);
  CU_ASSERT_STRING_EQUAL(err.msg, "line 1, column 1: the input is 5 bytes, more than the limit of 4");
  CU_ASSERT_EQUAL(pt_jr_parse("[12]", 4, &o, &d, &err), 0);
  pt_jr_free(d);
  /* the default limit: 1 MiB of whitespace around a value is fine, one byte more is not */
  size_t big = PT_JR_MAX_BYTES;
  s = malloc(big + 1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  memset(s, ' ', big + 1);
  s[0] = '0';
  CU_ASSERT_EQUAL(parse(s, big, &d, &err), 0);
  pt_jr_free(d);
  CU_ASSERT_EQUAL(parse(s, big + 1, &d, &err), PT_ELIMIT);
  free(s);
}

/* An object of many keys (the duplicate check sorts them): none repeated, then one. */
static void test_many_keys(void) {
  enum { N = 3000 };
  char *s = malloc(N * 16 + 16);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  size_t len = 0;
  s[len++] = '{';
  for (int i = 0; i < N; i++) len += (size_t)sprintf(s + len, "%s\"k%d\":%d", i ? "," : "", (i * 7919) % N, i);
  s[len++] = '}';
  pt_jr_doc *d;
  pt_err err;
  CU_ASSERT_EQUAL_FATAL(parse(s, len, &d, &err), 0);
  CU_ASSERT_EQUAL(pt_jr_len(pt_jr_root(d)), N);
  CU_ASSERT_EQUAL(pt_jr_number(pt_jr_get(pt_jr_root(d), "k0")), 0);
  CU_ASSERT_PTR_NOT_NULL(pt_jr_get(pt_jr_root(d), "k2999"));
  CU_ASSERT_PTR_NULL(pt_jr_get(pt_jr_root(d), "k3000"));
  pt_jr_free(d);
  len--;
  len += (size_t)sprintf(s + len, ",\"k5\":0}");
  CU_ASSERT_EQUAL(parse(s, len, &d, &err), PT_EFORMAT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "duplicate key \"k5\""));
  free(s);
}

static char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = malloc(65536);
  *n = buf ? fread(buf, 1, 65536, f) : 0;
  fclose(f);
  return buf;
}

/* Every prefix of a real export fails cleanly until the closing brace, and then parses. */
static void test_every_prefix(void) {
  size_t n;
  char *s = slurp(pt_test_src("tests/data/libconf/stitch.json"), &n);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  size_t close = n;
  while (close > 0 && s[close - 1] != '}') close--;
  CU_ASSERT_FATAL(close > 0);
  for (size_t k = 0; k <= n; k++) {
    char *copy = malloc(k ? k : 1); /* exactly k bytes: ASan sees any read past them */
    CU_ASSERT_PTR_NOT_NULL_FATAL(copy);
    memcpy(copy, s, k);
    pt_jr_doc *d;
    pt_err err = {""};
    int rc = parse(copy, k, &d, &err);
    if (k < close) {
      CU_ASSERT_EQUAL(rc, PT_EFORMAT);
      CU_ASSERT_NSTRING_EQUAL(err.msg, "line ", 5);
    } else {
      CU_ASSERT_EQUAL(rc, 0);
      pt_jr_free(d);
    }
    free(copy);
  }
  free(s);
}

/* An allocator that fails its Nth call and counts what is live. */
typedef struct budget {
  int calls, fail_at, live;
} budget;

static void *failing_alloc(void *ud, void *ptr, size_t nsize) {
  budget *b = ud;
  if (nsize == 0) {
    if (ptr) b->live--;
    free(ptr);
    return NULL;
  }
  if (++b->calls == b->fail_at) return NULL;
  void *p = malloc(nsize);
  if (p) b->live++;
  return p;
}

static void test_alloc_failure(void) {
  size_t n;
  char *s = slurp(pt_test_src("tests/data/libconf/stitch.json"), &n);
  CU_ASSERT_PTR_NOT_NULL_FATAL(s);
  /* a long string so the arena needs more than one block */
  char *big = malloc(n + 40000);
  CU_ASSERT_PTR_NOT_NULL_FATAL(big);
  size_t len = 0;
  big[len++] = '[';
  big[len++] = '"';
  memset(big + len, 'x', 30000);
  len += 30000;
  memcpy(big + len, "\", ", 3);
  len += 3;
  memcpy(big + len, s, n);
  len += n;
  big[len++] = ']';
  int succeeded = 0;
  for (int fail_at = 1; fail_at < 100 && !succeeded; fail_at++) {
    budget b = {0, fail_at, 0};
    pt_jr_opts o = {.alloc = failing_alloc, .ud = &b};
    pt_jr_doc *d;
    pt_err err = {""};
    int rc = pt_jr_parse(big, len, &o, &d, &err);
    if (rc == 0) {
      succeeded = 1;
      CU_ASSERT(fail_at > 3); /* the document, then at least three blocks */
      CU_ASSERT_EQUAL(pt_jr_len(pt_jr_root(d)), 2);
      pt_jr_free(d);
    } else {
      CU_ASSERT_EQUAL(rc, PT_ENOMEM);
      CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "out of memory"));
      CU_ASSERT_NSTRING_EQUAL(err.msg, "line ", 5);
    }
    CU_ASSERT_EQUAL(b.live, 0); /* every block given back, on either path */
  }
  CU_ASSERT(succeeded);
  free(big);
  free(s);
}

int pt_test_add_jsonread(void) {
  CU_pSuite s = CU_add_suite("jsonread", NULL, NULL);
  if (!s) return CU_get_error();
  if (!CU_add_test(s, "tree and queries", test_tree) || !CU_add_test(s, "malformed input, each class", test_malformed) ||
      !CU_add_test(s, "depth and size limits", test_limits) || !CU_add_test(s, "many keys, one duplicate", test_many_keys) ||
      !CU_add_test(s, "every prefix of a real export", test_every_prefix) ||
      !CU_add_test(s, "allocator failing each call", test_alloc_failure))
    return CU_get_error();
  return CUE_SUCCESS;
}
