-- io_open.lua — tries to create a file at load; the sandbox has no io.
local f = io.open("/tmp/pagetune-io-open-pwned", "w")
f:write("pwned")
f:close()
return { name = "io_open", mechanism = "direct" }
