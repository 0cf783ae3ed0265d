/*
 * cmd_calibrate.c — pagetune calibrate: what allocation costs on this
 * machine's GPU, measured: the driver calls by size, the allocator's own
 * work per request for each of pagetune's mechanisms, and (for comparison)
 * PyTorch's allocators through torch.  Written as a GPU description (the
 * base one with the measured lines appended) or as JSON, and the driver
 * calls optionally stored.
 */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "calibrate.h"
#include "clock.h"
#include "datadir.h"
#include "driver.h"
#include "file.h"
#include "mech.h"
#include "torchcal.h"
#include "workbench.h"

#define TORCH_SCRIPT "calibrate_torch.py"

typedef struct calibrate_args {
  const char *base, *output, *db, *python, *torch_build;
  unsigned long repeat, batches, pairs, crowd, torch_timeout;
  int json, no_torch;
} calibrate_args;

static const calibrate_args defaults = {.base = "h200", .repeat = 9, .batches = 5, .pairs = 2000, .crowd = 32,
                                        .python = "python3", .torch_timeout = 150};

static const pt_cli_opt calibrate_opts[] = {
    PT_CLI_OPT_STR("base", 0, "NAME", calibrate_args, base, "the description to start from (default h200)"),
    PT_CLI_OPT_ULONG("repeat", "N", calibrate_args, repeat, 1, 64, NULL, "driver calls per size, 1..64 (default 9)"),
    PT_CLI_OPT_ULONG("batches", "N", calibrate_args, batches, 1, 99, NULL,
                     "allocator pairs: timed batches per size, 1..99 (default 5)"),
    PT_CLI_OPT_ULONG("pairs", "N", calibrate_args, pairs, 1, 1000000, NULL,
                     "allocator pairs: pairs a batch at most, 1..1000000\n(default 2000)"),
    PT_CLI_OPT_ULONG("crowd", "N", calibrate_args, crowd, 0, PT_CAL_MAX_CROWD, NULL,
                     "the crowded loop's free blocks, 2..64 (default 32; 0:\nno crowded loop)"),
    PT_CLI_OPT_STR("python", 0, "PY", calibrate_args, python, "the Python that imports torch (default python3)"),
    PT_CLI_OPT_FLAG("no-torch", calibrate_args, no_torch, "leave PyTorch's allocators out"),
    PT_CLI_OPT_STR("torch-build", 0, "DIR", calibrate_args, torch_build,
                   "build and keep the C++ extension there (default\n$TMPDIR or /tmp, pagetune-torch-ext-UID)"),
    PT_CLI_OPT_ULONG("torch-timeout", "S", calibrate_args, torch_timeout, 1, 3600, NULL,
                     "seconds each torch process may take (default 150)"),
    PT_CLI_OPT_STR(NULL, 'o', "FILE", calibrate_args, output, "write the description there (default: standard output)"),
    PT_CLI_OPT_STR("db", 0, "DB", calibrate_args, db,
                   "also store the driver calls' points in DB's calibrations\ntable (docs/store.md)"),
    PT_CLI_OPT_FLAG("json", calibrate_args, json, "everything measured as one JSON object instead"),
    PT_CLI_END};
