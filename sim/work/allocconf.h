/*
 * allocconf.h — a PYTORCH_CUDA_ALLOC_CONF value read as PyTorch 2.11 reads
 * it, once, for every command that takes one: lint checks it, sim --conf
 * simulates it.  The rules are 2.11's allocator-config parser (c10's
 * AllocatorConfig / CUDAAllocatorConfig): the string is split into entries
 * at top-level commas, spaces dropped, each entry KEY:VALUE, each key
 * checked by its own rule (a list value by pt_param_value_parse, mech.h).
 * What it finds is data (key, severity, message): errors are what PyTorch
 * refuses; callers add their own findings (cross-key warnings, notes) to the
 * same list.  Accepted values are kept, spaces dropped, by key.
 */
#ifndef PT_ALLOCCONF_H
#define PT_ALLOCCONF_H

#include <stdio.h>

#define PT_CONF_TORCH "2.11"    /* the one version measured here */
#define PT_CONF_MAXFIND 64      /* findings kept; past it they are counted */
#define PT_CONF_VALUE_MAX 256

typedef enum { PT_CONF_ERROR, PT_CONF_WARNING, PT_CONF_NOTE } pt_conf_sev;
extern const char *const pt_conf_sev_names[]; /* "error", "warning", "note" */

typedef struct pt_conf_finding {
  char key[48];
  pt_conf_sev sev;
  char msg[256];
} pt_conf_finding;

typedef struct pt_conf {
  pt_conf_finding f[PT_CONF_MAXFIND];
  int n, dropped;
  int errors, warnings;                /* over all findings, kept or dropped */
  unsigned seen, ok;                   /* bit per key (pt_conf_key): given; given with a value PyTorch accepts */
  unsigned toolong;                    /* ... accepted, but longer than PT_CONF_VALUE_MAX - 1 bytes: not kept */
  char value[16][PT_CONF_VALUE_MAX];   /* the accepted value of each key, spaces dropped */
  int async;                           /* backend:cudaMallocAsync */
  int expandable;                      /* expandable_segments:True */
  int has_fraction;                    /* per_process_memory_fraction given and accepted */
  double fraction;
} pt_conf;

/* The keys 2.11 accepts, by index (pt_conf_key's). */
enum {
  PT_CK_BACKEND, PT_CK_MAX_SPLIT, PT_CK_NON_SPLIT, PT_CK_GC, PT_CK_RP2, PT_CK_EXPANDABLE, PT_CK_RELEASE_LOCK,
  PT_CK_PINNED_REG, PT_CK_PINNED_THREADS, PT_CK_LARGE_SEGMENT, PT_CK_FRACTION, PT_CK_PINNED_BG, PT_CK_PINNED_RESERVE,
  PT_CK_GRAPH_REUSE, PT_CK_N
};

/* The keys 2.11 accepts, by index; -1 for a name it does not. */
int pt_conf_key(const char *name);
const char *pt_conf_key_name(int k);
int pt_conf_nkeys(void);
/* 1 for a native-allocator knob, which backend:cudaMallocAsync ignores. */
int pt_conf_key_native(int k);

/* Read conf (var names it in findings about the whole string) into c, zeroed by the caller (its own findings may come first). */
void pt_conf_read(pt_conf *c, const char *conf, const char *var);
/* The accepted value of key name, or NULL when not given or refused. */
const char *pt_conf_value(const pt_conf *c, const char *name);
/* A finding of the caller's. */
void pt_conf_add(pt_conf *c, const char *key, pt_conf_sev sev, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/*
 * What a read conf means to the model: the bundled policy that models it
 * (backend:cudaMallocAsync: cuda_async; expandable_segments:True:
 * pytorch_expandable; else pytorch_native) and the NAME=VALUE assignments of
 * its knobs on that policy (the list form too; large_segment_size_mb under
 * expandable segments).  Each other key given is a finding: a note where it
 * changes nothing the model runs (ignored: a lock, host memory, a native
 * knob under cudaMallocAsync; its bit in *ignored), a warning where it
 * would and the model does not model it (its bit in *unmodelled).
 * per_process_memory_fraction is the caller's (a cap needs the device).
 * PT_EFORMAT, one line naming the key, where PyTorch refuses the value or
 * pagetune did not keep it (too long); its message starts with what.
 */
#define PT_CONF_SETS 8
typedef struct pt_conf_model {
  const char *policy;
  char sets[PT_CONF_SETS][64 + PT_CONF_VALUE_MAX];
  int nsets;
  unsigned ignored, unmodelled;
} pt_conf_model;
struct pt_err;
int pt_conf_model_of(pt_conf *c, const char *what, pt_conf_model *out /* OUT */, struct pt_err *err);

/* The PYTORCH_CUDA_ALLOC_CONF value a trace's settings line records ("...;PYTORCH_CUDA_ALLOC_CONF=VALUE;...", as
   the importer writes a snapshot's allocator_settings) into conf: 1, or 0 when none is recorded (or it is longer
   than n - 1 bytes). */
int pt_conf_of_settings(const char *settings, char *conf, size_t n);

/* The kept findings, one a line "PREFIXSEVERITY: KEY: message" (control characters as '?'), then how many were not kept. */
void pt_conf_findings_text(FILE *f, const char *prefix, const pt_conf *c);
/* The kept findings as a JSON array of {key, severity, message}. */
void pt_conf_findings_json(FILE *f, const pt_conf *c);

#endif
