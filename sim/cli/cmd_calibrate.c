/*
 * cmd_calibrate.c — pagetune calibrate: what the driver calls cost on this
 * machine's GPU, measured, written as a GPU description (the base one with
 * the measured cost lines appended) or as JSON, and optionally stored.
 */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "calibrate.h"
#include "driver.h"
#include "workbench.h"

typedef struct calibrate_args {
  const char *base, *output, *db;
  unsigned long repeat;
  int json;
} calibrate_args;

static const calibrate_args defaults = {.base = "h200", .repeat = 9};

static const pt_cli_opt calibrate_opts[] = {
    PT_CLI_OPT_STR("base", 0, "NAME", calibrate_args, base, "the description to start from (default h200)"),
    PT_CLI_OPT_ULONG("repeat", "N", calibrate_args, repeat, 1, 64, NULL, "calls per size, 1..64 (default 9)"),
    PT_CLI_OPT_STR(NULL, 'o', "FILE", calibrate_args, output, "write the description there (default: standard output)"),
    PT_CLI_OPT_STR("db", 0, "DB", calibrate_args, db, "also store every point in DB's calibrations table (docs/store.md)"),
    PT_CLI_OPT_FLAG("json", calibrate_args, json, "the measured points as one JSON object instead"),
    PT_CLI_END};
const pt_cli_table pt_opts_calibrate = {
    "usage: pagetune calibrate [--base NAME] [--repeat N] [-o FILE] [--db DB] [--json]\n"
    "\n"
    "Measure what the driver calls cost on this machine's GPU (device 0): cuMemAlloc\n"
    "and cuMemFree from 512 B to 1 GiB; cuMemCreate, cuMemMap, cuMemSetAccess,\n"
    "cuMemUnmap and cuMemRelease of one handle from 2 MiB to 2 GiB; cuMemAddressReserve\n"
    "and cuMemAddressFree from 2 MiB to 1 TiB; the median of N calls each.  Writes a\n"
    "GPU description: the base one (its MMU, TLBs and notes) with these cost lines\n"
    "appended, which replace its own; use it with --gpu FILE in sim, sweep, tune\n"
    "and replay.  Needs a GPU: without one, one line and exit 1.\n",
    calibrate_opts, sizeof(calibrate_args), &defaults, 0};

/* What was measured, and where and when. */
typedef struct measured {
  pt_gpu base;
  char path[4096]; /* the base description's file */
  pt_gpu_info gi;
  pt_cost_points pts[PT_DRV_NCALLS];
  char when[64];
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

/* The description (bf: the base one's file, copied first) or the JSON, to out. */
static void write_points(FILE *out, FILE *bf, const calibrate_args *a, const measured *m) {
  if (a->json) {
    fputs("{\"device\":", out);
    pt_json_str(out, m->gi.name);
    fprintf(out, ",\"driver_version\":%d,\"repeat\":%lu,\"measured\":", m->gi.driver_version, a->repeat);
    pt_json_str(out, m->when);
    fputs(",\"points_us\":{", out);
  } else {
    char line[1024];
    while (fgets(line, sizeof line, bf)) fputs(line, out);
    fprintf(out, "\n# ---- measured by pagetune calibrate on %s (driver API %d), %s, median of %lu calls a size\n",
            m->gi.name, m->gi.driver_version, m->when, a->repeat);
    fprintf(out, "name %s-calibrated\nsource pagetune calibrate on %s, %s (driver calls); %s for the rest\n",
            m->base.name, m->gi.name, m->when, m->path);
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
  if (a->json) fputs("}}\n", out);
}

/* Write to -o's file through FILE.tmp and a rename (nothing half-written), or to stdout. */
static int write_output(const calibrate_args *a, const measured *m, FILE *bf, pt_err *err) {
  char tmp[4200];
  FILE *out = stdout;
  if (a->output) {
    snprintf(tmp, sizeof tmp, "%s.tmp", a->output);
    if (!(out = fopen(tmp, "w"))) return pt_err_set(err, PT_EIO, "%s: cannot write: %s", tmp, strerror(errno));
  }
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

static int calibrate(const calibrate_args *a, measured *m, FILE *bf, pt_err *err) {
  int rc = pt_gpu_load(m->path, err, &m->base);
  if (rc < 0) return rc;
  pt_driver *d;
  if ((rc = pt_driver_open(err, &d)) < 0) return rc;
  if ((rc = pt_driver_info(d, &m->gi, err)) == 0) rc = pt_calibrate(d, (unsigned)a->repeat, !a->json, m->pts, err);
  pt_driver_close(d);
  if (rc < 0) return rc;
  time_t now = time(NULL);
  strftime(m->when, sizeof m->when, "%Y-%m-%d %H:%M UTC", gmtime(&now));
  if (a->db && (rc = store_points(a, m, err)) < 0) return rc; /* first: a bad database path fails before anything is written */
  return write_output(a, m, bf, err);
}

int pt_cmd_calibrate(void *args, char **pos, int npos, pt_err *err) {
  const calibrate_args *a = args;
  measured m;
  FILE *bf = pt_gpu_open(a->base, m.path, sizeof m.path, err);
  if (!bf) return PT_ENOTFOUND;
  int rc = calibrate(a, &m, bf, err);
  fclose(bf);
  return rc;
}
