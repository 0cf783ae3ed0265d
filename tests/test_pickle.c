/*
 * test_pickle.c — the data-only unpickler (sim/pickle.c): real pickles from
 * CPython's pickle module (protocols 0, 2, 4), every refused opcode, every
 * truncation of a valid pickle, hostile lengths and indices, million-deep
 * nesting through the stack and through the memo, and the path helpers.
 *
 * The byte arrays below were written by CPython 3.11:
 *   shared = [1, 2.5]
 *   base = {'name': 'alloc', 'n': -7, 'big': 2**40, 'neg': -2**31, 'f': 1.5, 'ok': True,
 *           'no': False, 'none': None, 'tup': (1, 'x', None),
 *           'nested': {'l': [[], {}, ()], 's': shared}, 's2': shared, 'u': 'h\u00e9llo\u20ac'}
 *   p4 = dict(base, b=b'\x00\xff', set={3}, fs=frozenset())
 *   p0_bytes = pickle.dumps(base, 0); p2_bytes = pickle.dumps(base, 2)
 *   p4_bytes = pickle.dumps(p4, 4);   snap_bytes = pickle.dumps(<snapshot-shaped dict>, 4)
 *   l = []; l.append(l); cycle_bytes = pickle.dumps(l, 2)
 *   ints_bytes = pickle.dumps([2**63-1, -2**63, 255, -256, 65535, -1, 0, 2**31, -2**31-1, 300], 2)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pickle.h"
#include "testutil.h"

/* A string literal as (bytes, length), NULs included. */
#define LIT(s) (const uint8_t *)(s), sizeof(s) - 1

