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
 * (pt_mech_check_params); no hooks=policy (the library runs no Lua: an export
 * made before hooks became tables).  In the JSON form the conf's mechanism=
 * and capacity= must agree with the file's own keys.
 *
 * A policy whose hooks were resolved into tables (sim/work/hooktab.h) is
 * exported with hooks=tables in the conf and the tables in the file's
 * "hook_tables": {"round": [...], "segment_size": [...]} (either may be
 * absent), each a list of pieces [LO, HI, "const", C], [LO, HI, "identity"]
 * or [LO, HI, "round_up", M] (sizetable.h): whole numbers, pieces sorted and
 * contiguous from 1 to 2^50, at most PT_SIZETAB_MAX_PIECES; an error names
 * the piece's line and column.  hooks=tables and "hook_tables" come together
 * or not at all; the tables travel only in the JSON form, so hooks=tables
 * in PAGETUNE_ALLOC_CONF is refused.  An export whose "pagetune_library" is null (a run PyTorch's own
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
#include "sizetable.h"

#define PT_LIBCONF_NAME_MAX 64 /* a policy's name, for messages: at most 63 bytes */

typedef struct pt_libconf {
  const pt_mech_ops *mech;             /* the mechanism to run (pt_mech_find) */
  char policy[PT_LIBCONF_NAME_MAX];    /* the policy's name, for messages; "" when not given */
  pt_params params;                    /* the mechanism's parameters, checked */
  uint64_t capacity;                   /* the cap in bytes; 0: none */
  uint64_t device_total_bytes;         /* the device's memory the run was tuned on; 0: unknown */
  pt_sizetab_set tables;               /* the policy's hooks as tables (n == 0: that hook absent) */
} pt_libconf;

/* The export JSON at path (at most PT_JR_MAX_BYTES). */
int pt_libconf_load(const char *path, pt_libconf *out /* OUT */, pt_err *err);
/* The export JSON in text[0..len); name is what messages call it. */
int pt_libconf_parse(const char *text, size_t len, const char *name, pt_libconf *out /* OUT */, pt_err *err);
/* A PAGETUNE_ALLOC_CONF value; messages name PAGETUNE_ALLOC_CONF. */
int pt_libconf_from_conf_string(const char *conf, pt_libconf *out /* OUT */, pt_err *err);
/* c as a PAGETUNE_ALLOC_CONF value (mechanism=, policy= when named, capacity= when capped, then the parameters,
   numbers as %.17g, and hooks=tables when c has tables) that reads back the same (a policy name holding ',' or '='
   excepted; with tables, only beside the JSON that holds them); PT_ELIMIT when it does not fit in n bytes.  What a
   recorded trace's @settings says. */
int pt_libconf_to_conf_string(const pt_libconf *c, char *buf, size_t n);

#endif
