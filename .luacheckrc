-- luacheck configuration: `luacheck gen specs tests/lua` must be clean.
-- The generator runs under LuaJIT and Lua 5.4 (it uses setfenv/loadstring when
-- present, load with an env otherwise), so it may use the union of both.
std = "luajit+lua54"
max_line_length = 200

-- Spec files run in kgen's sandbox (gen/lib/spec.lua): family constructors and
-- side-effect-free libraries only. Anything else (os, io, require, ...) is an error.
files["specs"] = {
  std = "none",
  read_globals = {
    "gemm", "dualgemm", "fp4", "gemm_fp4", "dualgemm_fp4", "amax", "wave", "attention",
    "ipairs", "pairs", "type", "tostring", "tonumber", "select", "string", "table", "math",
  },
}

-- busted specs and their helper
files["tests/lua"] = {
  std = "+busted",
}
