/*
 * oomthrow.cc — how the allocator library reports out of memory to PyTorch.
 *
 * Under torch.cuda.memory.change_current_allocator PyTorch does not check
 * what the allocation function returns: a NULL becomes a tensor at address
 * 0, and the first kernel on it fails with "an illegal memory access", which
 * leaves the CUDA context unusable (docs/pytorch-pluggable.md, seen on the
 * H200).  A C++ exception thrown from the allocation function reaches Python
 * as a RuntimeError carrying its message, and the program can go on (RMM's
 * allocator does the same).  This is the one C++ function of the library:
 * C cannot throw.  alloclib.c is compiled with -fexceptions so that the
 * exception unwinds through it; nothing is locked when it is thrown.
 */
#include <stdexcept>

extern "C" __attribute__((visibility("hidden"))) void pt_alloc_throw(const char *msg);

extern "C" void pt_alloc_throw(const char *msg) { throw std::runtime_error(msg); }
