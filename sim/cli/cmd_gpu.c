/* cmd_gpu.c — pagetune gpu info: device 0 described through the CUDA driver (loaded at run time). */
#include "cli.h"
#include "json.h"

#include <stdio.h>

#include "driver.h"

typedef struct gpu_args {
  int json;
} gpu_args;

static const gpu_args defaults;

const pt_cli_table pt_opts_gpu = {
    .help = "usage: pagetune gpu COMMAND [ARGS]\n"
            "\n"
            "The GPU through the CUDA driver (libcuda.so.1, loaded at run time).\n"
            "Without a GPU or driver: one line saying so, exit 1.\n"};

static const pt_cli_opt info_opts[] = {PT_CLI_OPT_FLAG("json", gpu_args, json, "one JSON object"), PT_CLI_END};
const pt_cli_table pt_opts_gpu_info = {
    "usage: pagetune gpu info [--json]\n"
    "\n"
    "Load the CUDA driver (libcuda.so.1, at run time) and describe device 0.\n"
    "Without a GPU or driver: one line saying so, exit 1.\n",
    info_opts, sizeof(gpu_args), &defaults, 0};

int pt_cmd_gpu_info(void *args, char **pos, int npos, pt_err *err) {
  const gpu_args *a = args;
  pt_driver *d;
  pt_gpu_info gi;
  int rc = pt_driver_open(err, &d);
  if (rc < 0) return rc;
  rc = pt_driver_info(d, &gi, err);
  pt_driver_close(d);
  if (rc < 0) return rc;
  if (a->json) {
    fputs("{\"name\":", stdout);
    pt_json_str(stdout, gi.name);
    printf(",\"total_memory\":%zu,\"driver_version\":%d,\"device_count\":%d}\n", gi.total_memory, gi.driver_version,
           gi.device_count);
  } else
    printf("device 0: %s, %zu bytes, driver API %d, %d device(s)\n", gi.name, gi.total_memory, gi.driver_version,
           gi.device_count);
  return 0;
}
