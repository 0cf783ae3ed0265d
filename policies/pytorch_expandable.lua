-- pytorch_expandable.lua — PyTorch's caching allocator with
-- PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.
--
-- Where it comes from: c10/cuda/CUDACachingAllocator.cpp's ExpandableSegment:
-- one virtual address range reserved per stream and pool, grown and shrunk by
-- mapping physical handles (cuMemCreate / cuMemMap / cuMemSetAccess) in 2 MiB
-- pages for the small pool and 20 MiB for the large pool (kSmallBuffer,
-- kLargeBuffer).  docs/design.md's H200 table prices the growth: about 56 µs per
-- 2 MiB handle mapped (create + map + set access) and 39 µs to unmap and
-- release one.
--
-- The knobs PyTorch 2.11 reads with expandable segments too, at its defaults
-- (see pytorch_native.lua), named as PYTORCH_CUDA_ALLOC_CONF names them:
--   roundup_power2_divisions: round_size is the same; a rounded request
--     decides which free block fits and how many pages a growth maps;
--   max_split_size_mb (with max_non_split_rounding_mb): a free block at least
--     that large is refused to a smaller request, and the segment grows instead;
--   garbage_collection_threshold: accepted, and changes nothing here: the
--     collection frees only unsplit blocks that are not expandable;
--   large_segment_size_mb: the large pool's page size (20 MiB by default).
return {
  name = "pytorch_expandable",
  doc = "PyTorch's caching allocator with expandable_segments:True (VMM-backed, growable segments)",
  mechanism = "expandable",
  params = {
    max_split_size_mb = {
      default = math.huge,
      doc = "free blocks at least this large (MiB) serve only requests at least this large; inf = unlimited",
    },
    max_non_split_rounding_mb = {
      default = 20,
      doc = "a request of max_split_size_mb or more may take a free block up to this much (MiB) larger",
    },
    garbage_collection_threshold = {
      default = 0,
      doc = "accepted as PyTorch accepts it; with expandable segments its collection frees nothing",
    },
    large_segment_size_mb = {
      default = 20,
      integer = true,
      doc = "the large pool's page (handle) size in MiB (PyTorch's large_segment_size_mb)",
    },
    roundup_power2_divisions = {
      default = 0,
      integer = true,
      doc = "round sizes up to one of N divisions of their power-of-two interval; 0 = off; "
        .. "or N per interval, [BOUNDARY_MIB:N,...,>:N]",
    },
  },
}
