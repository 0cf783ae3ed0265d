/* modeldev.c — the modelled GPU: recorded and invented addresses, handle ids, page tables (see modeldev.h). */
#include "modeldev.h"

#include <stdlib.h>
#include <string.h>

#define INVENTED_BASE (UINT64_C(1) << 46) /* below CUDA's (~2^47), inside MMU v2's 49-bit VA */
#define VA_ALIGN (UINT64_C(2) << 20)

void pt_model_dev_init(pt_model_dev *m, const pt_addr_hint *hints, size_t nhints, pt_err *err) {
  memset(m, 0, sizeof *m);
  m->hints = hints;
  m->nhints = nhints;
  m->on_path = nhints > 0;
  m->next_va = INVENTED_BASE;
  m->err = err;
}

/* Off the recorded path for good: addresses are invented from here on. */
static void leave_path(pt_model_dev *m) {
  m->on_path = 0;
  free(m->held);
  m->held = NULL;
  m->nheld = m->cap_held = 0;
}

void pt_model_dev_done(pt_model_dev *m) { leave_path(m); }

static int overlaps_held(const pt_model_dev *m, uint64_t addr, uint64_t bytes) {
  for (size_t i = 0; i < m->nheld; i++)
    if (addr < m->held[i].addr + m->held[i].bytes && m->held[i].addr < addr + bytes) return 1;
  return 0;
}

/* A segment held while on the recorded path; without memory to keep the list, leave the path
   (invented addresses are always safe). */
static void path_hold(pt_model_dev *m, uint64_t addr, uint64_t bytes) {
  if (!m->on_path) return;
  if (m->nheld == m->cap_held) {
    size_t cap = m->cap_held ? 2 * m->cap_held : 64;
    pt_addr_hint *v = realloc(m->held, cap * sizeof *v);
    if (!v) {
      leave_path(m);
      return;
    }
    m->held = v;
    m->cap_held = cap;
  }
  m->held[m->nheld++] = (pt_addr_hint){addr, bytes};
}

static void path_drop(pt_model_dev *m, uint64_t addr) {
  for (size_t i = 0; i < m->nheld; i++)
    if (m->held[i].addr == addr) {
      m->held[i] = m->held[--m->nheld];
      return;
    }
}

static uint64_t invent(pt_model_dev *m, uint64_t bytes, uint64_t align) {
  uint64_t va = (m->next_va + align - 1) & ~(align - 1);
  m->next_va = va + bytes;
  return va;
}

/* What the page table refuses as bad arguments (PT_EUSAGE: a range past its VA or already mapped, a page size
   it lacks) came from the run's input, a trace's recorded address or a policy's page_size, not from the
   command line: bad input. */
static int input_error(int rc) { return rc == PT_EUSAGE ? PT_EFORMAT : rc; }

/* Map [va, va+bytes) in the page-table model, if there is one. */
static int pt_map_in_tables(pt_model_dev *m, uint64_t va, uint64_t bytes, int vmm) {
  uint64_t page = vmm || bytes >= (UINT64_C(2) << 20) ? UINT64_C(2) << 20 : UINT64_C(64) << 10;
  int rc;
  if (m->page_size && (rc = m->page_size(m->page_ctx, bytes, &page, m->err)) < 0) return rc;
  uint64_t start = va & ~(UINT64_C(4095)), len = ((va + bytes + 4095) & ~UINT64_C(4095)) - start;
  return input_error(pt_pagetable_map(m->pt, start, len, page, len, m->err));
}

static inline int pt_map(pt_model_dev *m, uint64_t va, uint64_t bytes, int vmm) {
  return m->pt ? pt_map_in_tables(m, va, bytes, vmm) : 0;
}

static inline int pt_unmap(pt_model_dev *m, uint64_t va, uint64_t bytes) {
  if (!m->pt) return 0;
  uint64_t start = va & ~(UINT64_C(4095)), len = ((va + bytes + 4095) & ~UINT64_C(4095)) - start;
  return input_error(pt_pagetable_unmap(m->pt, start, len, m->err));
}

static int md_malloc(void *st, uint64_t bytes, uint64_t *addr) {
  pt_model_dev *m = st;
  if (m->on_path && m->next_hint < m->nhints && m->hints[m->next_hint].bytes == bytes &&
      !overlaps_held(m, m->hints[m->next_hint].addr, bytes)) {
    *addr = m->hints[m->next_hint++].addr;
    path_hold(m, *addr, bytes);
  } else {
    if (m->on_path) leave_path(m);
    *addr = invent(m, bytes, VA_ALIGN);
  }
  return pt_map(m, *addr, bytes, 0);
}

static int md_free(void *st, uint64_t addr, uint64_t bytes) {
  pt_model_dev *m = st;
  if (m->on_path) path_drop(m, addr);
  return pt_unmap(m, addr, bytes);
}

static int md_address_reserve(void *st, uint64_t bytes, uint64_t align, uint64_t *va) {
  pt_model_dev *m = st;
  if (m->next_va_hint < m->nva_hints && m->va_hints[m->next_va_hint].bytes == bytes) {
    *va = m->va_hints[m->next_va_hint++].addr;
    return 0;
  }
  m->nva_hints = 0; /* off the given path for good */
  *va = invent(m, bytes, align > VA_ALIGN ? align : VA_ALIGN);
  return 0;
}

static int md_address_free(void *st, uint64_t va, uint64_t bytes) {
  (void)st, (void)va, (void)bytes;
  return 0;
}

static int md_mem_create(void *st, uint64_t bytes, uint64_t *handle) {
  pt_model_dev *m = st;
  (void)bytes;
  *handle = ++m->next_handle;
  return 0;
}

static int md_mem_release(void *st, uint64_t handle, uint64_t bytes) {
  (void)st, (void)handle, (void)bytes;
  return 0;
}

static int md_mem_map(void *st, uint64_t va, uint64_t bytes, uint64_t handle) {
  (void)handle;
  return pt_map(st, va, bytes, 1);
}

static int md_mem_set_access(void *st, uint64_t va, uint64_t bytes) {
  (void)st, (void)va, (void)bytes;
  return 0;
}

static int md_mem_unmap(void *st, uint64_t va, uint64_t bytes) { return pt_unmap(st, va, bytes); }

static int md_adopt(void *st, uint64_t addr, uint64_t bytes, uint64_t page, uint64_t *handles) {
  pt_model_dev *m = st;
  for (uint64_t off = 0; page && off < bytes; off += page) *handles++ = ++m->next_handle;
  path_hold(m, addr, bytes);
  return pt_map(m, addr, bytes, 0);
}

const pt_dev_ops pt_model_dev_ops = {
    .name = "model",
    .malloc = md_malloc,
    .free = md_free,
    .address_reserve = md_address_reserve,
    .address_free = md_address_free,
    .mem_create = md_mem_create,
    .mem_release = md_mem_release,
    .mem_map = md_mem_map,
    .mem_set_access = md_mem_set_access,
    .mem_unmap = md_mem_unmap,
    .adopt = md_adopt,
};