const pt_cli_table pt_opts_calibrate = {
    "usage: pagetune calibrate [--base NAME] [--repeat N] [--batches N] [--pairs N]\n"
    "                          [--crowd N] [--python PY | --no-torch] [--torch-build DIR] [--torch-timeout S]\n"
    "                          [-o FILE] [--db DB] [--json]\n"
    "\n"
    "Measure what allocation costs on this machine's GPU (device 0), and write a GPU\n"
    "description: the base one (its MMU, TLBs and notes) with the measured lines\n"
    "appended, which replace its own; use it with --gpu FILE in sim, sweep, tune and\n"
    "replay.  Needs a GPU: without one, one line and exit 1.  Progress goes to stderr.\n"
    "\n"
    "Driver calls (cost lines): cuMemAlloc and cuMemFree from 512 B to 1 GiB;\n"
    "cuMemCreate, cuMemMap, cuMemSetAccess, cuMemUnmap and cuMemRelease of one\n"
    "handle from 2 MiB to 2 GiB; cuMemAddressReserve and cuMemAddressFree from 2 MiB\n"
    "to 1 TiB; the median of N calls each.  And the host's speed while measuring\n"
    "(host_clock_read_us: one read of the clock, µs, before and after; a host that\n"
    "runs slower reads it slower), the speed these costs hold at.\n"
    "\n"
    "The allocator's own work (bookkeeping_us MECH SIZE:US ... lines): a cached\n"
    "allocate + free pair through each mechanism (direct, caching, expandable,\n"
    "async_pool, stitch; default parameters) on the GPU at 512 B, 64 KiB, 1 MiB,\n"
    "8 MiB, 64 MiB and 512 MiB, timed in batches after warm-up with one 512 B block\n"
    "held; the median batch, half of it a request or a free.  The timed batches must\n"
    "make no driver call (a WARNING comment says when one did).  direct's pair is a\n"
    "cudaMalloc and a cudaFree, which the cost lines charge: it gets 0, its pair\n"
    "time and the part of it in the driver in a comment.  bookkeeping_loop MECH\n"
    "SIZE:US:OPS:CHUNKS:VISITS ... lines give the same points with the free-set work\n"
    "a request or free did in them, then those of the crowded loop: the same pairs,\n"
    "at the sizes up to 8 MiB, among N free blocks (--crowd) of sizes near theirs,\n"
    "none beside another, where a search looks at many keys as in a long trace.  gpu\n"
    "fit --work adds every point to each mechanism's runs.\n"
    "\n"
    "PyTorch's allocators (torch_pair_us BACKEND SIZE:US ... lines, the pair's µs),\n"
    "when PY imports torch and sees a GPU: native, expandable_segments:True and\n"
    "backend:cudaMallocAsync, each in a fresh PY process running calibrate_torch.py\n"
    "(installed with pagetune's data), the same pairs from C++ (raw_alloc +\n"
    "raw_delete, a torch.utils.cpp_extension module built once into --torch-build's\n"
    "directory: about a minute the first time) or, when that does not build, from\n"
    "Python (torch.empty + del); a comment says which.  The model does not use these\n"
    "lines: they are there to compare pagetune's mechanisms with PyTorch's\n"
    "allocators (pagetune confirm may use them).  Torch that does not import is\n"
    "reported and left out; a torch run that fails is an error.\n",
    calibrate_opts, sizeof(calibrate_args), &defaults, 0};

/* What was measured, and where and when. */

typedef struct measured {
  pt_gpu base;
  char path[4096]; /* the base description's file */
  char script[4096];
  pt_gpu_info gi;
  pt_cost_points pts[PT_DRV_NCALLS];
  pt_cal_plan plan;
  pt_cal_series mechs[PT_CAL_NMECHS];
  pt_cal_torch torch;
  char when[64];
  double host_clock_read_us; /* the host's speed (clock.h) the costs were measured at: the mean of before and after */
} measured;

static int store_points(const calibrate_args *a, const measured *m, pt_err *err) {
  pt_store *db;
  char gname[96], source[512];
  snprintf(gname, sizeof gname, "%s-calibrated", m->base.name);
  snprintf(source, sizeof source, "pagetune calibrate on %s, %s, median of %lu", m->gi.name, m->when, a->repeat);
  int rc = pt_store_open(a->db, 0, err, &db);
  if (rc < 0) return rc;
  for (int c = 0; rc == 0 && c < PT_DRV_NCALLS; c++)
    for (size_t k = 0; rc == 0 && k < m->pts[c].n; k++) {
      int64_t id;
      rc = pt_store_put_calibration(db, gname, pt_drv_call_names[c], (uint64_t)m->pts[c].bytes[k], m->pts[c].us[k],
                                    source, err, &id);
    }
  pt_store_close(db);
  return rc;
}

/* Whether a line of the base description is one the measurement replaces: a mechanism's bookkeeping_us and
   bookkeeping_loop (all five are measured; the constant for the rest stays) and bookkeeping_work (it would price
   the mechanism in place of the measured line), torch_pair_us when PyTorch was measured, and the host speed the
   costs hold at. */