static const uint8_t p2_bytes[] = {
  0x80, 0x02, 0x7d, 0x71, 0x00, 0x28, 0x58, 0x04, 0x00, 0x00, 0x00, 0x6e, 0x61, 0x6d, 0x65,
  0x71, 0x01, 0x58, 0x05, 0x00, 0x00, 0x00, 0x61, 0x6c, 0x6c, 0x6f, 0x63, 0x71, 0x02, 0x58,
  0x01, 0x00, 0x00, 0x00, 0x6e, 0x71, 0x03, 0x4a, 0xf9, 0xff, 0xff, 0xff, 0x58, 0x03, 0x00,
  0x00, 0x00, 0x62, 0x69, 0x67, 0x71, 0x04, 0x8a, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
  0x58, 0x03, 0x00, 0x00, 0x00, 0x6e, 0x65, 0x67, 0x71, 0x05, 0x4a, 0x00, 0x00, 0x00, 0x80,
  0x58, 0x01, 0x00, 0x00, 0x00, 0x66, 0x71, 0x06, 0x47, 0x3f, 0xf8, 0x00, 0x00, 0x00, 0x00,
  0x00, 0x00, 0x58, 0x02, 0x00, 0x00, 0x00, 0x6f, 0x6b, 0x71, 0x07, 0x88, 0x58, 0x02, 0x00,
  0x00, 0x00, 0x6e, 0x6f, 0x71, 0x08, 0x89, 0x58, 0x04, 0x00, 0x00, 0x00, 0x6e, 0x6f, 0x6e,
  0x65, 0x71, 0x09, 0x4e, 0x58, 0x03, 0x00, 0x00, 0x00, 0x74, 0x75, 0x70, 0x71, 0x0a, 0x4b,
  0x01, 0x58, 0x01, 0x00, 0x00, 0x00, 0x78, 0x71, 0x0b, 0x4e, 0x87, 0x71, 0x0c, 0x58, 0x06,
  0x00, 0x00, 0x00, 0x6e, 0x65, 0x73, 0x74, 0x65, 0x64, 0x71, 0x0d, 0x7d, 0x71, 0x0e, 0x28,
  0x58, 0x01, 0x00, 0x00, 0x00, 0x6c, 0x71, 0x0f, 0x5d, 0x71, 0x10, 0x28, 0x5d, 0x71, 0x11,
  0x7d, 0x71, 0x12, 0x29, 0x65, 0x58, 0x01, 0x00, 0x00, 0x00, 0x73, 0x71, 0x13, 0x5d, 0x71,
  0x14, 0x28, 0x4b, 0x01, 0x47, 0x40, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x65, 0x75,
  0x58, 0x02, 0x00, 0x00, 0x00, 0x73, 0x32, 0x71, 0x15, 0x68, 0x14, 0x58, 0x01, 0x00, 0x00,
  0x00, 0x75, 0x71, 0x16, 0x58, 0x09, 0x00, 0x00, 0x00, 0x68, 0xc3, 0xa9, 0x6c, 0x6c, 0x6f,
  0xe2, 0x82, 0xac, 0x71, 0x17, 0x75, 0x2e,
};
static const uint8_t p4_bytes[] = {
  0x80, 0x04, 0x95, 0xc7, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7d, 0x94, 0x28, 0x8c,
  0x04, 0x6e, 0x61, 0x6d, 0x65, 0x94, 0x8c, 0x05, 0x61, 0x6c, 0x6c, 0x6f, 0x63, 0x94, 0x8c,
  0x01, 0x6e, 0x94, 0x4a, 0xf9, 0xff, 0xff, 0xff, 0x8c, 0x03, 0x62, 0x69, 0x67, 0x94, 0x8a,
  0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x8c, 0x03, 0x6e, 0x65, 0x67, 0x94, 0x4a, 0x00,
  0x00, 0x00, 0x80, 0x8c, 0x01, 0x66, 0x94, 0x47, 0x3f, 0xf8, 0x00, 0x00, 0x00, 0x00, 0x00,
  0x00, 0x8c, 0x02, 0x6f, 0x6b, 0x94, 0x88, 0x8c, 0x02, 0x6e, 0x6f, 0x94, 0x89, 0x8c, 0x04,
  0x6e, 0x6f, 0x6e, 0x65, 0x94, 0x4e, 0x8c, 0x03, 0x74, 0x75, 0x70, 0x94, 0x4b, 0x01, 0x8c,
  0x01, 0x78, 0x94, 0x4e, 0x87, 0x94, 0x8c, 0x06, 0x6e, 0x65, 0x73, 0x74, 0x65, 0x64, 0x94,
  0x7d, 0x94, 0x28, 0x8c, 0x01, 0x6c, 0x94, 0x5d, 0x94, 0x28, 0x5d, 0x94, 0x7d, 0x94, 0x29,
  0x65, 0x8c, 0x01, 0x73, 0x94, 0x5d, 0x94, 0x28, 0x4b, 0x01, 0x47, 0x40, 0x04, 0x00, 0x00,
  0x00, 0x00, 0x00, 0x00, 0x65, 0x75, 0x8c, 0x02, 0x73, 0x32, 0x94, 0x68, 0x14, 0x8c, 0x01,
  0x75, 0x94, 0x8c, 0x09, 0x68, 0xc3, 0xa9, 0x6c, 0x6c, 0x6f, 0xe2, 0x82, 0xac, 0x94, 0x8c,
  0x01, 0x62, 0x94, 0x43, 0x02, 0x00, 0xff, 0x94, 0x8c, 0x03, 0x73, 0x65, 0x74, 0x94, 0x8f,
  0x94, 0x28, 0x4b, 0x03, 0x90, 0x8c, 0x02, 0x66, 0x73, 0x94, 0x28, 0x91, 0x94, 0x75, 0x2e,
};
static const uint8_t p0_bytes[] = {
  0x28, 0x64, 0x70, 0x30, 0x0a, 0x56, 0x6e, 0x61, 0x6d, 0x65, 0x0a, 0x70, 0x31, 0x0a, 0x56,
  0x61, 0x6c, 0x6c, 0x6f, 0x63, 0x0a, 0x70, 0x32, 0x0a, 0x73, 0x56, 0x6e, 0x0a, 0x70, 0x33,
  0x0a, 0x49, 0x2d, 0x37, 0x0a, 0x73, 0x56, 0x62, 0x69, 0x67, 0x0a, 0x70, 0x34, 0x0a, 0x4c,
  0x31, 0x30, 0x39, 0x39, 0x35, 0x31, 0x31, 0x36, 0x32, 0x37, 0x37, 0x37, 0x36, 0x4c, 0x0a,
  0x73, 0x56, 0x6e, 0x65, 0x67, 0x0a, 0x70, 0x35, 0x0a, 0x49, 0x2d, 0x32, 0x31, 0x34, 0x37,
  0x34, 0x38, 0x33, 0x36, 0x34, 0x38, 0x0a, 0x73, 0x56, 0x66, 0x0a, 0x70, 0x36, 0x0a, 0x46,
  0x31, 0x2e, 0x35, 0x0a, 0x73, 0x56, 0x6f, 0x6b, 0x0a, 0x70, 0x37, 0x0a, 0x49, 0x30, 0x31,
  0x0a, 0x73, 0x56, 0x6e, 0x6f, 0x0a, 0x70, 0x38, 0x0a, 0x49, 0x30, 0x30, 0x0a, 0x73, 0x56,
  0x6e, 0x6f, 0x6e, 0x65, 0x0a, 0x70, 0x39, 0x0a, 0x4e, 0x73, 0x56, 0x74, 0x75, 0x70, 0x0a,
  0x70, 0x31, 0x30, 0x0a, 0x28, 0x49, 0x31, 0x0a, 0x56, 0x78, 0x0a, 0x70, 0x31, 0x31, 0x0a,
  0x4e, 0x74, 0x70, 0x31, 0x32, 0x0a, 0x73, 0x56, 0x6e, 0x65, 0x73, 0x74, 0x65, 0x64, 0x0a,
  0x70, 0x31, 0x33, 0x0a, 0x28, 0x64, 0x70, 0x31, 0x34, 0x0a, 0x56, 0x6c, 0x0a, 0x70, 0x31,
  0x35, 0x0a, 0x28, 0x6c, 0x70, 0x31, 0x36, 0x0a, 0x28, 0x6c, 0x70, 0x31, 0x37, 0x0a, 0x61,
  0x28, 0x64, 0x70, 0x31, 0x38, 0x0a, 0x61, 0x28, 0x74, 0x61, 0x73, 0x56, 0x73, 0x0a, 0x70,
  0x31, 0x39, 0x0a, 0x28, 0x6c, 0x70, 0x32, 0x30, 0x0a, 0x49, 0x31, 0x0a, 0x61, 0x46, 0x32,
  0x2e, 0x35, 0x0a, 0x61, 0x73, 0x73, 0x56, 0x73, 0x32, 0x0a, 0x70, 0x32, 0x31, 0x0a, 0x67,
  0x32, 0x30, 0x0a, 0x73, 0x56, 0x75, 0x0a, 0x70, 0x32, 0x32, 0x0a, 0x56, 0x68, 0xe9, 0x6c,
  0x6c, 0x6f, 0x5c, 0x75, 0x32, 0x30, 0x61, 0x63, 0x0a, 0x70, 0x32, 0x33, 0x0a, 0x73, 0x2e,
};
static const uint8_t snap_bytes[] = {
  0x80, 0x04, 0x95, 0x30, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7d, 0x94, 0x28, 0x8c,
  0x08, 0x73, 0x65, 0x67, 0x6d, 0x65, 0x6e, 0x74, 0x73, 0x94, 0x5d, 0x94, 0x7d, 0x94, 0x28,
  0x8c, 0x06, 0x64, 0x65, 0x76, 0x69, 0x63, 0x65, 0x94, 0x4b, 0x00, 0x8c, 0x07, 0x61, 0x64,
  0x64, 0x72, 0x65, 0x73, 0x73, 0x94, 0x8a, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7f, 0x8c,
  0x0a, 0x74, 0x6f, 0x74, 0x61, 0x6c, 0x5f, 0x73, 0x69, 0x7a, 0x65, 0x94, 0x4a, 0x00, 0x00,
  0x20, 0x00, 0x8c, 0x06, 0x73, 0x74, 0x72, 0x65, 0x61, 0x6d, 0x94, 0x4b, 0x00, 0x8c, 0x0c,
  0x73, 0x65, 0x67, 0x6d, 0x65, 0x6e, 0x74, 0x5f, 0x74, 0x79, 0x70, 0x65, 0x94, 0x8c, 0x05,
  0x73, 0x6d, 0x61, 0x6c, 0x6c, 0x94, 0x8c, 0x0e, 0x61, 0x6c, 0x6c, 0x6f, 0x63, 0x61, 0x74,
  0x65, 0x64, 0x5f, 0x73, 0x69, 0x7a, 0x65, 0x94, 0x4d, 0x00, 0x02, 0x8c, 0x0b, 0x61, 0x63,
  0x74, 0x69, 0x76, 0x65, 0x5f, 0x73, 0x69, 0x7a, 0x65, 0x94, 0x4d, 0x00, 0x02, 0x8c, 0x06,
  0x62, 0x6c, 0x6f, 0x63, 0x6b, 0x73, 0x94, 0x5d, 0x94, 0x28, 0x7d, 0x94, 0x28, 0x68, 0x05,
  0x8a, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7f, 0x8c, 0x04, 0x73, 0x69, 0x7a, 0x65, 0x94,
  0x4d, 0x00, 0x02, 0x8c, 0x0e, 0x72, 0x65, 0x71, 0x75, 0x65, 0x73, 0x74, 0x65, 0x64, 0x5f,
  0x73, 0x69, 0x7a, 0x65, 0x94, 0x4b, 0x04, 0x8c, 0x05, 0x73, 0x74, 0x61, 0x74, 0x65, 0x94,
  0x8c, 0x10, 0x61, 0x63, 0x74, 0x69, 0x76, 0x65, 0x5f, 0x61, 0x6c, 0x6c, 0x6f, 0x63, 0x61,
  0x74, 0x65, 0x64, 0x94, 0x8c, 0x06, 0x66, 0x72, 0x61, 0x6d, 0x65, 0x73, 0x94, 0x5d, 0x94,
  0x75, 0x7d, 0x94, 0x28, 0x68, 0x05, 0x8a, 0x06, 0x00, 0x02, 0x00, 0x00, 0x00, 0x7f, 0x68,
  0x0f, 0x4a, 0x00, 0xfe, 0x1f, 0x00, 0x68, 0x10, 0x4b, 0x00, 0x68, 0x11, 0x8c, 0x08, 0x69,
  0x6e, 0x61, 0x63, 0x74, 0x69, 0x76, 0x65, 0x94, 0x68, 0x13, 0x5d, 0x94, 0x75, 0x65, 0x75,
  0x61, 0x8c, 0x0d, 0x64, 0x65, 0x76, 0x69, 0x63, 0x65, 0x5f, 0x74, 0x72, 0x61, 0x63, 0x65,
  0x73, 0x94, 0x5d, 0x94, 0x5d, 0x94, 0x28, 0x7d, 0x94, 0x28, 0x8c, 0x06, 0x61, 0x63, 0x74,
  0x69, 0x6f, 0x6e, 0x94, 0x8c, 0x0d, 0x73, 0x65, 0x67, 0x6d, 0x65, 0x6e, 0x74, 0x5f, 0x61,
  0x6c, 0x6c, 0x6f, 0x63, 0x94, 0x8c, 0x04, 0x61, 0x64, 0x64, 0x72, 0x94, 0x8a, 0x06, 0x00,
  0x00, 0x00, 0x00, 0x00, 0x7f, 0x68, 0x0f, 0x4a, 0x00, 0x00, 0x20, 0x00, 0x68, 0x07, 0x4b,
  0x00, 0x8c, 0x07, 0x74, 0x69, 0x6d, 0x65, 0x5f, 0x75, 0x73, 0x94, 0x8a, 0x07, 0x00, 0x40,
  0x1e, 0x18, 0x24, 0x0a, 0x06, 0x68, 0x13, 0x5d, 0x94, 0x75, 0x7d, 0x94, 0x28, 0x68, 0x1c,
  0x8c, 0x05, 0x61, 0x6c, 0x6c, 0x6f, 0x63, 0x94, 0x68, 0x1e, 0x8a, 0x06, 0x00, 0x00, 0x00,
  0x00, 0x00, 0x7f, 0x68, 0x0f, 0x4b, 0x04, 0x68, 0x07, 0x4b, 0x00, 0x68, 0x1f, 0x8a, 0x07,
  0x0a, 0x40, 0x1e, 0x18, 0x24, 0x0a, 0x06, 0x68, 0x13, 0x5d, 0x94, 0x75, 0x7d, 0x94, 0x28,
  0x68, 0x1c, 0x8c, 0x0e, 0x66, 0x72, 0x65, 0x65, 0x5f, 0x72, 0x65, 0x71, 0x75, 0x65, 0x73,
  0x74, 0x65, 0x64, 0x94, 0x68, 0x1e, 0x8a, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7f, 0x68,
  0x0f, 0x4b, 0x04, 0x68, 0x07, 0x4b, 0x00, 0x68, 0x1f, 0x8a, 0x07, 0x14, 0x40, 0x1e, 0x18,
  0x24, 0x0a, 0x06, 0x68, 0x13, 0x5d, 0x94, 0x75, 0x7d, 0x94, 0x28, 0x68, 0x1c, 0x8c, 0x0e,
  0x66, 0x72, 0x65, 0x65, 0x5f, 0x63, 0x6f, 0x6d, 0x70, 0x6c, 0x65, 0x74, 0x65, 0x64, 0x94,
  0x68, 0x1e, 0x8a, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7f, 0x68, 0x0f, 0x4b, 0x04, 0x68,
  0x07, 0x4b, 0x00, 0x68, 0x1f, 0x8a, 0x07, 0x15, 0x40, 0x1e, 0x18, 0x24, 0x0a, 0x06, 0x68,
  0x13, 0x5d, 0x94, 0x75, 0x65, 0x61, 0x8c, 0x12, 0x61, 0x6c, 0x6c, 0x6f, 0x63, 0x61, 0x74,
  0x6f, 0x72, 0x5f, 0x73, 0x65, 0x74, 0x74, 0x69, 0x6e, 0x67, 0x73, 0x94, 0x7d, 0x94, 0x75,
  0x2e,
};
static const uint8_t cycle_bytes[] = {
  0x80, 0x02, 0x5d, 0x71, 0x00, 0x68, 0x00, 0x61, 0x2e,
};
static const uint8_t ints_bytes[] = {
  0x80, 0x02, 0x5d, 0x71, 0x00, 0x28, 0x8a, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
  0x7f, 0x8a, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x4b, 0xff, 0x4a, 0x00,
  0xff, 0xff, 0xff, 0x4d, 0xff, 0xff, 0x4a, 0xff, 0xff, 0xff, 0xff, 0x4b, 0x00, 0x8a, 0x05,
  0x00, 0x00, 0x00, 0x80, 0x00, 0x8a, 0x05, 0xff, 0xff, 0xff, 0x7f, 0xff, 0x4d, 0x2c, 0x01,
  0x65, 0x2e,
};

