-- require.lua — tries to load a module (os, by another name); there is no require.
local os2 = require("os")
os2.execute("touch /tmp/pagetune-require-pwned")
return { name = "require", mechanism = "direct" }
