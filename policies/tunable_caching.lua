-- tunable_caching.lua — PyTorch's caching allocator with its three main
-- PYTORCH_CUDA_ALLOC_CONF knobs opened to the tuner.
--
-- Where the numbers come from: PyTorch's c10/cuda/CUDAAllocatorConfig.cpp
-- (c10/core/AllocatorConfig.cpp in newer releases):
--   garbage_collection_threshold: PyTorch accepts 0 < t < 1; 0 here means
--     "key not set" (PyTorch's default, off), so the range is {0, 0.99}.
--   max_split_size_mb: PyTorch needs at least 20 (kLargeBuffer; releases
--     before the AllocatorConfig rewrite demanded more than 20); its default
--     is unlimited, the tuner searches 20 .. 4096 MiB on a log scale and the
--     default here is the top of that range.  For the unlimited baseline use
--     pytorch_native.lua.
--   roundup_power2_divisions: PyTorch wants a power of two; 0 means off
--     (its default) — an exporter leaves the key out then.  Or the list
--     form, divisions per power-of-two size interval: the tuner tries each
--     listed table as one choice (docs/model.md), here PyTorch's documented
--     example and two that round small or large sizes only.
-- max_non_split_rounding_mb stays at PyTorch's 20 (the mechanism's default).
return {
  name = "tunable_caching",
  doc = "PyTorch's caching allocator with garbage_collection_threshold, max_split_size_mb and "
    .. "roundup_power2_divisions open to tuning",
  mechanism = "caching",
  params = {
    garbage_collection_threshold = {
      default = 0,
      range = {0, 0.99},
      scale = "linear",
      doc = "reclaim cached blocks once reserved memory passes this fraction of the cap; 0 = off",
    },
    max_split_size_mb = {
      default = 4096,
      range = {20, 4096},
      scale = "log",
      doc = "blocks at least this large (MiB) are never split",
    },
    roundup_power2_divisions = {
      default = 0,
      choices = {0, 1, 2, 4, 8, 16, "[256:1,512:2,1024:4,>:8]", "[64:8,>:1]", "[256:1,>:4]"},
      integer = true,
      doc = "round sizes up to one of N divisions of their power-of-two interval; 0 = off; "
        .. "or N per interval, [BOUNDARY_MIB:N,...,>:N]",
    },
  },
}
