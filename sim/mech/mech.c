/* mech.c — the mechanism registry and parameter sets (see mech.h). */
#include "mech.h"

#include "bset.h"

#include <stdio.h>
#include <string.h>

static const pt_mech_ops *const all[] = {&pt_mech_direct, &pt_mech_caching, &pt_mech_expandable,
                                         &pt_mech_async_pool, &pt_mech_stitch};

const pt_mech_ops *pt_mech_find(const char *name) {
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (!strcmp(all[i]->name, name)) return all[i];
  return NULL;
}

const char *pt_mech_names(void) { return "direct, caching, expandable, async_pool, stitch"; }

double pt_params_get(const pt_params *p, const char *name, double dflt) {
  for (int i = 0; i < p->n; i++)
    if (!strcmp(p->v[i].name, name)) return p->v[i].value;
  return dflt;
}

int pt_params_set(pt_params *p, const char *name, double value) {
  for (int i = 0; i < p->n; i++)
    if (!strcmp(p->v[i].name, name)) {
      p->v[i].value = value;
      return 0;
    }
  if (p->n == PT_MAX_PARAMS || strlen(name) >= PT_PARAM_NAME_MAX) return PT_ELIMIT;
  snprintf(p->v[p->n].name, PT_PARAM_NAME_MAX, "%s", name);
  p->v[p->n].value = value;
  p->n++;
  return 0;
}

void pt_mech_set_insert(const pt_mech_env *env, pt_bset *s, pt_bnode *n) {
  if (pt_bset_insert(s, n) < 0 && !env->dev->error)
    env->dev->error = pt_err_set(env->err, PT_ENOMEM, "out of memory (free-block set)");
}
