/*
 * main.c — the pagetune command line: the table of commands, and the
 * dispatcher, the only place that prints errors and chooses exit codes.
 * Each command's options and handler are in sim/cli/cmd_*.c; the option
 * tables there are what both the parser and --help read (sim/cli/opts.h).
 *
 * Built twice: pagetune, and with --with-mpi pagetune-mpi (PT_MPI_PROGRAM),
 * the same commands with MPI started first, so that sweep and tune under
 * mpirun/srun spread their runs over the ranks (sim/cli/farm.h); pagetune
 * itself never links libmpi.
 *
 * Exit status (docs/design.md, "Contract"): 0 success, 1 bad input or a failed run
 * (one line on stderr: file, position, reason), 2 bad usage.  Output that
 * cannot be written (a full disk) is a failed run.
 */
#include <config.h>
#include <errno.h>
#include <gsl/gsl_version.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "cli.h"
#include "driver.h"
#include "file.h"
#include "farm.h"
#ifdef PT_MPI_PROGRAM
#include "farm_mpi.h"
#endif

#define EXIT_BAD 1
#define EXIT_USAGE 2

#ifdef PT_MPI_PROGRAM
static const char *prog = "pagetune-mpi";
static pt_farm_launcher mpi; /* this process's rank and the transport (farm_mpi.c) */
#else
static const char *prog = "pagetune";
#endif

static const pt_cli_cmd trace_cmds[] = {
    {"import", "PyTorch memory snapshot -> pagetune trace", pt_cmd_trace_import, &pt_opts_trace_import, NULL},
    {"stats", "counts and peaks of a trace or snapshot", pt_cmd_trace_stats, &pt_opts_trace_stats, NULL},
    {"gen", "a synthetic trace (train, infer, kvcache, long_decode)", pt_cmd_trace_gen, &pt_opts_trace_gen, NULL},
    {0}};

static const pt_cli_cmd gpu_cmds[] = {
    {"info", "describe device 0", pt_cmd_gpu_info, &pt_opts_gpu_info, NULL},
    {"fit", "a GPU description from costs measured by replay --mechanism", pt_cmd_gpu_fit, &pt_opts_gpu_fit, NULL},
    {0}};

static const pt_cli_cmd commands[] = {
    {"trace", "read, convert and synthesise allocation traces", NULL, &pt_opts_trace, trace_cmds},
    {"sim", "replay a trace through an allocator policy", pt_cmd_sim, &pt_opts_sim, NULL},
    {"replay", "make the driver calls a policy's run makes on the GPU, timed", pt_cmd_replay, &pt_opts_replay, NULL},
    {"sweep", "traces x policies x parameter grids, stored in SQLite", pt_cmd_sweep, &pt_opts_sweep, NULL},
    {"tune", "search a policy's parameters (grid + Nelder-Mead)", pt_cmd_tune, &pt_opts_tune, NULL},
    {"best", "the best stored run of a trace", pt_cmd_best, &pt_opts_best, NULL},
    {"report", "tables, and an HTML page with timelines and the Pareto plot", pt_cmd_report, &pt_opts_report, NULL},
    {"export", "PYTORCH_CUDA_ALLOC_CONF / Dockerfile ENV / JSON for a run", pt_cmd_export, &pt_opts_export, NULL},
    {"gpu", "describe the GPU (needs one), fit a description to measured costs", NULL, &pt_opts_gpu, gpu_cmds},
    {"calibrate", "measure the driver calls' costs on the GPU: a GPU description", pt_cmd_calibrate,
     &pt_opts_calibrate, NULL},
    {"confirm", "run your workload under the baseline and the tuned config: measured gain", pt_cmd_confirm,
     &pt_opts_confirm, NULL},
    {"lint", "check a PYTORCH_CUDA_ALLOC_CONF value against PyTorch 2.11", pt_cmd_lint, &pt_opts_lint, NULL},
    {"policies", "the policies it can find: mechanism, parameters, hooks, doc", pt_cmd_policies, &pt_opts_policies, NULL},
    {"diff", "two runs side by side, and where their timelines part", pt_cmd_diff, &pt_opts_diff, NULL},
    {"check", "for CI: fail when a change's peak or predicted time is worse than allowed", pt_cmd_check, &pt_opts_check, NULL},
    {"explain", "why memory is wasted at the peak: free space, the blocks that pin it, their frames",
     pt_cmd_explain, &pt_opts_explain, NULL},
    {0}};

static void print_help(FILE *f) {
  fputs("usage: pagetune [--version] [--help] COMMAND [ARGS]\n"
        "\n"
        "A workbench for GPU memory-allocation policies: replay allocation traces\n"
        "captured from PyTorch workloads through a model of the allocator.\n"
        "\n"
        "Commands:\n", f);
  pt_cli_list(f, commands);
  fputs("\n'pagetune COMMAND --help' describes each.  Exit status: 0 success, 1 bad\n"
        "input or failed run, 2 bad usage.\n", f);
  fputs("\nEnvironment:\n"
        "  PAGETUNE_POLICY_DIR  folder searched first for a bundled policy named NAME (NAME.lua)\n"
        "  PAGETUNE_GPU_DIR     folder searched first for a GPU description named NAME (NAME.gpu)\n"
        "Then the program's build tree (policies/, sim/gpus/) and the installed data; never\n"
        "the current directory.  A policy or GPU given as a path (with a '/', or ending in\n"
        ".lua or .gpu) is that file.\n", f);
}