static int replaced(const char *line, const measured *m) {
  char key[32], what[32];
  if (sscanf(line, " %31s %31s", key, what) != 2) return 0;
  if (!strcmp(key, "torch_pair_us")) return m->torch.measured;
  if (!strcmp(key, "host_clock_read_us")) return 1;
  return (!strcmp(key, "bookkeeping_us") || !strcmp(key, "bookkeeping_loop") || !strcmp(key, "bookkeeping_work")) &&
         pt_mech_find(what);
}

/* The description (bf: the base one's file, copied first) or the JSON, to out. */
static void write_points(FILE *out, FILE *bf, const calibrate_args *a, const measured *m) {
  if (a->json) {
    fputs("{\"device\":", out);
    pt_json_str(out, m->gi.name);
    fprintf(out, ",\"driver_version\":%d,\"repeat\":%lu,\"host_clock_read_us\":%.6g,\"measured\":", m->gi.driver_version,
            a->repeat, m->host_clock_read_us);
    pt_json_str(out, m->when);
    fputs(",\"points_us\":{", out);
  } else {
    char line[4096]; /* the description's longest line (gpu.c) */
    while (fgets(line, sizeof line, bf)) {
      if (replaced(line, m)) fputs("# replaced by the measurement below: ", out);
      fputs(line, out);
    }
    fprintf(out, "\n# ---- measured by pagetune calibrate on %s (driver API %d), %s, median of %lu calls a size\n",
            m->gi.name, m->gi.driver_version, m->when, a->repeat);
    fprintf(out, "name %s-calibrated\nsource pagetune calibrate on %s, %s (driver calls, allocator work); %s for the rest\n",
            m->base.name, m->gi.name, m->when, a->base);
    fprintf(out, "# the host's speed while measuring: one read of the clock, us (replay --mechanism reports its own)\n");
    if (m->base.host_clock_read_us > 0)
      fprintf(out, "# (the lines kept from %s hold at its speed, %.6g us a read)\n", m->base.name, m->base.host_clock_read_us);
    fprintf(out, "host_clock_read_us %.6g\n", m->host_clock_read_us);
  }
  for (int c = 0, first = 1; c < PT_DRV_NCALLS; c++) {
    const pt_cost_points *p = &m->pts[c];
    if (!p->n) continue;
    if (a->json) {
      fprintf(out, "%s\"%s\":[", first ? "" : ",", pt_drv_call_names[c]);
      for (size_t k = 0; k < p->n; k++) fprintf(out, "%s[%.0f,%.3f]", k ? "," : "", p->bytes[k], p->us[k]);
      fputc(']', out);
    } else {
      fprintf(out, "cost %s", pt_drv_call_names[c]);
      for (size_t k = 0; k < p->n; k++) fprintf(out, " %.0f:%.3f", p->bytes[k], p->us[k]);
      fputc('\n', out);
    }
    first = 0;
  }
  if (a->json) {
    fputc('}', out);
    pt_calibrate_json_mechs(out, &m->plan, m->mechs, PT_CAL_NMECHS);
    pt_calibrate_json_torch(out, &m->torch);
    fputs("}\n", out);
  } else {
    pt_calibrate_write_bookkeeping(out, &m->plan, m->mechs, PT_CAL_NMECHS);
    pt_calibrate_write_torch(out, &m->torch);
  }
}

/* Write to -o's file through a new FILE.tmp.XXXXXX and a rename (nothing half-written), or to stdout. */
static int write_output(const calibrate_args *a, const measured *m, FILE *bf, pt_err *err) {
  char tmp[4200];
  FILE *out = stdout;
  if (a->output && !(out = pt_file_fopen_beside(a->output, "w", tmp, sizeof tmp, err))) return PT_EIO;
  write_points(out, bf, a, m);
  if (ferror(bf)) {
    if (a->output) {
      fclose(out);
      remove(tmp);
    }
    return pt_err_set(err, PT_EIO, "%s: read failed", m->path);
  }
  if (!a->output) return 0; /* main checks standard output */
  int failed = ferror(out);
  failed |= fclose(out) != 0;
  int saved = errno;
  if (failed || rename(tmp, a->output) != 0) {
    saved = failed ? saved : errno;
    remove(tmp);
    return pt_err_set(err, PT_EIO, "%s: cannot write: %s", failed ? tmp : a->output, strerror(saved));
  }
  fprintf(stderr, "wrote %s\n", a->output);
  return 0;
}

