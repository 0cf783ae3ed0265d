-- bytecode_load.lua — hands load() a binary chunk; the sandbox has no load at all.
local chunk = "\27Lua\84\0\25\147\13\10\26\10\4\8\8\120\86\0\0\0\0\0\0\0\0\0\0\0\40\119\64"
local f = assert(load(chunk, "x", "b"))
f()
return { name = "bytecode_load", mechanism = "direct" }
