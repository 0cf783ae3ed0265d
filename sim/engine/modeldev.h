/*
 * modeldev.h — the modelled GPU as a device (device/device.h): what only a
 * model has.
 *
 * Addresses: the real allocator's segment_alloc records give the addresses
 * cudaMalloc returned.  While the model's k-th cudaMalloc asks for the same
 * size as the real k-th one, it gets the same address (best fit breaks ties
 * by address, so this keeps a faithful model on the real run's path); after
 * the first disagreement, or with no hints, or when a recorded address lies
 * in a segment the model still holds (the real run had freed it, the model
 * has not), addresses are invented upward from a base far from real ones.
 * VA reservations are always invented; handles are numbered from 1.
 *
 * Page tables (optional): every cudaMalloc segment and every VMM map is
 * mapped in the page-table model, with the page size the policy's page_size
 * hook gives, or the driver's default: 2 MiB pages for cudaMalloc segments
 * of 2 MiB or more and for VMM handles, 64 KiB below.  A hook or page-table
 * failure fails the call.
 */
#ifndef PT_MODELDEV_H
#define PT_MODELDEV_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "error.h"
#include "pagetable.h"

typedef struct pt_addr_hint {
  uint64_t addr, bytes;
} pt_addr_hint;

typedef struct pt_model_dev {
  const pt_addr_hint *hints;         /* recorded cudaMalloc results, in order */
  size_t nhints, next_hint;
  int on_path;                       /* still on the recorded path */
  pt_addr_hint *held;                /* while on it: the segments held, in no order */
  size_t nheld, cap_held;
  uint64_t next_va;                  /* invented addresses start here */
  const pt_addr_hint *va_hints;      /* VA reservations to follow, in order, while their sizes agree */
  size_t nva_hints, next_va_hint;
  uint64_t next_handle;
  pt_pagetable *pt;                  /* NULL: no page-table model */
  int (*page_size)(void *page_ctx, uint64_t bytes, uint64_t *out, pt_err *err);
  void *page_ctx;
  pt_err *err;
} pt_model_dev;

extern const pt_dev_ops pt_model_dev_ops;

void pt_model_dev_init(pt_model_dev *m, const pt_addr_hint *hints, size_t nhints, pt_err *err);
void pt_model_dev_done(pt_model_dev *m);
/* 1 while every cudaMalloc so far took its recorded address. */
static inline int pt_model_dev_on_path(const pt_model_dev *m) { return m->nhints > 0 && m->on_path; }

#endif
