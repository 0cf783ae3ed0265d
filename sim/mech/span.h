/*
 * span.h — what every mechanism's blocks share: a block is a span of a
 * segment, [addr, addr + size), linked to its neighbours in address order
 * through prev and next.  The mechanisms' block types differ in what else
 * they carry (pool, stream, state, free-set nodes), so these are macros over
 * any struct with those four fields: one piece of code for linking a new
 * span beside another and for a span swallowing its free neighbour.
 */
#ifndef PT_SPAN_H
#define PT_SPAN_H

/* Link span b into the list right after span at. */
#define PT_SPAN_LINK_AFTER(at, b)              \
  do {                                         \
    (b)->prev = (at);                          \
    (b)->next = (at)->next;                    \
    if ((at)->next) (at)->next->prev = (b);    \
    (at)->next = (b);                          \
  } while (0)

/* Link span b into the list right before span at. */
#define PT_SPAN_LINK_BEFORE(at, b)             \
  do {                                         \
    (b)->next = (at);                          \
    (b)->prev = (at)->prev;                    \
    if ((at)->prev) (at)->prev->next = (b);    \
    (at)->prev = (b);                          \
  } while (0)

/* dst takes over the range of its neighbour src (its prev or its next), which leaves the list;
   src's record is the caller's to drop. */
#define PT_SPAN_ABSORB(dst, src)                          \
  do {                                                    \
    if ((src) == (dst)->prev) {                           \
      (dst)->addr = (src)->addr;                          \
      (dst)->prev = (src)->prev;                          \
      if ((dst)->prev) (dst)->prev->next = (dst);         \
    } else {                                              \
      (dst)->next = (src)->next;                          \
      if ((dst)->next) (dst)->next->prev = (dst);         \
    }                                                     \
    (dst)->size += (src)->size;                           \
  } while (0)

/*
 * Cut [lo, lo + len) (inside span b) out of b: b keeps that range; the parts
 * before and after, if any, become spans of their own, each made by
 * piece_new(st, b, addr, size), linked beside b, then handed to
 * piece_keep(st, piece) (into a free set, say): the part before first.
 * piece_new must not fail (records reserved beforehand).
 */
#define PT_SPAN_CARVE(st, b, lo, len, piece_new, piece_keep)                                    \
  do {                                                                                          \
    uint64_t lo_ = (lo), end_ = (lo) + (len), bend_ = (b)->addr + (b)->size;                    \
    if (lo_ > (b)->addr) {                                                                      \
      __typeof__(b) f_ = piece_new(st, b, (b)->addr, lo_ - (b)->addr);                          \
      PT_SPAN_LINK_BEFORE(b, f_);                                                               \
      piece_keep(st, f_);                                                                       \
    }                                                                                           \
    if (end_ < bend_) {                                                                         \
      __typeof__(b) g_ = piece_new(st, b, end_, bend_ - end_);                                  \
      PT_SPAN_LINK_AFTER(b, g_);                                                                \
      piece_keep(st, g_);                                                                       \
    }                                                                                           \
    (b)->addr = lo_;                                                                            \
    (b)->size = end_ - lo_;                                                                     \
  } while (0)

#endif
