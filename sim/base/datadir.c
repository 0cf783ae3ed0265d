/* datadir.c — the search path of the bundled policies and GPU descriptions (see datadir.h). */
#include "datadir.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef PT_DATADIR
#define PT_DATADIR "/usr/local/share/pagetune"
#endif

/* Per kind: the variable, the folder under a build (or source) tree, under the data dir, the suffix. */
static const struct {
  const char *var, *build, *installed, *suffix;
} kinds[] = {
    [PT_DATA_POLICIES] = {"PAGETUNE_POLICY_DIR", "policies", PT_DATADIR "/policies", ".lua"},
    [PT_DATA_GPUS] = {"PAGETUNE_GPU_DIR", "sim/gpus", PT_DATADIR "/gpus", ".gpu"},
};

const char *pt_datadir_program(char *buf, size_t n) {
  ssize_t len = readlink("/proc/self/exe", buf, n - 1);
  buf[len > 0 ? len : 0] = 0;
  char *slash = strrchr(buf, '/');
  if (slash) *slash = 0;
  else buf[0] = 0;
  return buf;
}

/* dir holds config.status: the top of a build tree. */
static int is_build_top(const char *dir) {
  char status[4200];
  snprintf(status, sizeof status, "%s/config.status", dir);
  return access(status, R_OK) == 0;
}

int pt_datadir_dirs(pt_data_kind kind, char dirs[PT_DATA_MAX_DIRS][4096]) {
  int nd = 0;
  const char *env = getenv(kinds[kind].var);
  if (env && *env) snprintf(dirs[nd++], 4096, "%s", env);
  char exe[4096], top[4096 + 4] = "";
  if (*pt_datadir_program(exe, sizeof exe)) {
    if ((size_t)snprintf(dirs[nd], 4096, "%s/%s", exe, kinds[kind].build) < 4096) nd++;
    if (is_build_top(exe)) snprintf(top, sizeof top, "%s", exe);
    else if (snprintf(top, sizeof top, "%s/..", exe), is_build_top(top)) /* a test program in tests/ */
      (void)(snprintf(dirs[nd], 4096, "%s/%s", top, kinds[kind].build) < 4096 && nd++);
    else top[0] = 0;
  }
#ifdef PT_ABS_SRCDIR
  char real[PATH_MAX], src[PATH_MAX];
  if (top[0] && realpath(top, real) && realpath(PT_ABS_SRCDIR, src) && strcmp(real, src) &&
      strlen(src) + strlen(kinds[kind].build) + 2 <= 4096) /* a build tree outside its sources: the sources' data */
    nd += snprintf(dirs[nd], 4096, "%s/%s", src, kinds[kind].build) > 0;
#endif
  snprintf(dirs[nd++], 4096, "%s", kinds[kind].installed);
  return nd;
}

int pt_datadir_find(pt_data_kind kind, const char *name, char *buf, size_t n) {
  char dirs[PT_DATA_MAX_DIRS][4096];
  int nd = pt_datadir_dirs(kind, dirs);
  for (int i = 0; i < nd; i++)
    if ((size_t)snprintf(buf, n, "%s/%s%s", dirs[i], name, kinds[kind].suffix) < n && access(buf, R_OK) == 0) return 0;
  if (n) buf[0] = 0;
  return -1;
}

const char *pt_datadir_looked(pt_data_kind kind, char *buf, size_t n) {
  char dirs[PT_DATA_MAX_DIRS][4096];
  int nd = pt_datadir_dirs(kind, dirs), first = 0;
  const char *env = getenv(kinds[kind].var);
  size_t len;
  if (env && *env) len = (size_t)snprintf(buf, n, "%s ($%s)", dirs[first++], kinds[kind].var);
  else len = (size_t)snprintf(buf, n, "$%s (unset)", kinds[kind].var);
  for (int i = first; i < nd && len < n; i++) len += (size_t)snprintf(buf + len, n - len, ", %s", dirs[i]);
  return buf;
}

int pt_datadir_is_path(pt_data_kind kind, const char *arg) {
  size_t l = strlen(arg), sl = strlen(kinds[kind].suffix);
  return strchr(arg, '/') || (l >= sl && !strcmp(arg + l - sl, kinds[kind].suffix));
}