static void print_version(void) {
  printf("%s %s\n", prog, PACKAGE_VERSION);
  printf("cuda: %s\n", pt_driver_built() ? "yes (driver loaded at run time)" : "no");
#ifdef PT_MPI_PROGRAM
  printf("mpi: yes (%s; sweep and tune under mpirun/srun: rank 0 stores, the others simulate)\n", mpi.library);
#elif defined(HAVE_MPI)
  printf("mpi: in pagetune-mpi, built beside it (" PT_MPI_NAME "); pagetune itself does not use MPI\n");
#else
  printf("mpi: no (configure --with-mpi builds pagetune-mpi)\n");
#endif
  printf("gsl: %s\nzlib: %s\n", GSL_VERSION, zlibVersion());
}

/* Under MPI the ranks past 0 parse the same line: rank 0 alone says what is wrong. */
static int quiet(void) {
#ifdef PT_MPI_PROGRAM
  return mpi.rank > 0;
#else
  return 0;
#endif
}

static int usage(const char *name, const char *msg) {
  if (quiet()) return EXIT_USAGE;
  fprintf(stderr, "%s %s: %s\n(try '%s %s --help')\n", prog, name, msg, prog, name);
  return EXIT_USAGE;
}

/* The one line a failure prints, and its exit status. */
static int fail(const char *name, int rc, const pt_err *err) {
  if (rc >= 0) return 0;
  if (rc == PT_ECLI_USAGE) return usage(name, err->msg);
  fprintf(stderr, "%s: %s\n", prog, err->msg[0] ? err->msg : pt_strerror(rc));
  return rc == PT_EUSAGE ? EXIT_USAGE : EXIT_BAD;
}

/* Run cmd, a line of table, on argv (argv[0] is its name; name is what the user typed to reach it). */
static int dispatch(const pt_cli_cmd *table, const pt_cli_cmd *cmd, const char *name, int argc, char **argv) {
  if (cmd->subs) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
      pt_cli_help(argc < 2 ? stderr : stdout, prog, cmd);
      return argc < 2 ? EXIT_USAGE : 0;
    }
    const pt_cli_cmd *sub = pt_cli_find(cmd->subs, argv[1]);
    char full[64], msg[128];
    if (!sub) {
      snprintf(msg, sizeof msg, "unknown command '%.80s'", argv[1]);
      return usage(name, msg);
    }
    snprintf(full, sizeof full, "%s %s", name, sub->name);
    return dispatch(cmd->subs, sub, full, argc - 1, argv + 1);
  }
  pt_err err = {{0}};
  void *args = malloc(cmd->table->args_size);
  if (!args) return fail(name, pt_err_set(&err, PT_ENOMEM, "out of memory"), &err);
  memcpy(args, cmd->table->defaults, cmd->table->args_size);
  char **pos;
  int npos, rc = pt_cli_parse(cmd, table, argc, argv, args, &err, &pos, &npos);
  if (rc == PT_CLI_HELP) pt_cli_help(stdout, prog, cmd);
  else if (rc == 0) rc = cmd->run(args, pos, npos, &err);
  free(args);
  return fail(name, rc, &err);
}

static int run(int argc, char **argv) {
  if (argc < 2) {
    print_help(stderr);
    return EXIT_USAGE;
  }
  const char *name = argv[1];
  if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
    print_help(stdout);
    return 0;
  }
  if (!strcmp(name, "--version") || !strcmp(name, "version")) {
    print_version();
    return 0;
  }
  const pt_cli_cmd *cmd = pt_cli_find(commands, name);
#ifdef PT_MPI_PROGRAM
  if (cmd && mpi.size > 1 && strcmp(name, "sweep") && strcmp(name, "tune")) {
    if (mpi.rank == 0)
      fprintf(stderr, "%s: only sweep and tune run on %d ranks; run 'pagetune %s' alone\n", prog, mpi.size, name);
    return EXIT_USAGE;
  }
#endif
  if (cmd) return dispatch(commands, cmd, name, argc - 1, argv + 1);
  fprintf(stderr, "%s: unknown command '%s' (try '%s --help')\n", prog, name, prog);
  return EXIT_USAGE;
}

/*
 * Whatever a command printed must have reached standard output: a full disk
 * or a closed pipe is a failed run, said once, here for every command.
 */
static int close_stdout(int code) {
  int e = fflush(stdout) != 0 ? errno : 0;
  int bad = e || ferror(stdout);
  if (fclose(stdout) != 0 && !bad) bad = 1, e = errno;
  if (!bad || code != 0) return code;
  fprintf(stderr, "%s: standard output: write failed%s%s\n", prog, e ? ": " : "", e ? strerror(e) : "");
  return EXIT_BAD;
}

#ifdef PT_MPI_PROGRAM
int main(int argc, char **argv) {
  if (pt_farm_mpi_start(&argc, &argv, &mpi) < 0) {
    fprintf(stderr, "%s: MPI_Init failed\n", prog);
    return EXIT_BAD;
  }
  if (mpi.size > 1) pt_farm_set_launcher(&mpi);
  pt_file_remove_temps_on_signal();
  int code = close_stdout(run(argc, argv));
  pt_farm_mpi_end();
  return code;
}
#else
int main(int argc, char **argv) {
  pt_file_remove_temps_on_signal();
  return close_stdout(run(argc, argv));
}
#endif
