-- large_page_threshold.lua — PyTorch's caching allocator, with the page size
-- and the segment size chosen by one threshold: requests at or above it get
-- 2 MiB pages and a segment of their own; smaller ones share 64 KiB-paged
-- segments.
--
-- Where the numbers come from: Hopper's page sizes (docs/h200-translation.md: 4 KiB, 64 KiB,
-- 2 MiB, 512 MiB; the H200's VMM granularity is 2 MiB) and PyTorch's
-- c10/cuda/CUDACachingAllocator.cpp constants: kSmallSize 1 MiB (the default
-- threshold, PyTorch's small/large pool boundary), kSmallBuffer 2 MiB,
-- kMinLargeAlloc 10 MiB, kLargeBuffer 20 MiB, kRoundLarge 2 MiB.
-- Page size is a model-only dimension: through the VMM API a policy chooses
-- handle sizes (2 MiB multiples), not the hardware page size (docs/h200-translation.md).
local KiB, MiB = 1024, 1024 * 1024
local SMALL_PAGE, LARGE_PAGE = 64 * KiB, 2 * MiB

local function round_up(bytes, to) return (bytes + to - 1) // to * to end

return {
  name = "large_page_threshold",
  doc = "2 MiB pages and a segment of their own for requests at or above a threshold; 64 KiB pages below",
  mechanism = "caching",
  params = {
    large_page_threshold = {
      default = 1 * MiB,
      range = {64 * KiB, 1024 * MiB},
      scale = "log",
      integer = true,
      doc = "bytes from which a request gets 2 MiB pages and its own segment",
    },
  },

  page_size = function(p, bytes)
    if bytes >= p.large_page_threshold then return LARGE_PAGE end
    return SMALL_PAGE
  end,

  segment_size = function(p, bytes)
    if bytes >= p.large_page_threshold then return round_up(bytes, LARGE_PAGE) end
    -- Below the threshold requests share pooled segments: 2 MiB ones as in
    -- PyTorch's small pool; when the threshold is above 2 MiB, the requests
    -- in between get PyTorch's large-pool segments (20 MiB below 10 MiB,
    -- else rounded to 2 MiB), never a segment smaller than the request.
    if bytes <= LARGE_PAGE then return LARGE_PAGE end
    if bytes < 10 * MiB then return 20 * MiB end
    return round_up(bytes, LARGE_PAGE)
  end,
}
