/*
 * paramjson.h — a run's parameters as JSON, written and read in one place.
 *
 * The text is part of the store's key for a run (store.h: params_json is
 * compared as text), so a resumed sweep finds its runs only while this
 * writer's output stays byte for byte what it was: {"name":VALUE,...} with
 * numbers as %.17g and an unlimited value (inf) as null, no spaces; a list
 * (mech.h: PyTorch's per-interval table) as an array of its numbers, so
 * every number's text stays what it was.  The
 * store's key lists the names sorted; `pagetune sim --json` keeps the order
 * the policy declared them in.  Names are identifiers (policy.c checks), so
 * they need no escapes.
 */
#ifndef PT_PARAMJSON_H
#define PT_PARAMJSON_H

#include <stddef.h>

#include "error.h"
#include "mech.h"

/* Room for any pt_params: 32 members of "name":[16 numbers like -1.2345678901234567e-308] and the braces
   (the store takes 1023 bytes of it). */
#define PT_PARAMS_JSON_MAX (PT_MAX_PARAMS * (PT_PARAM_NAME_MAX + 6 + PT_PARAM_LIST_MAX * 25) + 3)

/* p as JSON into buf (n bytes), names sorted when `sorted`; PT_ELIMIT when it does not fit (never with PT_PARAMS_JSON_MAX). */
int pt_params_json(const pt_params *p, int sorted, char *buf, size_t n);

/* One member of a flat JSON object, as written (a string's text without its quotes, escapes kept). */
typedef enum pt_pj_kind { PT_PJ_NUMBER, PT_PJ_NULL, PT_PJ_BOOL, PT_PJ_STRING, PT_PJ_ARRAY } pt_pj_kind;
typedef struct pt_pj_member {
  const char *key;
  size_t keylen;
  pt_pj_kind kind;
  const char *text; /* the value as written */
  size_t len;
  double num;       /* PT_PJ_NUMBER: its value */
  pt_plist list;    /* PT_PJ_ARRAY: its numbers (at most PT_PARAM_LIST_MAX; more is PT_EFORMAT) */
} pt_pj_member;

/*
 * Walk a flat JSON object (the store's params_json), calling fn for each
 * member in order; fn returns 0 to go on or a negative code that stops the
 * walk and is returned.  PT_EFORMAT when json is not a flat object.
 */
int pt_params_json_walk(const char *json, int (*fn)(void *ctx, const pt_pj_member *m), void *ctx);

/* The parameters the writer wrote, back (null as inf); PT_EFORMAT when json is not such an object. */
int pt_params_from_json(const char *json, pt_params *out /* OUT */);

#endif
