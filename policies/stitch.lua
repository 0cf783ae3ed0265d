-- stitch.lua — VMM stitching in the style of GMLake (Guo et al., "GMLake:
-- Efficient and Transparent GPU Memory Defragmentation for Large-scale DNN
-- Training with Virtual Memory Stitching", ASPLOS 2024): when no free block
-- fits, map free physical chunks into a new contiguous virtual range instead
-- of allocating more memory.
--
-- Where the numbers come from: the H200's VMM granularity, 2 MiB (docs/design.md),
-- is the smallest chunk that can be stitched, hence the default and the floor
-- of stitch_min_bytes; 1 GiB bounds the tuner's search.  Stitching costs a
-- cuMemAddressReserve (0.6–6 µs), a cuMemMap per chunk (1–2 µs) and a
-- cuMemSetAccess (25 µs for 2 MiB) on the H200.
local MiB = 1024 * 1024
return {
  name = "stitch",
  doc = "GMLake-style stitching of free physical chunks into new contiguous ranges",
  mechanism = "stitch",
  params = {
    stitch_min_bytes = {
      default = 2 * MiB,
      range = {2 * MiB, 1024 * MiB},
      scale = "log",
      integer = true,
      doc = "the smallest free physical chunk (bytes) worth stitching into a new range",
    },
  },
}