/* ---- helpers ------------------------------------------------------------- */

static pt_pickle *parse_ok(const uint8_t *b, size_t n) {
  pt_err e;
  pt_pickle *p = NULL;
  memset(&e, 0, sizeof e);
  int rc = pt_pickle_parse(b, n, "t.pkl", NULL, &e, &p);
  CU_ASSERT_EQUAL(rc, 0);
  if (rc) fprintf(stderr, "\nunexpected parse error: %s\n", e.msg);
  return p;
}

/* Parse what must fail: returns the code, copies the message, checks that no
 * handle came back. */
static int parse_err(const uint8_t *b, size_t n, const pt_pickle_limits *lim,
                     char msg[PT_ERRMSG_MAX]) {
  pt_err e;
  pt_pickle *p = (pt_pickle *)&e; /* must be reset to NULL */
  memset(&e, 0, sizeof e);
  int rc = pt_pickle_parse(b, n, "t.pkl", lim, &e, &p);
  if (rc == 0) {
    pt_pickle_free(p);
    strcpy(msg, "(parsed)");
  } else {
    CU_ASSERT_PTR_NULL(p);
    memcpy(msg, e.msg, PT_ERRMSG_MAX);
  }
  return rc;
}

/* The parse of (buf, len) fails with code and a message holding s1 and s2. */
#define EXPECT_ERR(buf, len, lim, code, s1, s2)                                         \
  do {                                                                                \
    char m_[PT_ERRMSG_MAX];                                                           \
    int rc_ = parse_err((buf), (len), (lim), m_);                                     \
    CU_ASSERT_EQUAL(rc_, (code));                                                     \
    CU_ASSERT_PTR_NOT_NULL(strstr(m_, (s1)));                                         \
    CU_ASSERT_PTR_NOT_NULL(strstr(m_, (s2)));                                         \
    if (rc_ != (code) || !strstr(m_, (s1)) || !strstr(m_, (s2)))                      \
      fprintf(stderr, "\nline %d: rc %d, message \"%s\"\n", __LINE__, rc_, m_);      \
  } while (0)
#define EXPECT_LIT(lit, lim, code, s1, s2) \
  EXPECT_ERR((const uint8_t *)(lit), sizeof(lit) - 1, lim, code, s1, s2)

static int is_int(const pt_pyobj *o, int64_t v) { return o && o->type == PT_PY_INT && o->u.i == v; }
static int is_bool(const pt_pyobj *o, int v) { return o && o->type == PT_PY_BOOL && o->u.i == v; }
static int is_none(const pt_pyobj *o) { return o && o->type == PT_PY_NONE; }
static int is_float(const pt_pyobj *o, double v) {
  return o && o->type == PT_PY_FLOAT && o->u.f == v;
}
static int is_type(const pt_pyobj *o, pt_pyt t, size_t len) {
  return o && o->type == t && pt_py_len(o) == len;
}
static int is_bytes(const pt_pyobj *o, const char *s, size_t n) {
  return o && o->type == PT_PY_BYTES && o->u.s.len == n && memcmp(o->u.s.ptr, s, n) == 0;
}

/* The twelve keys of 'base' (see the top of this file), whatever the protocol. */
static void check_base(const pt_pyobj *r, size_t nkeys) {
  CU_ASSERT_FATAL(is_type(r, PT_PY_DICT, nkeys));
  CU_ASSERT(pt_py_is_str(pt_py_get(r, "name"), "alloc"));
  CU_ASSERT(is_int(pt_py_get(r, "n"), -7));
  CU_ASSERT(is_int(pt_py_get(r, "big"), (int64_t)1 << 40));
  CU_ASSERT(is_int(pt_py_get(r, "neg"), -((int64_t)1 << 31)));
  CU_ASSERT(is_float(pt_py_get(r, "f"), 1.5));
  CU_ASSERT(is_bool(pt_py_get(r, "ok"), 1));
  CU_ASSERT(is_bool(pt_py_get(r, "no"), 0));
  CU_ASSERT(is_none(pt_py_get(r, "none")));
  const pt_pyobj *t = pt_py_get(r, "tup");
  CU_ASSERT_FATAL(is_type(t, PT_PY_TUPLE, 3));
  CU_ASSERT(is_int(pt_py_index(t, 0), 1));
  CU_ASSERT(pt_py_is_str(pt_py_index(t, 1), "x"));
  CU_ASSERT(is_none(pt_py_index(t, 2)));
  CU_ASSERT_PTR_NULL(pt_py_index(t, 3));
  const pt_pyobj *nested = pt_py_get(r, "nested");
  CU_ASSERT_FATAL(is_type(nested, PT_PY_DICT, 2));
  const pt_pyobj *l = pt_py_get(nested, "l");
  CU_ASSERT_FATAL(is_type(l, PT_PY_LIST, 3));
  CU_ASSERT(is_type(pt_py_index(l, 0), PT_PY_LIST, 0));
  CU_ASSERT(is_type(pt_py_index(l, 1), PT_PY_DICT, 0));
  CU_ASSERT(is_type(pt_py_index(l, 2), PT_PY_TUPLE, 0));
  const pt_pyobj *s = pt_py_get(nested, "s");
  CU_ASSERT_FATAL(is_type(s, PT_PY_LIST, 2));
  CU_ASSERT(is_int(pt_py_index(s, 0), 1));
  CU_ASSERT(is_float(pt_py_index(s, 1), 2.5));
  CU_ASSERT_PTR_EQUAL(pt_py_get(r, "s2"), s); /* the memo shares one object */
  CU_ASSERT(pt_py_is_str(pt_py_get(r, "u"), "h\xc3\xa9llo\xe2\x82\xac"));
  CU_ASSERT_PTR_NULL(pt_py_get(r, "missing"));
}

/* ---- tests ----------------------------------------------------------------- */

static void test_protocol2(void) {
  pt_pickle *p = parse_ok(p2_bytes, sizeof p2_bytes);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  check_base(pt_pickle_root(p), 12);
  /* strings are copies: the input may go once the parse returns */
  const pt_pyobj *name = pt_py_get(pt_pickle_root(p), "name");
  CU_ASSERT(name->u.s.ptr < (const char *)p2_bytes ||
            name->u.s.ptr >= (const char *)p2_bytes + sizeof p2_bytes);
  pt_pickle_free(p);
}

static void test_protocol4(void) {
  pt_pickle *p = parse_ok(p4_bytes, sizeof p4_bytes);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const pt_pyobj *r = pt_pickle_root(p);
  check_base(r, 15);
  CU_ASSERT(is_bytes(pt_py_get(r, "b"), "\x00\xff", 2));
  const pt_pyobj *set = pt_py_get(r, "set");
  CU_ASSERT_FATAL(is_type(set, PT_PY_SET, 1));
  CU_ASSERT(is_int(set->u.seq.items[0], 3));
  CU_ASSERT(is_type(pt_py_get(r, "fs"), PT_PY_SET, 0));
  CU_ASSERT_PTR_NULL(pt_py_index(set, 0)); /* pt_py_index is for lists and tuples */
  pt_pickle_free(p);
}

