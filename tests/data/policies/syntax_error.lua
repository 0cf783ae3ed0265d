-- syntax_error.lua — not valid Lua.
return {
  name = "syntax_error",
  mechanism = "caching"
  params = {},
}
