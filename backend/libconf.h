/*
 * libconf.h — the configuration of pagetune's allocator library for PyTorch:
 * which mechanism it runs, with which parameters, under which cap.
 *
 * Read from the JSON file `pagetune export --format json` writes (its
 * "mechanism", "policy", "capacity", "device_total_bytes", and
 * "pagetune_library": {"conf": "mechanism=stitch,policy=stitch,..."}), or
 * from a PAGETUNE_ALLOC_CONF-style string ("mechanism=caching,
 * max_split_size_mb=64").  libc only: the library is loaded into PyTorch.
 *
 * A configuration is checked whole before it is used: a known mechanism;
 * each key once; every value a number (decimal; inf and infinity allowed)
 * except mechanism= and policy=; capacity= a whole number of bytes; every
 * parameter one the mechanism declares (or device_total_bytes), in its range
 * (pt_mech_check_params); no hooks=policy (the library runs no Lua).  In the
 * JSON form the conf's mechanism= and capacity= must agree with the file's
 * own keys.  An export whose "pagetune_library" is null (a run PyTorch's own
 * allocator can express) is read from "mechanism" and "pytorch_alloc_conf"
 * (PyTorch's "key:value" list), for keys that are the mechanism's numeric
 * parameters, backend and expandable_segments.
 *
 * Errors are one line naming the file (or PAGETUNE_ALLOC_CONF), the position
 * (line and column of the JSON value; the character within a conf string)
 * and the reason.
 */
#ifndef PT_LIBCONF_H
#define PT_LIBCONF_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "mech.h"

#define PT_LIBCONF_NAME_MAX 64 /* a policy's name, for messages: at most 63 bytes */

typedef struct pt_libconf {
  const pt_mech_ops *mech;             /* the mechanism to run (pt_mech_find) */
  char policy[PT_LIBCONF_NAME_MAX];    /* the policy's name, for messages; "" when not given */
  pt_params params;                    /* the mechanism's parameters, checked */
  uint64_t capacity;                   /* the cap in bytes; 0: none */
  uint64_t device_total_bytes;         /* the device's memory the run was tuned on; 0: unknown */
} pt_libconf;

/* The export JSON at path (at most PT_JR_MAX_BYTES). */
int pt_libconf_load(const char *path, pt_libconf *out /* OUT */, pt_err *err);
/* The export JSON in text[0..len); name is what messages call it. */
int pt_libconf_parse(const char *text, size_t len, const char *name, pt_libconf *out /* OUT */, pt_err *err);
/* A PAGETUNE_ALLOC_CONF value; messages name PAGETUNE_ALLOC_CONF. */
int pt_libconf_from_conf_string(const char *conf, pt_libconf *out /* OUT */, pt_err *err);
/* c as a PAGETUNE_ALLOC_CONF value (mechanism=, policy= when named, capacity= when capped, then the parameters,
   numbers as %.17g) that reads back the same (a policy name holding ',' or '=' excepted); PT_ELIMIT when it does
   not fit in n bytes.  What a recorded trace's @settings says. */
int pt_libconf_to_conf_string(const pt_libconf *c, char *buf, size_t n);

#endif
