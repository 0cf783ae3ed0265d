/*
 * cli.h — the commands main.c's table lists: for each, the handler and the
 * option table that sim/cli/cmd_*.c define.  A handler returns 0 or a
 * negative PT_E* code with the message in err; main prints it and chooses
 * the exit status.
 */
#ifndef PT_CLI_H
#define PT_CLI_H

#include "opts.h"

extern const pt_cli_table pt_opts_trace, pt_opts_gpu; /* the groups' help */
PT_CLI_DECLARE(trace_import);                         /* cmd_trace.c */
PT_CLI_DECLARE(trace_stats);
PT_CLI_DECLARE(trace_gen);
PT_CLI_DECLARE(sim);                                  /* cmd_sim.c */
PT_CLI_DECLARE(replay);
PT_CLI_DECLARE(sweep);                                /* cmd_sweep.c */
PT_CLI_DECLARE(tune);                                 /* cmd_tune.c */
PT_CLI_DECLARE(best);                                 /* cmd_best.c */
PT_CLI_DECLARE(report);                               /* cmd_report.c */
PT_CLI_DECLARE(export);                               /* cmd_export.c */
PT_CLI_DECLARE(gpu_info);                             /* cmd_gpu.c */
PT_CLI_DECLARE(gpu_fit);                              /* cmd_gpu.c */
PT_CLI_DECLARE(calibrate);                            /* cmd_calibrate.c */
PT_CLI_DECLARE(confirm);                              /* cmd_confirm.c */
PT_CLI_DECLARE(lint);                                 /* cmd_lint.c */
PT_CLI_DECLARE(policies);                             /* cmd_policies.c */
PT_CLI_DECLARE(diff);                                 /* cmd_diff.c */
PT_CLI_DECLARE(check);                                /* cmd_check.c */

#endif
