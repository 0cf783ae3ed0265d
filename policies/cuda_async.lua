-- cuda_async.lua — CUDA's stream-ordered allocator: cudaMallocAsync /
-- cudaFreeAsync from the device's default memory pool.
--
-- Where the numbers come from: the CUDA runtime's cudaMemPoolAttrReleaseThreshold,
-- whose default on the default pool is 0 — at each synchronisation the pool
-- gives back to the driver everything above 0 bytes it is not using.  DESIGN.md
-- measured on the H200: 0.7–1.4 µs per cudaMallocAsync / cudaFreeAsync from a
-- warm pool, against 45–47 µs for cudaMalloc.
--
-- Note: PyTorch's backend:cudaMallocAsync (c10/cuda/CUDAMallocAsyncAllocator.cpp,
-- lazy_init_device) sets the threshold to UINT64_MAX, i.e. never release; to
-- model PyTorch's backend rather than CUDA's default, set the largest value the
-- async_pool mechanism takes, 2^50 bytes (more than any GPU holds):
-- --set release_threshold=1125899906842624.
return {
  name = "cuda_async",
  doc = "cudaMallocAsync default pool; memory above release_threshold goes back at synchronisation",
  mechanism = "async_pool",
  params = {
    release_threshold = {
      default = 0,
      integer = true,
      doc = "bytes the pool keeps when it trims (cudaMemPoolAttrReleaseThreshold)",
    },
  },
}
