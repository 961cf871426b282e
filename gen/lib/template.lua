-- Template engine.
--
-- A template is text with two kinds of markup:
--   * a line whose first non-blank character is '%' is Lua code (the '%' is dropped);
--   * '${expr}' inside a text line is replaced by the value of expr.
-- Each template line compiles to exactly one Lua line, so a Lua error inside a
-- template reports templates/FILE:LINE. Substituted values must be strings or
-- integers (floats go through fmt.float): tostring() of numbers differs between
-- LuaJIT and Lua 5.4, and output must be byte-identical under both.
local fmt = require("lib.fmt")

local M = {}

local function value_to_text(x)
  local t = type(x)
  if t == "string" then return x end
  if t == "number" and x == math.floor(x) then return fmt.int(x) end
  -- level 2: the template line that substituted x
  error("template substitution must be a string or an integer, got " .. (t == "number" and tostring(x) or t), 2)
end

-- Compile one text line into a Lua expression (a concatenation).
local function compile_text_line(line)
  local parts, pos = {}, 1
  while true do
    local s, e = line:find("${", pos, true)
    if not s then break end
    -- find the matching '}' honouring nested braces
    local depth, i = 1, e + 1
    while i <= #line and depth > 0 do
      local ch = line:sub(i, i)
      if ch == "{" then depth = depth + 1 elseif ch == "}" then depth = depth - 1 end
      i = i + 1
    end
    if depth > 0 then return nil, "unclosed '${'" end
    parts[#parts + 1] = string.format("%q", line:sub(pos, s - 1))
    parts[#parts + 1] = "_T(" .. line:sub(e + 1, i - 2) .. ")"
    pos = i
  end
  -- the newline goes in as an escape: %q would write "\<LF>", i.e. a second Lua line
  parts[#parts + 1] = string.format("%q", line:sub(pos))
  parts[#parts + 1] = '"\\n"'
  return table.concat(parts, "..")
end

-- Compile template text into a function(env) -> string.
-- name is the path reported in errors (e.g. "templates/gemm/simt.kgt").
function M.compile(text, name)
  local code = { "local _O, _T = ...; " }
  local n = 0
  for line in (text .. (text:sub(-1) == "\n" and "" or "\n")):gmatch("([^\n]*)\n") do
    n = n + 1
    local lua = line:match("^%s*%%(.*)$")
    local piece
    if lua then
      piece = lua
    else
      local expr, err = compile_text_line(line)
      if not expr then return nil, string.format("%s:%d: error: %s", name, n, err) end
      piece = "_O[#_O+1]=" .. expr
    end
    code[#code + 1] = piece .. "\n"
  end
  local src = table.concat(code)
  return function(env)
    local chunk, err = (loadstring or load)(src, "@" .. name)
    if not chunk then return nil, err end
    if setfenv then setfenv(chunk, env) else
      chunk, err = load(src, "@" .. name, "t", env)
      if not chunk then return nil, err end
    end
    local out = {}
    local ok, rerr = pcall(chunk, out, value_to_text)
    if not ok then return nil, tostring(rerr) end
    return table.concat(out)
  end
end

return M