/* calibrate_torch.py: beside the program in its build tree (backend/), in the source tree of a build made
   elsewhere (the build tree has config.status), else where pagetune installs its data. */
static int find_script(char *buf, size_t n, pt_err *err) {
  char exe[4096], status[4200], in_build[4200];
  pt_datadir_program(exe, sizeof exe);
  snprintf(in_build, sizeof in_build, "%s/backend/" TORCH_SCRIPT, exe);
  snprintf(status, sizeof status, "%s/config.status", exe);
  const char *dirs[] = {exe[0] ? in_build : NULL,
                        exe[0] && access(status, R_OK) == 0 ? PT_ABS_SRCDIR "/backend/" TORCH_SCRIPT : NULL,
                        PT_DATADIR "/" TORCH_SCRIPT};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
    if (dirs[i] && access(dirs[i], R_OK) == 0 && (size_t)snprintf(buf, n, "%s", dirs[i]) < n) return 0;
  return pt_err_set(err, PT_ENOTFOUND,
                    "calibrate: " TORCH_SCRIPT " not found (looked beside the program, in its source tree and in "
                    PT_DATADIR "); --no-torch leaves PyTorch out");
}

static int calibrate(const calibrate_args *a, measured *m, FILE *bf, pt_err *err) {
  int rc = pt_gpu_load(m->path, err, &m->base);
  if (rc < 0) return rc;
  if (!a->no_torch && (rc = find_script(m->script, sizeof m->script, err)) < 0) return rc;
  m->plan = pt_cal_default_plan;
  m->plan.batches = (unsigned)a->batches;
  m->plan.pairs = (unsigned)a->pairs;
  m->plan.crowd = (unsigned)a->crowd;
  pt_driver *d;
  if ((rc = pt_driver_open(err, &d)) < 0) return rc;
  pt_alloc_backend gpu = pt_calibrate_gpu_backend(d);
  double speed_before = pt_clock_read_us(PT_CLOCK_READS);
  if ((rc = pt_driver_info(d, &m->gi, err)) == 0 && (rc = pt_calibrate(d, (unsigned)a->repeat, 1, m->pts, err)) == 0)
    rc = pt_calibrate_mechs(&gpu, &m->plan, 1, m->mechs, err);
  m->host_clock_read_us = (speed_before + pt_clock_read_us(PT_CLOCK_READS)) / 2;
  pt_driver_close(d); /* before torch: its processes get the GPU to themselves */
  if (rc < 0) return rc;
  memset(&m->torch, 0, sizeof m->torch);
  if (a->no_torch) {
    snprintf(m->torch.skipped, sizeof m->torch.skipped, "--no-torch");
  } else {
    pt_torchcal_cfg tc = {a->python, m->script, a->torch_build, (double)a->torch_timeout, &m->plan, 1};
    if ((rc = pt_torchcal_run(&tc, &m->torch, err)) < 0) return rc;
  }
  time_t now = time(NULL);
  strftime(m->when, sizeof m->when, "%Y-%m-%d %H:%M UTC", gmtime(&now));
  if (a->db && (rc = store_points(a, m, err)) < 0) return rc; /* first: a bad database path fails before anything is written */
  return write_output(a, m, bf, err);
}

int pt_cmd_calibrate(void *args, char **pos, int npos, pt_err *err) {
  const calibrate_args *a = args;
  if (a->crowd == 1) return pt_err_set(err, PT_EUSAGE, "calibrate: --crowd is 0 (none) or 2..%d", PT_CAL_MAX_CROWD);
  int checked = a->output ? pt_file_check_output(a->output, NULL, "-o", err) : 0; /* before minutes of measuring */
  if (checked < 0) return checked;
  measured *m = calloc(1, sizeof *m);
  if (!m) return pt_err_set(err, PT_ENOMEM, "calibrate: out of memory");
  FILE *bf = pt_gpu_open(a->base, m->path, sizeof m->path, err);
  int rc = bf ? calibrate(a, m, bf, err) : PT_ENOTFOUND;
  if (bf) fclose(bf);
  free(m);
  return rc;
}
