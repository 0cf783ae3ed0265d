/*
 * sha256.h — SHA-256 (FIPS 180-4), for content hashes: traces and policy
 * texts are identified in the store by the hash of what they hold.
 */
#ifndef PT_SHA256_H
#define PT_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct pt_sha256 {
  uint32_t h[8];
  uint64_t len;        /* bytes hashed so far */
  unsigned char buf[64];
  size_t nbuf;
} pt_sha256;

void pt_sha256_init(pt_sha256 *s);
void pt_sha256_update(pt_sha256 *s, const void *data, size_t len);
void pt_sha256_final_hex(pt_sha256 *s, char out[65]);
/* One-shot: hex digest of data. */
void pt_sha256_hex(const void *data, size_t len, char out[65]);

#endif
