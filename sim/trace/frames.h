/*
 * frames.h — the Python (and native) stack frames a snapshot recorded for
 * its allocations, kept compactly: each distinct frame once, each distinct
 * stack (a list of frames, innermost first) once, and a record names its
 * stack by number (pt_event.stack; 0: none).  Snapshots repeat the same few
 * hundred frames across millions of entries, so a trace's frames cost about
 * what its distinct call sites cost.
 *
 * Ids count from 1 in the order frames and stacks were added.  The snapshot
 * reader interns (an equal frame or stack gets the id it already has); the
 * native reader adds them as its `+frame` and `+stack` lines number them.
 */
#ifndef PT_FRAMES_H
#define PT_FRAMES_H

#include <stddef.h>
#include <stdint.h>

typedef struct pt_frame {
  const char *file;     /* NUL-terminated, owned by the table */
  const char *name;
  uint32_t line;
} pt_frame;

typedef struct pt_frames {
  pt_frame *frame;      /* frame[0] unused: ids count from 1 */
  size_t nframes;       /* ids 1 .. nframes */
  size_t frame_cap;
  uint32_t *fids;       /* every stack's frame ids, back to back */
  size_t nfids, fids_cap;
  size_t *stack_at;     /* stack s is fids[stack_at[s] .. stack_at[s + 1]) */
  size_t nstacks;       /* ids 1 .. nstacks */
  size_t stack_cap;
  /* interning: open-addressing tables of ids (0: empty); strings interned too */
  uint32_t *fhash, *shash;
  size_t fhash_cap, shash_cap;
  char **strs;
  size_t nstrs, strs_cap;
  uint32_t *strhash;
  size_t strhash_cap;
  size_t bytes;         /* memory held, for measurements */
} pt_frames;

/* The id of frame (file, name, line), added if new.  0 or PT_ENOMEM. */
int pt_frames_intern_frame(pt_frames *f, const char *file, size_t flen, const char *name,
                           size_t nlen, uint32_t line, uint32_t *fid /* OUT */);
/* The id of the stack fids[0..n) (innermost first), added if new; n may be 0 (id 0). */
int pt_frames_intern_stack(pt_frames *f, const uint32_t *fids, size_t n, uint32_t *sid /* OUT */);
/* Stack sid's frame ids; returns how many (0 for an unknown id). */
size_t pt_frames_stack(const pt_frames *f, uint32_t sid, const uint32_t **fids /* OUT */);
const pt_frame *pt_frames_frame(const pt_frames *f, uint32_t fid); /* NULL: unknown */
void pt_frames_free(pt_frames *f);

/*
 * Text fields of `+frame` lines (traces/FORMAT.md): bytes other than
 * printable ASCII but space, and '%', are written %XX.  escape writes at
 * most 3 * n + 1 bytes into out; unescape decodes in place and returns the
 * length, or -1 for a bad escape.
 */
size_t pt_frames_escape(const char *s, size_t n, char *out);
long pt_frames_unescape(char *s, size_t n);

#endif
