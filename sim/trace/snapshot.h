/*
 * snapshot.h — PyTorch memory snapshots (torch.cuda.memory._dump_snapshot) as
 * a trace source: a pt_trace_format that reads the pickle with the data-only
 * unpickler (pickle.h) and yields pt_event records.
 *
 * Mapping (docs/design.md, "PyTorch facts"): alloc -> ALLOC (with its address);
 * free_completed -> FREE (free_requested is only the request); segment_alloc /
 * segment_free / segment_map / segment_unmap / oom -> observed records.
 * Initial state: segments (and blocks) alive before recording started, found
 * from segment_free / free_completed entries with no earlier alloc, and from
 * the end-state `segments` list for those never freed.  For expandable
 * segments the initial mapped size is the final size minus the trace's maps
 * plus its unmaps.
 */
#ifndef PT_SNAPSHOT_H
#define PT_SNAPSHOT_H

#include "trace.h"

extern const pt_trace_format pt_snapshot_format;

#endif
