-- tunable_expandable.lua — PyTorch's caching allocator with
-- expandable_segments:True, its knobs open to the tuner.
--
-- The knobs that change what expandable segments do (pytorch_expandable.lua
-- says how): max_split_size_mb, searched 20 .. 4096 MiB on a log scale (the
-- top of the range is the default here; for PyTorch's unlimited default use
-- pytorch_expandable.lua), and roundup_power2_divisions, among powers of two
-- and three per-interval lists, each tried as one choice (docs/model.md).
-- garbage_collection_threshold is left out: with expandable segments
-- PyTorch's collection frees nothing, so there is nothing to search.
return {
  name = "tunable_expandable",
  doc = "PyTorch's caching allocator with expandable_segments:True, max_split_size_mb and "
    .. "roundup_power2_divisions open to tuning",
  mechanism = "expandable",
  params = {
    max_split_size_mb = {
      default = 4096,
      range = {20, 4096},
      scale = "log",
      doc = "free blocks at least this large (MiB) serve only requests at least this large",
    },
    roundup_power2_divisions = {
      default = 0,
      choices = {0, 2, 4, 8, 16, "[256:1,512:2,1024:4,>:8]", "[64:8,>:1]", "[256:1,>:4]"},
      integer = true,
      doc = "round sizes up to one of N divisions of their power-of-two interval; 0 = off; "
        .. "or N per interval, [BOUNDARY_MIB:N,...,>:N]",
    },
  },
}
