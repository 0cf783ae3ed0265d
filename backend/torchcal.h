/*
 * torchcal.h — PyTorch's own allocators timed through torch: a cached
 * allocate + free pair at each size of a plan (calibrate.h), for the
 * native, expandable and cudaMallocAsync backends.
 *
 * backend/calibrate_torch.py does the timing, in child processes of an
 * interpreter the caller names (python3 by default): one that probes
 * (does torch import, does it see a GPU), one that builds the C++ extension
 * into a directory kept between runs, then one per backend with
 * PYTORCH_CUDA_ALLOC_CONF set before torch starts (the allocator reads it
 * when CUDA initialises, so each backend needs a fresh process).  Each child
 * prints one JSON line, the last of its standard output, read here with
 * the strict reader (jsonread.h); each runs in a process group of its own
 * under a time limit, and the group is killed when the limit passes (a
 * build's compilers with it).  The children get PAGETUNE_DISABLE=1, so an
 * image's start-up hook does not put pagetune's library in PyTorch's place,
 * and PYTORCH_ALLOC_CONF unset, so PYTORCH_CUDA_ALLOC_CONF alone decides.
 *
 * Outcomes: torch that does not import or sees no GPU is not an error (the
 * result says why nothing was measured); a C++ extension that does not
 * build means timing from Python instead (torch.empty + del), saying why;
 * anything else (a child that crashes, prints no JSON, passes its time or
 * is not running the backend it was asked for) is an error naming the
 * backend, the step and the reason.
 */
#ifndef PT_TORCHCAL_H
#define PT_TORCHCAL_H

#include <stddef.h>

#include "calibrate.h"
#include "error.h"
#include "jsonread.h"

typedef struct pt_torchcal_cfg {
  const char *python;     /* the interpreter: a path, or a name looked up in PATH */
  const char *script;     /* calibrate_torch.py */
  const char *build_dir;  /* where the C++ extension is built and kept (TORCH_EXTENSIONS_DIR too) */
  double timeout_s;       /* each child's limit, seconds */
  const pt_cal_plan *plan;
  int noisy;              /* progress on stderr */
} pt_torchcal_cfg;

/* A PyTorch allocator backend: its name in the description, its PYTORCH_CUDA_ALLOC_CONF, what
   torch.cuda.get_allocator_backend() says under it, and whether its segments are expandable. */
typedef struct pt_torchcal_backend {
  const char *name, *conf, *allocator;
  int expandable;
} pt_torchcal_backend;

/* native (backend:native), expandable (expandable_segments:True), cudaMallocAsync (backend:cudaMallocAsync). */
extern const pt_torchcal_backend pt_torchcal_backends[PT_CAL_NTORCH];

/* Probe, build, and measure every backend into *t (see above); 0 also when torch was not there (t->measured 0). */
int pt_torchcal_run(const pt_torchcal_cfg *c, pt_cal_torch *t /* OUT */, pt_err *err);

/* The build directory: dir, or TMPDIR's (else /tmp's) pagetune-torch-ext-UID; made (mode 0700) when missing, and
   refused unless it is a directory of this user's that no one else may write. */
int pt_torchcal_build_dir(const char *dir, char *out /* OUT */, size_t n, pt_err *err);

/* ---- the steps, for tests ---------------------------------------------------- */

/*
 * `python script ARGS...` (args ends with NULL) with PYTORCH_CUDA_ALLOC_CONF=conf (NULL: unset): 0 with the
 * child's result line parsed (free with pt_jr_free), or PT_EIO / PT_EFORMAT with err saying what happened: could
 * not start, timed out, exited with a status and no JSON (its last line on stderr), printed no JSON (its last
 * line), or the "error" its JSON gave.
 */
int pt_torchcal_exec(const pt_torchcal_cfg *c, const char *conf, const char *const *args, pt_jr_doc **doc /* OUT */,
                     pt_err *err);
/* A measure result (the root of its line) for backend b into s: every size of plan there, times positive and
   finite, and the allocator the one b names; err says which member is wrong and where. */
int pt_torchcal_parse_measure(const pt_jr_val *root, const pt_torchcal_backend *b, const pt_cal_plan *plan,
                              pt_cal_series *s /* OUT */, pt_err *err);

#endif
