-- Shared helpers for the generator's busted specs (tests/lua/*_spec.lua).
--
-- Run from the repository root under either interpreter:
--     luajit /usr/bin/busted tests/lua
--     lua5.4 /usr/bin/busted tests/lua
-- Requiring this module puts gen/ on package.path, so require("lib.spec"),
-- require("families.gemm") etc. load the generator's own modules.
local H = {}

local function shell_quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end
H.q = shell_quote

-- Repository root: the directory busted runs in (checked, so a wrong cwd fails loudly).
do
  local p = io.popen("pwd")
  H.root = p:read("*l")
  p:close()
  local f = io.open(H.root .. "/gen/kgen", "rb")
  assert(f, "run the specs from the repository root (gen/kgen not found under " .. H.root .. ")")
  f:close()
end

if not package.path:find(H.root .. "/gen/?.lua", 1, true) then
  package.path = H.root .. "/gen/?.lua;" .. package.path
end

-- The interpreter running the specs; the CLI runs under the same one unless told otherwise.
H.lua = rawget(_G, "jit") and "luajit" or ("lua" .. _VERSION:match("%d+%.%d+"))

-- Run a shell command; returns combined stdout+stderr and the exit status.
function H.sh(cmd)
  local p = io.popen("{ " .. cmd .. "; } 2>&1; echo \"__rc=$?\"")
  local out = p:read("*a")
  p:close()
  local body, rc = out:match("^(.*)__rc=(%d+)\n?$")
  return body, tonumber(rc)
end

-- Run gen/kgen with an argument string; env: table of extra environment variables.
-- Returns output (stdout and stderr together), exit status.
function H.kgen(args, env)
  env = env or {}
  -- KG_KERNELS is always set (empty: every variant) so the caller's environment cannot leak in
  local vars = "KG_LUA=" .. shell_quote(env.KG_LUA or H.lua) .. " KG_KERNELS=" .. shell_quote(env.KG_KERNELS or "")
  return H.sh("env " .. vars .. " " .. shell_quote(H.root .. "/gen/kgen") .. " " .. args)
end

-- Fresh empty directory derived from os.tmpname(); removed by H.cleanup().
local made = {}
function H.tmpdir()
  local name = os.tmpname()
  os.remove(name)
  local _, rc = H.sh("mkdir -p " .. shell_quote(name))
  assert(rc == 0, "cannot create " .. name)
  made[#made + 1] = name
  return name
end

function H.cleanup()
  for i = #made, 1, -1 do
    H.sh("rm -rf " .. shell_quote(made[i]))
    made[i] = nil
  end
end

function H.write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

function H.read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

-- A spec directory holding the given files: { ["a.lua"] = "source", ... }.
function H.spec_dir(files)
  local dir = H.tmpdir()
  for name, text in pairs(files) do H.write(dir .. "/" .. name, text) end
  return dir
end

-- Minimal templates (banner + name) so tests that are not about kernel bodies
-- do not depend on templates/ (which other people edit).
-- One stub per value of the gemm family's kernel axis.
function H.stub_templates()
  local dir = H.tmpdir()
  H.sh("mkdir -p " .. shell_quote(dir .. "/gemm"))
  local kernels
  for _, axis in ipairs(require("families.gemm").axes) do
    if axis.name == "kernel" then kernels = axis.values end
  end
  for _, k in ipairs(kernels) do
    H.write(dir .. "/gemm/" .. k .. ".kgt", "${banner}\n/* ${v.name}: ${v.kernel} ${TA} TM=${TM} */\n")
  end
  -- the fp4 family's templates (one stub per file it renders)
  H.sh("mkdir -p " .. shell_quote(dir .. "/fp4"))
  for _, t in ipairs(require("families.fp4").templates) do H.write(dir .. "/" .. t, "${banner}\n/* ${v.name} */\n") end
  for _, fam in ipairs({ "gemm_fp4", "dualgemm_fp4", "amax" }) do
    for _, t in ipairs(require("families." .. fam).templates) do H.write(dir .. "/" .. t, "${banner}\n/* ${v.name} */\n") end
  end
  -- the wave family's templates
  H.sh("mkdir -p " .. shell_quote(dir .. "/wave"))
  for _, t in ipairs(require("families.wave").templates) do H.write(dir .. "/" .. t, "${banner}\n/* ${v.name} */\n") end
  -- the attention family's templates
  H.sh("mkdir -p " .. shell_quote(dir .. "/attn"))
  for _, t in ipairs(require("families.attention").templates) do H.write(dir .. "/" .. t, "${banner}\n/* ${v.name} */\n") end
  return dir
end

-- Split text into lines (no trailing empty line).
function H.lines(text)
  local out = {}
  for l in text:gmatch("([^\n]*)\n") do out[#out + 1] = l end
  local tail = text:match("([^\n]+)$")
  if tail then out[#out + 1] = tail end
  return out
end

-- Parse "PATH:LINE: error: MSG" lines of a kgen run.
function H.errors(output)
  local errs = {}
  for _, l in ipairs(H.lines(output)) do
    local path, line, msg = l:match("^(.-):(%d+): error: (.*)$")
    if path then errs[#errs + 1] = { path = path, line = tonumber(line), msg = msg, text = l } end
  end
  return errs
end

-- Files under dir: relpath -> { data = content, mtime = "seconds.nanoseconds" }.
function H.snapshot(dir)
  local snap = {}
  local out = H.sh("cd " .. shell_quote(dir) .. " && find . -type f -printf '%P\\t%T@\\n' | LC_ALL=C sort")
  for _, l in ipairs(H.lines(out)) do
    local rel, mtime = l:match("^(.-)\t(.*)$")
    if rel then snap[rel] = { data = H.read(dir .. "/" .. rel), mtime = mtime } end
  end
  return snap
end

-- Sorted relative paths of the files under dir.
function H.files(dir)
  local names = {}
  for rel in pairs(H.snapshot(dir)) do names[#names + 1] = rel end
  table.sort(names)
  return names
end

-- Axis-complete variant: fills defaults the way lib.expand does.
function H.full(family, partial)
  local v = {}
  for k, x in pairs(partial) do v[k] = x end
  for _, axis in ipairs(family.axes) do
    if v[axis.name] == nil then
      local d = axis.default
      if type(d) == "function" then d = d(v) end
      v[axis.name] = d
    end
  end
  return v
end

return H
