/* testdev.c — a backend of modelled devices for the live allocator's tests (see testdev.h). */
#include "testdev.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "modeldev.h"

static int m_open(void *ctx, int device, pt_err *err, const pt_dev_ops **ops, void **st) {
  pt_test_models *b = ctx;
  (void)device;
  pt_model_dev *m = malloc(sizeof *m);
  if (!m) return pt_err_set(err, PT_ENOMEM, "out of memory");
  pt_model_dev_init(m, NULL, 0, err);
  if (b) __atomic_add_fetch(&b->opened, 1, __ATOMIC_RELAXED);
  *ops = &pt_model_dev_ops;
  *st = m;
  return 0;
}

static void m_close(void *ctx, void *st) {
  pt_test_models *b = ctx;
  pt_model_dev_done(st);
  free(st);
  if (b) __atomic_add_fetch(&b->closed, 1, __ATOMIC_RELAXED);
}

int pt_test_threads(int n, void *(*fn)(void *), void *args, size_t size) {
  pthread_t t[64];
  int started = 0, bad = 0;
  if (n > 64) return -1;
  while (started < n && pthread_create(&t[started], NULL, fn, (char *)args + (size_t)started * size) == 0) started++;
  for (int i = 0; i < started; i++) {
    void *r;
    pthread_join(t[i], &r);
    bad += (int)(intptr_t)r;
  }
  return started == n ? bad : -1;
}

pt_alloc_backend pt_test_model_backend(pt_test_models *counts) {
  return (pt_alloc_backend){m_open, m_close, NULL, counts};
}
