/*
 * fuzz_trace.c — libFuzzer target for the trace readers: whatever the bytes,
 * pt_trace_open_mem + pt_trace_next either yield checked records or fail with
 * a message naming the input; never a crash, hang or leak.  Inputs that start
 * like a pickle go through the snapshot importer (and the unpickler).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  pt_err err;
  pt_trace *t;
  if (pt_trace_open_mem(data, size, "fuzz", NULL, &err, &t) < 0) {
    if (strncmp(err.msg, "fuzz: ", 6) != 0) __builtin_trap(); /* every error names the input */
    return 0;
  }
  pt_event ev;
  int rc;
  while ((rc = pt_trace_next(t, &ev, &err)) > 0) {
    if (ev.bytes > PT_TRACE_MAX_BYTES) __builtin_trap(); /* the checks held */
  }
  if (rc < 0 && strncmp(err.msg, "fuzz: ", 6) != 0) __builtin_trap();
  const pt_order *o = pt_trace_order(t); /* the stream order read: numbered events, in record order */
  for (size_t i = 0; i < o->n; i++)
    if (!o->op[i].event || o->op[i].event >= PT_TRACE_MAX_EVENTS || (i && o->op[i].before < o->op[i - 1].before))
      __builtin_trap();
  pt_trace_close(t);
  return 0;
}
