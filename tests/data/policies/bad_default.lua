-- bad_default.lua — a parameter whose default lies outside its own range.
return {
  name = "bad_default",
  mechanism = "caching",
  params = {
    garbage_collection_threshold = { default = 0.5, range = {0, 0.99} },
    max_split_size_mb = {
      range = {20, 4096},
      default = 10,
      scale = "log",
    },
  },
}
