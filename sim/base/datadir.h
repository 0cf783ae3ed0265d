/*
 * datadir.h — where pagetune finds the data it ships: the bundled policies
 * and GPU descriptions.  One search path for every command, whatever the
 * current directory: the folder an environment variable names, then the
 * running program's build tree, then the installed data.  The current
 * directory is never searched: a ./policies/X.lua there does not shadow a
 * bundled policy (a file is used only when named as a path).
 */
#ifndef PT_DATADIR_H
#define PT_DATADIR_H

#include <stddef.h>

/* The kinds of bundled data, each with its variable and its folders. */
typedef enum pt_data_kind {
  PT_DATA_POLICIES, /* NAME.lua: $PAGETUNE_POLICY_DIR, BUILD/policies, DATADIR/policies */
  PT_DATA_GPUS      /* NAME.gpu: $PAGETUNE_GPU_DIR, BUILD/sim/gpus, DATADIR/gpus */
} pt_data_kind;

#define PT_DATA_MAX_DIRS 5

/* The folder the running program lies in (/proc/self/exe), into buf; "" when unknown. */
const char *pt_datadir_program(char *buf, size_t n);

/*
 * The folders searched for kind, in order, into dirs (each 4096 bytes);
 * returns how many.  The build tree is the program's folder, and also the
 * source tree when the program was built elsewhere (config.status beside it).
 */
int pt_datadir_dirs(pt_data_kind kind, char dirs[PT_DATA_MAX_DIRS][4096]);

/* Path of the bundled file NAME + the kind's suffix (.lua, .gpu) into buf: 0, or -1 when none is readable. */
int pt_datadir_find(pt_data_kind kind, const char *name, char *buf, size_t n);

/* Where kind is looked for, for an error message: "$VAR (unset), DIR, DIR", into buf. */
const char *pt_datadir_looked(pt_data_kind kind, char *buf, size_t n);

/* A name that is a path, not a bundled name: it has a '/' or ends in the kind's suffix. */
int pt_datadir_is_path(pt_data_kind kind, const char *arg);

#endif
