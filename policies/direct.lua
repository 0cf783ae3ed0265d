-- direct.lua — no allocator at all: one cudaMalloc per request, one cudaFree
-- per free (PyTorch with PYTORCH_NO_CUDA_MEMORY_CACHING=1 behaves so).
--
-- The baseline every caching policy is measured against.  docs/design.md's H200
-- numbers: cudaMalloc 45–47 µs (512 B – 16 MiB), 77 µs (256 MiB), 124 µs
-- (1 GiB); cudaFree 35–43 µs, 183 µs, 609 µs.  Nothing to set.
return {
  name = "direct",
  doc = "one cudaMalloc per request and one cudaFree per free: no caching",
  mechanism = "direct",
  params = {},
}
