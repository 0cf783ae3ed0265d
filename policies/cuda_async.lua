-- cuda_async.lua — CUDA's stream-ordered allocator: cudaMallocAsync /
-- cudaFreeAsync from the device's default memory pool.
--
-- Where the numbers come from: the CUDA runtime's cudaMemPoolAttrReleaseThreshold,
-- whose default on the default pool is 0 — at each synchronisation the pool
-- gives back to the driver everything above 0 bytes it is not using.  docs/design.md
-- measured on the H200: 0.7–1.4 µs per cudaMallocAsync / cudaFreeAsync from a
-- warm pool, against 45–47 µs for cudaMalloc.
--
-- The pool as the async_pool mechanism models it (sim/asyncpool.c says why):
-- one pool for every stream; one VA range that grows at its end; backing added,
-- remapped and released in chunks of chunk_mb (32 MiB: what the H200's driver,
-- 580.159.04, was seen to use — NVIDIA does not document it, and no API sets
-- it, so it is not a tuning knob); blocks may span chunks; best fit by size,
-- the free block at the end used last.
--
-- Note: PyTorch's backend:cudaMallocAsync (c10/cuda/CUDAMallocAsyncAllocator.cpp,
-- lazy_init_device) sets the threshold to UINT64_MAX, i.e. never release; to
-- model PyTorch's backend rather than CUDA's default, set the largest value the
-- async_pool mechanism takes, 2^50 bytes (more than any GPU holds):
-- --set release_threshold=1125899906842624.  So set, the model's peak reserved
-- bytes on the real traces varlen_infer, llm_decode and transformer_train are
-- 352, 64 and 992 MiB; PyTorch measured 352, 64 and 1024 MiB.
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
    chunk_mb = {
      default = 32,
      integer = true,
      doc = "MiB of backing the driver adds at a time (measured on the H200; the driver's, not a setting)",
    },
    free_lag = {
      default = 0,
      integer = true,
      doc = "later requests a free stays pending on the GPU (reused, merged only with pending frees); "
        .. "0: every free seen complete at once (the GPU keeps up). The GPU's lag, not a setting: "
        .. "sweep it to see the spread a real run can fall in",
    },
    gpu_lag = {
      default = 1,
      integer = true,
      doc = "1: a free whose GPU time the trace measured (+gpu, trace import --gpu-frees) stays pending "
        .. "until the GPU passed it; 0: such frees are as any other (free_lag)",
    },
    lazy_check = {
      default = 2,
      integer = true,
      doc = "1: a free is seen complete only when a request finds no free block that serves it without "
        .. "new backing, or at a synchronisation (+sync), and until then serves its own stream's requests "
        .. "first (the driver's rule, measured on the H200); 0: seen complete once the GPU passed it (as "
        .. "if the program synchronised before every request); 2: 1 on a trace that says where the "
        .. "program synchronised (+sync: trace import --async-run), else 0",
    },
    adopt_initial = {
      default = 0,
      integer = true,
      doc = "1: segments alive at trace start are kept as recorded (another allocator made them); "
        .. "0: their live blocks are allocated from the pool first, as the backend would have",
    },
  },
}
