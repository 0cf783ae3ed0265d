-- pytorch_native.lua — PyTorch's CUDA caching allocator (PYTORCH_CUDA_ALLOC_CONF
-- backend:native) exactly as it ships, every knob at its default.
--
-- Where the numbers come from: PyTorch's c10/cuda/CUDAAllocatorConfig.cpp
-- (CUDAAllocatorConfig's constructor; c10/core/AllocatorConfig.h in newer
-- releases) and c10/cuda/CUDACachingAllocator.cpp:
--   m_max_split_size = SIZE_MAX            -> max_split_size_mb unlimited
--   m_max_non_split_rounding_size = kLargeBuffer (20 MiB)
--   m_garbage_collection_threshold = 0     -> off
--   m_roundup_power2_divisions all 0       -> off (plain 512 B / 2 MiB rounding)
-- Parameter names are PYTORCH_CUDA_ALLOC_CONF's keys.
--
-- "Unlimited" is written math.huge (inf): parameters travel to the engine as
-- doubles, and the caching mechanism reads inf as "never refuse to split".
-- No ranges: this policy is the baseline, not something to tune (tunable_caching
-- is); --set still works within what the caching mechanism accepts.
return {
  name = "pytorch_native",
  doc = "PyTorch's native CUDA caching allocator with its default settings",
  mechanism = "caching",
  params = {
    max_split_size_mb = {
      default = math.huge,
      doc = "blocks at least this large (MiB) are never split; inf = unlimited (PyTorch's default)",
    },
    max_non_split_rounding_mb = {
      default = 20,
      doc = "an unsplittable request may take a cached block up to this much (MiB) larger",
    },
    garbage_collection_threshold = {
      default = 0,
      doc = "reclaim cached blocks once reserved memory passes this fraction of the cap; 0 = off",
    },
    roundup_power2_divisions = {
      default = 0,
      integer = true,
      doc = "round sizes up to one of N divisions of their power-of-two interval; 0 = off",
    },
  },
}