static void test_protocol0_text(void) {
  pt_pickle *p = parse_ok(p0_bytes, sizeof p0_bytes);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  check_base(pt_pickle_root(p), 12);
  pt_pickle_free(p);

  /* STRING escapes as PyBytes_DecodeEscape reads them */
  static const uint8_t s1[] = "(S'a\\nb\\x41\\101\\'\\q\\\\'\nS\"plain\"\nS''\nl.";
  p = parse_ok(s1, sizeof s1 - 1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const pt_pyobj *l = pt_pickle_root(p);
  CU_ASSERT_FATAL(is_type(l, PT_PY_LIST, 3));
  CU_ASSERT(pt_py_is_str(pt_py_index(l, 0), "a\nbAA'\\q\\"));
  CU_ASSERT(pt_py_is_str(pt_py_index(l, 1), "plain"));
  CU_ASSERT(pt_py_is_str(pt_py_index(l, 2), ""));
  pt_pickle_free(p);

  /* UNICODE: Latin-1 bytes, \u and \U escapes after an odd run of backslashes
   * only (b'\\\\u0041' stays as written, b'\\\\\\u0041' is '\\\\A' in Python) */
  static const uint8_t u1[] = "(V\xe9\\u20ac\\U0001f600\nV\\\\u0041\nV\\\\\\u0041\nVa\\xb\nt.";
  p = parse_ok(u1, sizeof u1 - 1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const pt_pyobj *t = pt_pickle_root(p);
  CU_ASSERT_FATAL(is_type(t, PT_PY_TUPLE, 4));
  CU_ASSERT(pt_py_is_str(pt_py_index(t, 0), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));
  CU_ASSERT(pt_py_is_str(pt_py_index(t, 1), "\\\\u0041"));
  CU_ASSERT(pt_py_is_str(pt_py_index(t, 2), "\\\\A"));
  CU_ASSERT(pt_py_is_str(pt_py_index(t, 3), "a\\xb"));
  pt_pickle_free(p);

  /* INT bools and numbers, LONG with and without the L, FLOAT, text PUT/GET */
  static const uint8_t n1[] = "(I01\nI00\nI-12\nL5\nL-9223372036854775808L\nF-2.5e3\np7\ng7\nl.";
  p = parse_ok(n1, sizeof n1 - 1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  l = pt_pickle_root(p);
  CU_ASSERT_FATAL(is_type(l, PT_PY_LIST, 7));
  CU_ASSERT(is_bool(pt_py_index(l, 0), 1));
  CU_ASSERT(is_bool(pt_py_index(l, 1), 0));
  CU_ASSERT(is_int(pt_py_index(l, 2), -12));
  CU_ASSERT(is_int(pt_py_index(l, 3), 5));
  CU_ASSERT(is_int(pt_py_index(l, 4), INT64_MIN));
  CU_ASSERT(is_float(pt_py_index(l, 5), -2500.0));
  CU_ASSERT_PTR_EQUAL(pt_py_index(l, 6), pt_py_index(l, 5));
  pt_pickle_free(p);
}

static void test_binary_strings(void) {
  /* BINSTRING, SHORT_BINSTRING, SHORT_BINBYTES, BINBYTES, BINBYTES8,
   * BINUNICODE8, BYTEARRAY8 (as CPython writes bytearray(b'ab') at protocol 5) */
  static const uint8_t b1[] = "\x80\x04("
                              "T\x03\x00\x00\x00" "abc"
                              "U\x02" "de"
                              "C\x01" "f"
                              "B\x02\x00\x00\x00" "gh"
                              "\x8e\x02\x00\x00\x00\x00\x00\x00\x00" "ij"
                              "\x8d\x01\x00\x00\x00\x00\x00\x00\x00" "k"
                              "\x8c\x00"
                              "l.";
  pt_pickle *p = parse_ok(b1, sizeof b1 - 1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const pt_pyobj *l = pt_pickle_root(p);
  CU_ASSERT_FATAL(is_type(l, PT_PY_LIST, 7));
  CU_ASSERT(pt_py_is_str(pt_py_index(l, 0), "abc"));
  CU_ASSERT(pt_py_is_str(pt_py_index(l, 1), "de"));
  CU_ASSERT(is_bytes(pt_py_index(l, 2), "f", 1));
  CU_ASSERT(is_bytes(pt_py_index(l, 3), "gh", 2));
  CU_ASSERT(is_bytes(pt_py_index(l, 4), "ij", 2));
  CU_ASSERT(pt_py_is_str(pt_py_index(l, 5), "k"));
  CU_ASSERT(pt_py_is_str(pt_py_index(l, 6), ""));
  CU_ASSERT(!pt_py_is_str(pt_py_index(l, 2), "f")); /* bytes are not str */
  pt_pickle_free(p);

  static const uint8_t ba[] = "\x80\x05\x95\r\x00\x00\x00\x00\x00\x00\x00\x96\x02\x00\x00\x00"
                              "\x00\x00\x00\x00" "ab\x94.";
  p = parse_ok(ba, sizeof ba - 1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  CU_ASSERT(is_bytes(pt_pickle_root(p), "ab", 2));
  pt_pickle_free(p);
}

static void test_containers(void) {
  /* APPEND of a shared value grows the list in place; APPENDS of 10000 needs a
   * chunk of its own */
  size_t n = 1 + 2 * 100 + 1;
  uint8_t *b = malloc(2 + 10000 + 2 + 10 + 2);
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  b[0] = ']';
  for (size_t i = 0; i < 100; i++) memcpy(b + 1 + 2 * i, "Na", 2);
  b[n - 1] = '.';
  pt_pickle *p = parse_ok(b, n);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const pt_pyobj *l = pt_pickle_root(p);
  CU_ASSERT_FATAL(is_type(l, PT_PY_LIST, 100));
  for (size_t i = 0; i < 100; i++) CU_ASSERT(is_none(pt_py_index(l, i)));
  pt_pickle_free(p);
  memcpy(b, "](", 2);
  memset(b + 2, 'N', 10000);
  memcpy(b + 10002, "e(K\x01K\x02K\x03K\x04K\x05" "e.", 14);
  p = parse_ok(b, 10016);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  l = pt_pickle_root(p);
  CU_ASSERT_FATAL(is_type(l, PT_PY_LIST, 10005));
  CU_ASSERT(is_none(pt_py_index(l, 9999)));
  CU_ASSERT(is_int(pt_py_index(l, 10000), 1));
  CU_ASSERT(is_int(pt_py_index(l, 10004), 5));
  pt_pickle_free(p);
  free(b);

  /* DUP shares, POP_MARK drops to the mark, a second PUT replaces the first */
  p = parse_ok(LIT("(K\x05" "2\x86N(K\x01K\x02" "1Kzq\x00" "0K{q\x00" "0h\x00" "(K\x01K\x02\x91"
                   "\x8f(K\x03\x90t."));
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  l = pt_pickle_root(p);
  CU_ASSERT_FATAL(is_type(l, PT_PY_TUPLE, 5));
  const pt_pyobj *t = pt_py_index(l, 0);
  CU_ASSERT_FATAL(is_type(t, PT_PY_TUPLE, 2));
  CU_ASSERT(is_int(pt_py_index(t, 0), 5));
  CU_ASSERT_PTR_EQUAL(pt_py_index(t, 0), pt_py_index(t, 1));
  CU_ASSERT(is_none(pt_py_index(l, 1)));
  CU_ASSERT(is_int(pt_py_index(l, 2), '{'));
  const pt_pyobj *fs = pt_py_index(l, 3);
  CU_ASSERT_FATAL(is_type(fs, PT_PY_SET, 2));
  CU_ASSERT(is_int(fs->u.seq.items[0], 1) && is_int(fs->u.seq.items[1], 2));
  const pt_pyobj *set = pt_py_index(l, 4);
  CU_ASSERT_FATAL(is_type(set, PT_PY_SET, 1));
  CU_ASSERT(is_int(set->u.seq.items[0], 3));
  pt_pickle_free(p);

  /* the remaining STRING escapes */
  p = parse_ok(LIT("S'\\\"\\a\\b\\f\\r\\t\\v\\0\\\\'\n."));
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  CU_ASSERT(is_bytes(pt_pickle_root(p), "", 0) == 0);
  const pt_pyobj *s = pt_pickle_root(p);
  CU_ASSERT(s->type == PT_PY_STR && s->u.s.len == 9 && memcmp(s->u.s.ptr, "\"\a\b\f\r\t\v\0\\", 9) == 0);
  pt_pickle_free(p);
}

static void test_snapshot_shape(void) {
  pt_pickle *p = parse_ok(snap_bytes, sizeof snap_bytes);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const pt_pyobj *r = pt_pickle_root(p);
  CU_ASSERT_FATAL(is_type(r, PT_PY_DICT, 3));
  const pt_pyobj *tr = pt_py_index(pt_py_get(r, "device_traces"), 0);
  CU_ASSERT_FATAL(is_type(tr, PT_PY_LIST, 4));
  const pt_pyobj *e = pt_py_index(tr, 1);
  CU_ASSERT(pt_py_is_str(pt_py_get(e, "action"), "alloc"));
  CU_ASSERT(is_int(pt_py_get(e, "addr"), INT64_C(139637976727552)));
  CU_ASSERT(is_int(pt_py_get(e, "size"), 4));
  CU_ASSERT(is_int(pt_py_get(e, "stream"), 0));
  CU_ASSERT(is_int(pt_py_get(e, "time_us"), INT64_C(1700000000000010)));
  CU_ASSERT(is_type(pt_py_get(e, "frames"), PT_PY_LIST, 0));
  CU_ASSERT(pt_py_is_str(pt_py_get(pt_py_index(tr, 3), "action"), "free_completed"));
  const pt_pyobj *seg = pt_py_index(pt_py_get(r, "segments"), 0);
  CU_ASSERT(is_int(pt_py_get(seg, "total_size"), 2097152));
  CU_ASSERT(pt_py_is_str(pt_py_get(pt_py_index(pt_py_get(seg, "blocks"), 1), "state"),
                         "inactive"));
  CU_ASSERT(is_type(pt_py_get(r, "allocator_settings"), PT_PY_DICT, 0));
  pt_pickle_free(p);
}

static void test_cycle(void) {
  pt_pickle *p = parse_ok(cycle_bytes, sizeof cycle_bytes);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const pt_pyobj *r = pt_pickle_root(p);
  CU_ASSERT(is_type(r, PT_PY_LIST, 1));
  CU_ASSERT_PTR_EQUAL(pt_py_index(r, 0), r);
  pt_pickle_free(p); /* frees a cyclic value without walking it */
}

static void test_forbidden_opcodes(void) {
  static const struct { uint8_t op; const char *name; } bad[] = {
    {0x63, "GLOBAL"}, {0x93, "STACK_GLOBAL"}, {0x52, "REDUCE"}, {0x62, "BUILD"},
    {0x69, "INST"}, {0x6f, "OBJ"}, {0x81, "NEWOBJ"}, {0x92, "NEWOBJ_EX"},
    {0x82, "EXT1"}, {0x83, "EXT2"}, {0x84, "EXT4"}, {0x50, "PERSID"}, {0x51, "BINPERSID"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    /* PROTO 2, NONE, POP, then the opcode at byte 4 with plausible arguments */
    uint8_t b[] = {0x80, 0x02, 'N', '0', bad[i].op, 'o', 's', '\n', 's', 'y', 's', '\n', '.'};
    char want[128];
    snprintf(want, sizeof want, "t.pkl: byte 4: forbidden opcode %s (0x%02x)", bad[i].name,
             bad[i].op);
    EXPECT_ERR(b, sizeof b, NULL, PT_EFORBID, want, "");
  }
  /* as CPython writes them: pickle.dumps({1}, 3) and OrderedDict() at protocol 4 */
  EXPECT_LIT("\x80\x03" "cbuiltins\nset\nq\x00]q\x01K\x01" "a\x85q\x02Rq\x03.", NULL,
             PT_EFORBID, "t.pkl: byte 2: forbidden opcode GLOBAL (0x63)", "");
  EXPECT_LIT("\x80\x04\x95\"\x00\x00\x00\x00\x00\x00\x00\x8c\x0b" "collections\x94\x8c\x0b"
                 "OrderedDict\x94\x93\x94)R\x94.",
             NULL, PT_EFORBID, "t.pkl: byte 39: forbidden opcode STACK_GLOBAL (0x93)", "");
  /* out-of-band buffers are refused too */
  EXPECT_LIT("\x80\x05N0\x97.", NULL, PT_EFORBID,
             "t.pkl: byte 4: unsupported opcode NEXT_BUFFER (0x97)", "");
  EXPECT_LIT("\x80\x05N0\x98.", NULL, PT_EFORBID,
             "t.pkl: byte 4: unsupported opcode READONLY_BUFFER (0x98)", "");
  /* unknown bytes */
  EXPECT_LIT("\x80\x02N0\xff.", NULL, PT_EFORMAT, "t.pkl: byte 4: unknown opcode 0xff", "");
  EXPECT_LIT("\x80\x02N0\x00.", NULL, PT_EFORMAT, "t.pkl: byte 4: unknown opcode 0x00", "");
  EXPECT_LIT("\x80\x02N0A.", NULL, PT_EFORMAT, "t.pkl: byte 4: unknown opcode 0x41", "");
  EXPECT_LIT("\x80\x05N0\x99.", NULL, PT_EFORMAT, "t.pkl: byte 4: unknown opcode 0x99", "");
}

/* Every proper prefix of a valid pickle fails as truncated; each prefix is
 * copied to a buffer of its exact size so ASan sees any read past the end. */
static void all_prefixes_fail(const uint8_t *b, size_t n) {
  for (size_t k = 0; k < n; k++) {
    uint8_t *c = malloc(k ? k : 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    memcpy(c, b, k);
    char msg[PT_ERRMSG_MAX];
    int rc = parse_err(c, k, NULL, msg);
    CU_ASSERT_EQUAL(rc, PT_EFORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "truncated"));
    if (rc != PT_EFORMAT || !strstr(msg, "truncated"))
      fprintf(stderr, "\nprefix %zu of %zu: rc %d \"%s\"\n", k, n, rc, msg);
    free(c);
  }
}

static void test_truncated(void) {
  all_prefixes_fail(p0_bytes, sizeof p0_bytes);
  all_prefixes_fail(p2_bytes, sizeof p2_bytes);
  all_prefixes_fail(p4_bytes, sizeof p4_bytes);
  all_prefixes_fail(snap_bytes, sizeof snap_bytes);
  all_prefixes_fail(ints_bytes, sizeof ints_bytes);
  EXPECT_LIT("", NULL, PT_EFORMAT, "t.pkl: byte 0: truncated", "without STOP");
  EXPECT_LIT("\x80\x02N", NULL, PT_EFORMAT, "t.pkl: byte 3: truncated", "without STOP");
}

static void test_bad_memo(void) {
  EXPECT_LIT("\x80\x02h\x05.", NULL, PT_EFORMAT, "t.pkl: byte 2: ", "memo key 5 not found");
  EXPECT_LIT("\x80\x02]q\x00h\x01.", NULL, PT_EFORMAT, "byte 5: ", "memo key 1 not found");
  EXPECT_LIT("\x80\x02j\xff\xff\xff\xff.", NULL, PT_EFORMAT, "byte 2: ",
             "memo key 4294967295 not found");
  EXPECT_LIT("Ng3\n.", NULL, PT_EFORMAT, "byte 1: ", "memo key 3 not found");
  EXPECT_LIT("Np-1\n.", NULL, PT_EFORMAT, "byte 1: ", "bad memo index");
  EXPECT_LIT("\x80\x02q\x00.", NULL, PT_EFORMAT, "byte 2: ", "stack underflow");
  EXPECT_LIT("\x80\x04\x94.", NULL, PT_EFORMAT, "byte 2: ", "stack underflow");
  /* a sparse index far out is fine: the memo is a hash table, not an array */
  pt_pickle *p = parse_ok(LIT("\x80\x02Kzr\xfe\xff\xff\xff" "0j\xfe\xff\xff\xff."));
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  CU_ASSERT(is_int(pt_pickle_root(p), 'z'));
  pt_pickle_free(p);
  /* 100 sparse keys (the hash table grows), then 1100 MEMOIZEs move the key
   * 1500 from the hash table into the dense array as it grows past it */
  size_t n = 0;
  uint8_t *b = malloc(2 + 100 * 5 + 2 + 5 + 1 + 1100 + 100 * 6 + 5 + 2);
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  b[n++] = 0x80;
  b[n++] = 2;
  for (uint32_t i = 0; i < 100; i++) { /* stack: the same None; memo[1e9 + 7i] = None */
    uint32_t k = 1000000000u + 7 * i;
    b[n++] = i ? 'r' : 'N';
    if (!i) b[n++] = 'r';
    for (int j = 0; j < 4; j++) b[n++] = (uint8_t)(k >> (8 * j));
  }
  memcpy(b + n, "K\x07r\xdc\x05\x00\x00" "0", 8); /* memo[1500] = 7 */
  n += 8;
  memset(b + n, 0x94, 1100);
  n += 1100;
  b[n++] = '(';
  for (uint32_t i = 0; i < 100; i += 33) {
    uint32_t k = 1000000000u + 7 * i;
    b[n++] = 'j';
    for (int j = 0; j < 4; j++) b[n++] = (uint8_t)(k >> (8 * j));
  }
  memcpy(b + n, "j\xdc\x05\x00\x00t\x86.", 8);
  n += 8;
  p = parse_ok(b, n);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const pt_pyobj *r = pt_py_index(pt_pickle_root(p), 1); /* (None, (None x 4, 7)) */
  CU_ASSERT_FATAL(is_type(r, PT_PY_TUPLE, 5));
  for (size_t i = 0; i < 4; i++) CU_ASSERT(is_none(pt_py_index(r, i)));
  CU_ASSERT(is_int(pt_py_index(r, 4), 7));
  pt_pickle_free(p);
  free(b);

  /* memo limit */
  pt_pickle_limits lim = {.max_memo = 2};
  EXPECT_LIT("\x80\x04N\x94\x94\x94.", &lim, PT_ELIMIT, "byte 5: ", "memo");
}

/* ']' a million times then 'a' a million-1 times: a list nested 1e6 deep. */
static void test_deep_stack(void) {
  const size_t N = 1000000, n = 2 + N + (N - 1) + 1;
  uint8_t *b = malloc(n);
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  b[0] = 0x80;
  b[1] = 2;
  memset(b + 2, ']', N);
  memset(b + 2 + N, 'a', N - 1);
  b[n - 1] = '.';
  pt_pickle *p = parse_ok(b, n);
  CU_ASSERT_PTR_NOT_NULL(p);
  if (p) {
    size_t depth = 1;
    const pt_pyobj *o = pt_pickle_root(p);
    while (pt_py_len(o) == 1) {
      o = pt_py_index(o, 0);
      depth++;
    }
    CU_ASSERT_EQUAL(depth, N);
    CU_ASSERT(is_type(o, PT_PY_LIST, 0));
    pt_pickle_free(p);
  }
  pt_pickle_limits lim = {.max_stack = 1000};
  EXPECT_ERR(b, n, &lim, PT_ELIMIT, "t.pkl: byte 1002: ", "stack deeper than the limit of 1000");
  free(b);

  /* twice as deep: past the default stack limit (1 << 20), a clean error */
  const size_t M = 2 * N, m = 2 + M + 1;
  b = malloc(m);
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  b[0] = 0x80;
  b[1] = 2;
  memset(b + 2, ']', M);
  b[m - 1] = '.';
  EXPECT_ERR(b, m, NULL, PT_ELIMIT, "t.pkl: byte 1048578: ", "stack deeper");
  free(b);

  /* MARKs have their own limit */
  lim = (pt_pickle_limits){.max_marks = 3};
  EXPECT_LIT("(((((.", &lim, PT_ELIMIT, "byte 3: ", "MARK");
}

/* A chain a million deep built through the memo with the stack never above
 * two values: root = []; then per step GET i, [], MEMOIZE, APPEND, POP. */
static void test_deep_memo_chain(void) {
  const size_t N = 1000000, n = 2 + 2 + 9 * N + 1;
  uint8_t *b = malloc(n), *w = b;
  CU_ASSERT_PTR_NOT_NULL_FATAL(b);
  *w++ = 0x80;
  *w++ = 4;
  *w++ = ']';
  *w++ = 0x94;
  for (size_t i = 0; i < N; i++) {
    *w++ = 'j';
    for (int k = 0; k < 4; k++) *w++ = (uint8_t)(i >> (8 * k));
    *w++ = ']';
    *w++ = 0x94;
    *w++ = 'a';
    *w++ = '0';
  }
  *w++ = '.';
  CU_ASSERT_EQUAL_FATAL((size_t)(w - b), n);
  pt_pickle *p = parse_ok(b, n);
  CU_ASSERT_PTR_NOT_NULL(p);
  if (p) {
    size_t depth = 1;
    const pt_pyobj *o = pt_pickle_root(p);
    while (pt_py_len(o) == 1) {
      o = pt_py_index(o, 0);
      depth++;
    }
    CU_ASSERT_EQUAL(depth, N + 1);
    pt_pickle_free(p);
  }
  pt_pickle_limits lim = {.max_memo = 10}; /* the 11th entry is put by step 9 at 4+9*9+6 */
  EXPECT_ERR(b, n, &lim, PT_ELIMIT, "t.pkl: byte 91: ", "memo larger than the limit of 10");
  free(b);
}

static void test_huge_lengths(void) {
  EXPECT_LIT("\x80\x02\x8b\xff\xff\xff\x7f\x01\x02.", NULL, PT_EFORMAT,
             "t.pkl: byte 2: truncated: LONG4 needs 2147483647 more bytes, 3 left", "");
  EXPECT_LIT("\x80\x02\x8b\xff\xff\xff\xff\x01.", NULL, PT_EFORMAT, "byte 2: ",
             "LONG4: negative length");
  EXPECT_LIT("\x80\x02T\x00\x00\x00\x80.", NULL, PT_EFORMAT, "byte 2: ",
             "BINSTRING: negative length");
  EXPECT_LIT("\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\xff" "a.", NULL, PT_EFORMAT,
             "byte 2: truncated: BINUNICODE8 needs 18446744073709551615", "");
  EXPECT_LIT("\x80\x04\x8e\x00\x00\x00\x00\x00\x00\x00\x80" "a.", NULL, PT_EFORMAT,
             "byte 2: truncated: BINBYTES8", "");
  EXPECT_LIT("\x80\x05\x96\x03\x00\x00\x00\x00\x00\x00\x00" "ab", NULL, PT_EFORMAT,
             "byte 2: truncated: BYTEARRAY8 needs 3 more bytes, 2 left", "");
  EXPECT_LIT("\x80\x02X\xff\xff\xff\xff" "a.", NULL, PT_EFORMAT,
             "byte 2: truncated: BINUNICODE", "");
  EXPECT_LIT("\x80\x02U\x05" "abc.", NULL, PT_EFORMAT, "byte 2: truncated", "");
  EXPECT_LIT("\x80\x04\x95\x03\x00\x00\x00\x00\x00\x00\x00N.", NULL, PT_EFORMAT,
             "byte 2: truncated: FRAME of 3 bytes, 2 left", "");
  EXPECT_LIT("\x80\x04\x95\xff\xff\xff\xff\xff\xff\xff\xff" "N.", NULL, PT_EFORMAT,
             "byte 2: truncated: FRAME", "");
}

static void test_wide_ints(void) {
  pt_pickle *p = parse_ok(ints_bytes, sizeof ints_bytes);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const pt_pyobj *l = pt_pickle_root(p);
  static const int64_t want[] = {INT64_MAX, INT64_MIN, 255, -256, 65535, -1, 0,
                                 INT64_C(2147483648), INT64_C(-2147483649), 300};
  CU_ASSERT_FATAL(is_type(l, PT_PY_LIST, 10));
  for (size_t i = 0; i < 10; i++) CU_ASSERT(is_int(pt_py_index(l, i), want[i]));
  pt_pickle_free(p);

  /* pickle.dumps(2**63, 2): nine bytes that do not sign-extend */
  EXPECT_LIT("\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x80\x00.", NULL, PT_ELIMIT,
             "t.pkl: byte 2: LONG1: integer of 9 bytes is wider than 64 bits", "");
  EXPECT_LIT("\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01.", NULL, PT_ELIMIT,
             "byte 2: ", "wider than 64 bits");
  EXPECT_LIT("L9223372036854775808L\n.", NULL, PT_ELIMIT, "byte 0: ",
             "LONG: integer 9223372036854775808 is wider than 64 bits");
  EXPECT_LIT("I-9223372036854775809\n.", NULL, PT_ELIMIT, "byte 0: ", "wider than 64 bits");
  EXPECT_LIT("L123456789012345678901234567890123456789012345678901234567890L\n.", NULL,
             PT_ELIMIT, "byte 0: ", "...");
  /* non-minimal encodings that do fit are accepted, LONG1 of 0 bytes is 0 */
  p = parse_ok(LIT("\x80\x02(\x8a\x09\x01\x00\x00\x00\x00\x00\x00\x00\x00"
                   "\x8a\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x8a\x00"
                   "\x8a\x01\x80\x8b\x02\x00\x00\x00\x00\x80t."));
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  l = pt_pickle_root(p);
  CU_ASSERT_FATAL(is_type(l, PT_PY_TUPLE, 5));
  CU_ASSERT(is_int(pt_py_index(l, 0), 1));
  CU_ASSERT(is_int(pt_py_index(l, 1), -1));
  CU_ASSERT(is_int(pt_py_index(l, 2), 0));
  CU_ASSERT(is_int(pt_py_index(l, 3), -128));
  CU_ASSERT(is_int(pt_py_index(l, 4), -32768));
  pt_pickle_free(p);
  /* LONG4 of 100 bytes: all 0xff is -1; a set bit past 64 is refused */
  uint8_t b[2 + 5 + 100 + 1] = {0x80, 0x02, 0x8b, 100, 0, 0, 0};
  memset(b + 7, 0xff, 100);
  b[sizeof b - 1] = '.';
  p = parse_ok(b, sizeof b);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  CU_ASSERT(is_int(pt_pickle_root(p), -1));
  pt_pickle_free(p);
  b[7 + 50] = 0x7f;
  EXPECT_ERR(b, sizeof b, NULL, PT_ELIMIT, "t.pkl: byte 2: LONG4: integer of 100 bytes", "");
}

static void test_duplicate_keys(void) {
  /* SETITEMS, SETITEM and DICT: Python keeps the last value of a key */
  pt_pickle *p = parse_ok(LIT("\x80\x02}(X\x01\x00\x00\x00" "aK\x01X\x01\x00\x00\x00"
                              "bK\x07X\x01\x00\x00\x00" "aK\x02u."));
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  CU_ASSERT(is_int(pt_py_get(pt_pickle_root(p), "a"), 2));
  CU_ASSERT(is_int(pt_py_get(pt_pickle_root(p), "b"), 7));
  pt_pickle_free(p);
  p = parse_ok(LIT("}U\x01" "aK\x01sU\x01" "aK\x03s."));
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  CU_ASSERT(is_int(pt_py_get(pt_pickle_root(p), "a"), 3));
  pt_pickle_free(p);
  p = parse_ok(LIT("(U\x01" "aK\x01U\x01" "aK\x05U\x01" "bNd."));
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  CU_ASSERT(is_int(pt_py_get(pt_pickle_root(p), "a"), 5));
  CU_ASSERT(is_none(pt_py_get(pt_pickle_root(p), "b")));
  pt_pickle_free(p);
}

static void test_structure_errors(void) {
  EXPECT_LIT("\x80\x02}Na.", NULL, PT_EFORMAT, "t.pkl: byte 4: ", "APPEND to a dict, not a list");
  EXPECT_LIT("]NNs.", NULL, PT_EFORMAT, "byte 3: ", "SETITEM into a list, not a dict");
  EXPECT_LIT("}(Nu.", NULL, PT_EFORMAT, "byte 3: ", "SETITEMS with an odd number");
  EXPECT_LIT("(Nd.", NULL, PT_EFORMAT, "byte 2: ", "DICT with an odd number");
  EXPECT_LIT("](Ne(N\x90.", NULL, PT_EFORMAT, "byte 6: ", "ADDITEMS into a list, not a set");
  EXPECT_LIT("0.", NULL, PT_EFORMAT, "byte 0: ", "stack underflow");
  EXPECT_LIT("]a.", NULL, PT_EFORMAT, "byte 1: ", "stack underflow");
  EXPECT_LIT("](]a.", NULL, PT_EFORMAT, "byte 3: ", "above the MARK");
  EXPECT_LIT("N(\x87.", NULL, PT_EFORMAT, "byte 2: ", "stack underflow");
  EXPECT_LIT("(2.", NULL, PT_EFORMAT, "byte 1: ", "stack underflow");
  EXPECT_LIT("]Ne.", NULL, PT_EFORMAT, "byte 2: ", "APPENDS without a MARK");
  EXPECT_LIT("(Ne.", NULL, PT_EFORMAT, "byte 2: ", "no list below its MARK");
  EXPECT_LIT("]((Ne.", NULL, PT_EFORMAT, "byte 4: ", "no list below its MARK");
  EXPECT_LIT("Nl.", NULL, PT_EFORMAT, "byte 1: ", "LIST without a MARK");
  EXPECT_LIT("N1.", NULL, PT_EFORMAT, "byte 1: ", "POP_MARK without a MARK");
  EXPECT_LIT("NN.", NULL, PT_EFORMAT, "byte 2: ", "STOP with 2 values on the stack");
  EXPECT_LIT(".", NULL, PT_EFORMAT, "byte 0: ", "STOP with 0 values");
  EXPECT_LIT("N(.", NULL, PT_EFORMAT, "byte 2: ", "STOP with a MARK still open");
  EXPECT_LIT("\x80\x06N.", NULL, PT_EFORMAT, "byte 0: ", "unsupported pickle protocol 6");
  EXPECT_LIT("Sabc\n.", NULL, PT_EFORMAT, "byte 0: ", "must be quoted");
  EXPECT_LIT("S'\n.", NULL, PT_EFORMAT, "byte 0: ", "must be quoted");
  EXPECT_LIT("S'\\x4'\n.", NULL, PT_EFORMAT, "byte 0: ", "invalid \\x escape");
  EXPECT_LIT("S'ab\\'\n.", NULL, PT_EFORMAT, "byte 0: ", "trailing backslash");
  EXPECT_LIT("Iabc\n.", NULL, PT_EFORMAT, "byte 0: ", "bad integer text");
  EXPECT_LIT("I\n.", NULL, PT_EFORMAT, "byte 0: ", "bad integer text");
  EXPECT_LIT("Fabc\n.", NULL, PT_EFORMAT, "byte 0: ", "bad float text");
  EXPECT_LIT("F\n.", NULL, PT_EFORMAT, "byte 0: ", "bad float text");
  EXPECT_LIT("V\\u12\n.", NULL, PT_EFORMAT, "byte 0: ", "truncated \\u escape");
  EXPECT_LIT("V\\u12zz\n.", NULL, PT_EFORMAT, "byte 0: ", "bad hex digit");
  EXPECT_LIT("V\\U00110000\n.", NULL, PT_EFORMAT, "byte 0: ", "out of range");
  EXPECT_LIT("NI12", NULL, PT_EFORMAT, "byte 1: ", "no terminating newline");
  /* POP with nothing above the top mark drops the mark, as CPython does */
  pt_pickle *p = parse_ok(LIT("N(0."));
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  CU_ASSERT(is_none(pt_pickle_root(p)));
  pt_pickle_free(p);
  /* bytes after STOP are ignored, as pickle.loads ignores them */
  p = parse_ok(LIT("K\x2a.garbage\x63"));
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  CU_ASSERT(is_int(pt_pickle_root(p), 42));
  pt_pickle_free(p);
}

static void test_helpers(void) {
  pt_pickle *p = parse_ok(LIT("\x80\x02(K\x01U\x01" "a\x85X\x00\x00\x00\x00\x89l."));
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const pt_pyobj *l = pt_pickle_root(p);
  CU_ASSERT_FATAL(is_type(l, PT_PY_LIST, 4));
  CU_ASSERT(is_int(pt_py_index(l, 0), 1));
  CU_ASSERT(is_type(pt_py_index(l, 1), PT_PY_TUPLE, 1));
  CU_ASSERT(pt_py_is_str(pt_py_index(pt_py_index(l, 1), 0), "a"));
  CU_ASSERT(pt_py_is_str(pt_py_index(l, 2), ""));
  CU_ASSERT(!pt_py_is_str(pt_py_index(l, 2), "x"));
  CU_ASSERT(!pt_py_is_str(pt_py_index(l, 0), ""));
  CU_ASSERT(is_bool(pt_py_index(l, 3), 0));
  CU_ASSERT_PTR_NULL(pt_py_index(l, 4)); /* out of range */
  CU_ASSERT_PTR_NULL(pt_py_index(l, SIZE_MAX));
  CU_ASSERT_PTR_NULL(pt_py_get(l, "a"));       /* not a dict */
  CU_ASSERT_PTR_NULL(pt_py_index(NULL, 0));
  CU_ASSERT_PTR_NULL(pt_py_get(NULL, "a"));
  CU_ASSERT_EQUAL(pt_py_len(NULL), 0);
  CU_ASSERT_EQUAL(pt_py_len(pt_py_index(l, 0)), 0);
  CU_ASSERT(!pt_py_is_str(NULL, ""));
  pt_pickle_free(p);
  CU_ASSERT_PTR_NULL(pt_pickle_root(NULL));
  pt_pickle_free(NULL);

  pt_err e;
  CU_ASSERT_EQUAL(pt_pickle_parse(LIT("N."), "x", NULL, &e, NULL), PT_EUSAGE);
  p = (pt_pickle *)&e;
  CU_ASSERT_EQUAL(pt_pickle_parse(NULL, 3, "x", NULL, &e, &p), PT_EUSAGE);
  CU_ASSERT_PTR_NULL(p);
  /* no name, no err: still a clean failure */
  CU_ASSERT_EQUAL(pt_pickle_parse(LIT("c"), NULL, NULL, NULL, &p), PT_EFORBID);
  CU_ASSERT_PTR_NULL(p);
  CU_ASSERT_EQUAL(pt_pickle_parse(LIT("c"), NULL, NULL, &e, &p), PT_EFORBID);
  CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "pickle: byte 0: forbidden opcode GLOBAL"));
}


/* ---- streaming ------------------------------------------------------------- */

/* A pickle written opcode by opcode as CPython writes a snapshot (protocol 4):
 * {"segments": [], "device_traces": [[entry, ...]]} where entry i is
 * {"action": <new str>, "addr": i, "frames": [frame dicts]}, the K frame dicts
 * shared (fetched again through the memo), and entry 1 with a key "prev"
 * holding entry 0's dict itself (a GET of a streamed item). */
typedef struct pbuf {
  uint8_t *b;
  size_t len, cap;
  uint32_t memo;
} pbuf;

static void pb(pbuf *w, const void *s, size_t n) {
  if (w->len + n > w->cap) {
    w->cap = (w->len + n) * 2;
    w->b = realloc(w->b, w->cap);
  }
  memcpy(w->b + w->len, s, n);
  w->len += n;
}
static void pb_op(pbuf *w, uint8_t c) { pb(w, &c, 1); }
static uint32_t pb_memo(pbuf *w) { pb_op(w, 0x94); return w->memo++; }
static void pb_get(pbuf *w, uint32_t i) {
  pb_op(w, 'j');
  uint8_t le4[4] = {(uint8_t)i, (uint8_t)(i >> 8), (uint8_t)(i >> 16), (uint8_t)(i >> 24)};
  pb(w, le4, 4);
}
static uint32_t pb_str(pbuf *w, const char *s) {
  pb_op(w, 0x8c);
  pb_op(w, (uint8_t)strlen(s));
  pb(w, s, strlen(s));
  return pb_memo(w);
}
static void pb_int(pbuf *w, uint32_t v) {
  pb_op(w, 'J');
  uint8_t le4[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
  pb(w, le4, 4);
}

#define S_K 8 /* frames per entry */

static pbuf snapshot_stream(size_t n) {
  pbuf w = {0};
  pb(&w, "\x80\x04}", 3);
  pb_memo(&w);
  pb_op(&w, '(');
  pb_str(&w, "segments");
  pb_op(&w, ']');
  pb_memo(&w);
  pb_str(&w, "device_traces");
  pb_op(&w, ']');
  pb_memo(&w);
  pb_op(&w, ']');
  pb_memo(&w);
  uint32_t k_action = 0, k_addr = 0, k_frames = 0, k_file = 0, frame[S_K], prev = 0;
  for (size_t i = 0; i < n; i++) {
    if (i % 1000 == 0) pb_op(&w, '(');
    pb_op(&w, '}');
    uint32_t me = pb_memo(&w);
    pb_op(&w, '(');
    if (i) pb_get(&w, k_action); else k_action = pb_str(&w, "action");
    pb_str(&w, i % 2 ? "free_completed" : "alloc");
    if (i) pb_get(&w, k_addr); else k_addr = pb_str(&w, "addr");
    pb_int(&w, (uint32_t)i);
    if (i) pb_get(&w, k_frames); else k_frames = pb_str(&w, "frames");
    pb_op(&w, ']');
    pb_memo(&w);
    pb_op(&w, '(');
    for (int f = 0; f < S_K; f++) {
      if (i) {
        pb_get(&w, frame[f]);
        continue;
      }
      pb_op(&w, '}');
      frame[f] = pb_memo(&w);
      pb_op(&w, '(');
      if (f) pb_get(&w, k_file); else k_file = pb_str(&w, "filename");
      char name[32];
      snprintf(name, sizeof name, "/src/f%d.py", f);
      pb_str(&w, name);
      pb_op(&w, 'u');
    }
    pb_op(&w, 'e');
    if (i == 1) {
      pb_str(&w, "prev");
      pb_get(&w, prev);
    }
    pb_op(&w, 'u');
    prev = me;
    if (i % 1000 == 999 || i == n - 1) pb_op(&w, 'e');
  }
  pb(&w, "au.", 3); /* the device's list into device_traces; the top dict's items; STOP */
  return w;
}

typedef struct stream_ctx {
  const uint8_t *buf;
  size_t len, pos;
  size_t items, bad, fail_at;
  int rewinds, pipe; /* pipe: rewind fails, as gzrewind does on a pipe */
} stream_ctx;

static long sc_read(void *ctx, void *buf, size_t n, pt_err *err) {
  (void)err;
  stream_ctx *c = ctx;
  if (n > c->len - c->pos) n = c->len - c->pos;
  if (n > 4096) n = 4096; /* small reads: the window refills often */
  memcpy(buf, c->buf + c->pos, n);
  c->pos += n;
  return (long)n;
}

static int sc_rewind(void *ctx, pt_err *err) {
  stream_ctx *c = ctx;
  if (c->pipe) return pt_err_set(err, PT_EIO, "a pipe");
  c->pos = 0;
  c->rewinds++;
  return 0;
}

static int sc_item(void *ctx, size_t list, size_t index, const pt_pyobj *e, pt_err *err) {
  stream_ctx *c = ctx;
  if (c->fail_at && index == c->fail_at) return pt_err_set(err, PT_EFORMAT, "stop at %zu", index);
  const pt_pyobj *addr = pt_py_get(e, "addr"), *fr = pt_py_get(e, "frames"), *prev = pt_py_get(e, "prev");
  int ok = list == 0 && index == c->items && is_int(addr, (int64_t)index) &&
           pt_py_is_str(pt_py_get(e, "action"), index % 2 ? "free_completed" : "alloc") &&
           pt_py_len(fr) == S_K && pt_py_is_str(pt_py_get(pt_py_index(fr, 3), "filename"), "/src/f3.py");
  if (index == 1) ok = ok && is_int(pt_py_get(prev, "addr"), 0);
  else ok = ok && !prev;
  if (!ok) c->bad++;
  c->items++;
  return 0;
}

/* rewind: 0 none, 1 one that works, 2 one that fails (a pipe) */
static pt_pickle *stream(const pbuf *w, stream_ctx *c, int rewind, int *rc) {
  memset(c, 0, sizeof *c);
  c->buf = w->b;
  c->len = w->len;
  c->pipe = rewind == 2;
  pt_pickle_source src = {.read = sc_read, .rewind = rewind ? sc_rewind : NULL, .ctx = c,
                          .stream_key = "device_traces", .item = sc_item, .item_ctx = c};
  pt_err e = {{0}};
  pt_pickle *p = NULL;
  *rc = pt_pickle_parse_stream(&src, "s.pkl", NULL, &e, &p);
  if (*rc) fprintf(stderr, "\nstream: %s\n", e.msg);
  return p;
}

static void test_stream_items(void) {
  const size_t N = 50000;
  pbuf w = snapshot_stream(N);
  stream_ctx c;
  int rc;
  for (int rewind = 0; rewind < 3; rewind++) {
    pt_pickle *p = stream(&w, &c, rewind, &rc);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(c.items, N);
    CU_ASSERT_EQUAL(c.bad, 0);
    CU_ASSERT_EQUAL(c.rewinds, rewind == 1 ? 2 : 0); /* one to ask, one after the first pass */
    const pt_pyobj *dt = pt_py_get(pt_pickle_root(p), "device_traces");
    CU_ASSERT_EQUAL(pt_py_len(dt), 1);
    CU_ASSERT_EQUAL(pt_py_streamed(pt_py_index(dt, 0)), N);
    CU_ASSERT_EQUAL(pt_py_len(pt_py_index(dt, 0)), 0); /* the items went to the callback */
    pt_pickle_free(p);
  }
  /* the same bytes parsed whole: the same items in the tree */
  pt_pickle *p = parse_ok(w.b, w.len);
  const pt_pyobj *l = pt_py_index(pt_py_get(pt_pickle_root(p), "device_traces"), 0);
  CU_ASSERT_EQUAL(pt_py_len(l), N);
  CU_ASSERT(is_int(pt_py_get(pt_py_index(l, N - 1), "addr"), (int64_t)N - 1));
  pt_pickle_free(p);
  /* the memo limit counts the entries kept: streamed with the first pass, the few fetched again */
  pt_pickle_limits lim = {.max_memo = 100};
  for (int rewind = 0; rewind < 2; rewind++) {
    memset(&c, 0, sizeof c);
    c.buf = w.b;
    c.len = w.len;
    pt_pickle_source ls = {.read = sc_read, .rewind = rewind ? sc_rewind : NULL, .ctx = &c,
                           .stream_key = "device_traces", .item = sc_item, .item_ctx = &c};
    pt_err le = {{0}};
    rc = pt_pickle_parse_stream(&ls, "s.pkl", &lim, &le, &p);
    CU_ASSERT_EQUAL(rc, rewind ? 0 : PT_ELIMIT);
    if (!rewind) CU_ASSERT_PTR_NOT_NULL(strstr(le.msg, "memo larger than the limit of 100"));
    pt_pickle_free(p);
  }
  /* an error from the callback stops the parse with it */
  memset(&c, 0, sizeof c);
  c.buf = w.b;
  c.len = w.len;
  c.fail_at = 777;
  pt_pickle_source src = {.read = sc_read, .rewind = sc_rewind, .ctx = &c, .stream_key = "device_traces",
                          .item = sc_item, .item_ctx = &c};
  pt_err e = {{0}};
  CU_ASSERT_EQUAL(pt_pickle_parse_stream(&src, "s.pkl", NULL, &e, &p), PT_EFORMAT);
  CU_ASSERT_PTR_NULL(p);
  CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "stop at 777"));
  CU_ASSERT_EQUAL(c.items, 777);
  free(w.b);
}

/* What streaming holds: with the first pass, the memo keeps the entries a
 * GET fetches (here the first entry, and the frames), so memory stays flat as the
 * pickle grows; without it, every memoized entry stays; parsed whole, the
 * tree holds everything. */
static void test_stream_memory(void) {
  size_t peak[2][3];
  for (int k = 0; k < 2; k++) {
    pbuf w = snapshot_stream(k ? 80000 : 20000);
    stream_ctx c;
    int rc;
    for (int rewind = 0; rewind < 2; rewind++) {
      pt_pickle *p = stream(&w, &c, rewind, &rc);
      peak[k][rewind] = pt_pickle_peak_bytes(p);
      pt_pickle_free(p);
    }
    pt_pickle *p = parse_ok(w.b, w.len);
    peak[k][2] = pt_pickle_peak_bytes(p);
    pt_pickle_free(p);
    free(w.b);
  }
  fprintf(stderr, " [peak bytes, 20k / 80k entries: two passes %zu / %zu, one %zu / %zu, whole %zu / %zu]",
          peak[0][1], peak[1][1], peak[0][0], peak[1][0], peak[0][2], peak[1][2]);
  CU_ASSERT(peak[1][1] < peak[0][1] + peak[0][1] / 4); /* flat: 4x the entries, < 1.25x the bytes */
  CU_ASSERT(peak[1][0] > 3 * peak[0][0]);              /* one pass keeps every memoized entry */
  CU_ASSERT(peak[1][2] > 3 * peak[0][2]);
  CU_ASSERT(20 * peak[1][1] < peak[1][2]);
}

int pt_test_add_pickle(void) {
  CU_pSuite s = CU_add_suite("pickle", NULL, NULL);
  if (!s) return CU_get_error();
  CU_add_test(s, "protocol 2 nested values and memo", test_protocol2);
  CU_add_test(s, "protocol 4 frames, MEMOIZE, bytes, sets", test_protocol4);
  CU_add_test(s, "protocol 0 text opcodes", test_protocol0_text);
  CU_add_test(s, "binary string and bytes opcodes", test_binary_strings);
  CU_add_test(s, "containers, DUP, POP_MARK, memo overwrite", test_containers);
  CU_add_test(s, "snapshot-shaped pickle", test_snapshot_shape);
  CU_add_test(s, "self-referencing list", test_cycle);
  CU_add_test(s, "forbidden and unknown opcodes", test_forbidden_opcodes);
  CU_add_test(s, "every truncation fails", test_truncated);
  CU_add_test(s, "memo: bad, sparse and limited indices", test_bad_memo);
  CU_add_test(s, "million-deep nesting through the stack", test_deep_stack);
  CU_add_test(s, "million-deep chain through the memo", test_deep_memo_chain);
  CU_add_test(s, "huge and negative lengths", test_huge_lengths);
  CU_add_test(s, "integers at and past 64 bits", test_wide_ints);
  CU_add_test(s, "duplicate dict keys: last wins", test_duplicate_keys);
  CU_add_test(s, "structural errors", test_structure_errors);
  CU_add_test(s, "path helpers and usage errors", test_helpers);
  CU_add_test(s, "streamed items: each once, in order, with what the memo fetches", test_stream_items);
  CU_add_test(s, "streamed memory: flat with the first pass", test_stream_memory);
  return CU_get_error();
}
