-- odd_segment.lua — a segment_size no table of pieces fits: odd sizes get
-- bytes * 3 // 2 + 7, even ones 2 MiB multiples.  Export must refuse it
-- (tests/test_hooktab.c).
local MiB = 1024 * 1024
return {
  name = "odd_segment",
  mechanism = "caching",
  segment_size = function(p, bytes)
    if bytes % 2 == 1 then return bytes * 3 // 2 + 7 end
    return (bytes + 2 * MiB - 1) // (2 * MiB) * (2 * MiB)
  end,
}
