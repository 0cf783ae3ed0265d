-- hook_returns_string.lua — page_size answers with a string instead of bytes.
return {
  name = "hook_returns_string",
  mechanism = "caching",

  page_size = function(p, bytes)
    return "2M"
  end,
}
