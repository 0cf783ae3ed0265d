/*
 * farm_mpi.h — MPI as the farm's launcher (farm.h), for pagetune-mpi's main:
 * MPI_Init, then the launcher its commands find (rank, size, the transport,
 * the broadcast of --broadcast-traces); MPI_Finalize at the end.
 */
#ifndef PT_CLI_FARM_MPI_H
#define PT_CLI_FARM_MPI_H

#include "farm.h"

/* MPI_Init and this process's launcher into *out: 0, or -1 when MPI_Init failed. */
int pt_farm_mpi_start(int *argc, char ***argv, pt_farm_launcher *out /* OUT */);
void pt_farm_mpi_end(void);

#endif
