-- precompiled.src.lua — the source of precompiled.lua, a binary chunk (luac5.4 -s -o precompiled.lua precompiled.src.lua);
-- well-formed as source, refused as bytecode.
return { name = "precompiled", mechanism = "direct" }
