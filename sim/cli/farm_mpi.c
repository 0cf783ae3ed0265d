/*
 * farm_mpi.c — the farm's transport over MPI (farm.h), built into
 * pagetune-mpi only: pagetune itself never links libmpi.  Rank 0 is the
 * writer; worker w is rank w + 1.  Every message is one MPI_Send of bytes
 * with one tag; the writer takes the next from any rank (MPI_Iprobe, then
 * MPI_Recv of its size).  MPI's default error handler stands: a rank that
 * fails ends the job, as the launcher's own rule is.
 */
#include <config.h>

#include "farm_mpi.h"

#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAG 14 /* the issue that asked for it */

typedef struct mpi_st {
  int rank, size;
  char library[MPI_MAX_LIBRARY_VERSION_STRING];
} mpi_st;

static mpi_st the_st; /* MPI is one per process: its state is too */

static int too_big(size_t len, pt_err *err) {
  return len > INT_MAX ? pt_err_set(err, PT_ELIMIT, "a message of %zu bytes: past MPI's count", len) : 0;
}

static int mpi_send(void *st, int w, const void *buf, size_t len, pt_err *err) {
  int rc = too_big(len, err);
  if (rc == 0 && MPI_Send(buf, (int)len, MPI_BYTE, w + 1, TAG, MPI_COMM_WORLD) != MPI_SUCCESS)
    rc = pt_err_set(err, PT_EIO, "MPI_Send to rank %d failed", w + 1);
  return rc;
}

/* The next message from source (MPI_ANY_SOURCE: any), into a malloc'd *buf. */
static int take(int source, int *from, void **buf, size_t *len, pt_err *err) {
  MPI_Status s;
  int n;
  *buf = NULL;
  /* polled, sleeping between polls (10 µs, doubling to 250 µs): MPI_Probe spins a core, which a waiting rank 0
     takes from a worker when ranks share cores */
  int flag = 0;
  for (long ns = 10000; !flag; ns = ns < 250000 ? ns * 2 : ns) {
    if (MPI_Iprobe(source, TAG, MPI_COMM_WORLD, &flag, &s) != MPI_SUCCESS) return pt_err_set(err, PT_EIO, "MPI_Iprobe failed");
    if (!flag) nanosleep(&(struct timespec){0, ns}, NULL);
  }
  if (MPI_Get_count(&s, MPI_BYTE, &n) != MPI_SUCCESS) return pt_err_set(err, PT_EIO, "MPI_Get_count failed");
  if (from) *from = s.MPI_SOURCE - 1;
  if (!(*buf = malloc(n ? (size_t)n : 1))) return pt_err_set(err, PT_ENOMEM, "out of memory");
  if (MPI_Recv(*buf, n, MPI_BYTE, s.MPI_SOURCE, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
    free(*buf);
    *buf = NULL;
    return pt_err_set(err, PT_EIO, "MPI_Recv from rank %d failed", s.MPI_SOURCE);
  }
  *len = (size_t)n;
  return 0;
}

static int mpi_recv(void *st, int *w, void **buf, size_t *len, pt_err *err) {
  *w = -1;
  return take(MPI_ANY_SOURCE, w, buf, len, err);
}

static int mpi_get(void *st, void **buf, size_t *len, pt_err *err) { return take(0, NULL, buf, len, err); }

static int mpi_put(void *st, const void *buf, size_t len, pt_err *err) {
  int rc = too_big(len, err);
  if (rc == 0 && MPI_Send(buf, (int)len, MPI_BYTE, 0, TAG, MPI_COMM_WORLD) != MPI_SUCCESS)
    rc = pt_err_set(err, PT_EIO, "MPI_Send to rank 0 failed");
  return rc;
}

static int mpi_id(void *st) { return ((mpi_st *)st)->rank; }

/* Rank 0's bytes to every rank: the length, then the bytes in pieces MPI can count. */
static int mpi_bcast(void *st, void **buf, size_t *len, pt_err *err) {
  mpi_st *m = st;
  uint64_t n = m->rank == 0 ? (*len == SIZE_MAX ? UINT64_MAX : (uint64_t)*len) : 0;
  if (MPI_Bcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
    return pt_err_set(err, PT_EIO, "MPI_Bcast failed");
  if (n == UINT64_MAX) { /* rank 0 could not read it */
    *len = SIZE_MAX;
    return 0;
  }
  if (m->rank != 0) {
    if (n > SIZE_MAX / 2 || !(*buf = malloc(n ? (size_t)n : 1))) return pt_err_set(err, PT_ENOMEM, "out of memory");
    *len = (size_t)n;
  }
  for (uint64_t off = 0; off < n;) {
    int piece = n - off > (1u << 30) ? 1 << 30 : (int)(n - off);
    if (MPI_Bcast((char *)*buf + off, piece, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
      return pt_err_set(err, PT_EIO, "MPI_Bcast failed");
    off += (uint64_t)piece;
  }
  return 0;
}

static const pt_farm_ops mpi_ops = {"rank", mpi_send, mpi_recv, mpi_get, mpi_put, mpi_id};

int pt_farm_mpi_start(int *argc, char ***argv, pt_farm_launcher *out) {
  if (MPI_Init(argc, argv) != MPI_SUCCESS) return -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &the_st.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &the_st.size);
  int n = 0;
  MPI_Get_library_version(the_st.library, &n);
  char *nl = strchr(the_st.library, '\n');
  if (nl) *nl = 0;
  char *comma = strchr(the_st.library, ','); /* "Open MPI v4.1.4, package: ...": the name and version */
  if (comma) *comma = 0;
  *out = (pt_farm_launcher){&mpi_ops, &the_st, the_st.rank, the_st.size, the_st.library, mpi_bcast};
  return 0;
}

void pt_farm_mpi_end(void) { MPI_Finalize(); }
