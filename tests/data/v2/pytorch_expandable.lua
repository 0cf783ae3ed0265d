-- pytorch_expandable.lua — PyTorch's caching allocator with
-- PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.
--
-- Where it comes from: c10/cuda/CUDACachingAllocator.cpp's ExpandableSegment:
-- one virtual address range reserved per stream and pool, grown and shrunk by
-- mapping physical handles (cuMemCreate / cuMemMap / cuMemSetAccess) in 2 MiB
-- pages for the small pool and 20 MiB for the large pool (kSmallBuffer,
-- kLargeBuffer).  DESIGN.md's H200 numbers price the growth: about 56 µs per
-- 2 MiB handle mapped (create + map + set access) and 39 µs to unmap and
-- release one.
--
-- The mechanism models all of that itself; every other PyTorch knob stays at
-- its default (see pytorch_native.lua), so this policy declares no parameters.
return {
  name = "pytorch_expandable",
  doc = "PyTorch's caching allocator with expandable_segments:True (VMM-backed, growable segments)",
  mechanism = "expandable",
  params = {},
}
