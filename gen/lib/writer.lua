-- Output tree writer: all-or-nothing, unchanged files untouched, stale files removed.
--
-- Outputs are computed in memory first; the caller writes only when the whole
-- run had no error. Each changed file is written to NAME.tmp and renamed over
-- NAME, so a reader never sees a half-written file. Files in the managed
-- directories that are no longer produced are deleted.
local fmt = require("lib.fmt")

local M = {}

local function read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end
M.read_file = read_file

local function list_dir(dir)
  local names = {}
  local p = io.popen('ls -1A "' .. dir .. '" 2>/dev/null')
  if p then
    for name in p:lines() do names[#names + 1] = name end
    p:close()
  end
  table.sort(names)
  return names
end

-- outputs: map relative path -> content; managed: list of subdirectories whose
-- unknown files are deleted. Returns written, unchanged, deleted counts, or nil, err.
function M.write_tree(out_dir, outputs, managed)
  local written, unchanged, deleted = 0, 0, 0
  os.execute('mkdir -p "' .. out_dir .. '"')
  for _, sub in ipairs(managed) do os.execute('mkdir -p "' .. out_dir .. "/" .. sub .. '"') end
  for _, rel in ipairs(fmt.sorted_keys(outputs)) do
    local path = out_dir .. "/" .. rel
    local content = outputs[rel]
    if read_file(path) == content then
      unchanged = unchanged + 1
    else
      local tmp = path .. ".tmp"
      local f, err = io.open(tmp, "wb")
      if not f then return nil, err end
      f:write(content)
      f:close()
      local ok, rerr = os.rename(tmp, path)
      if not ok then return nil, rerr end
      written = written + 1
    end
  end
  for _, sub in ipairs(managed) do
    for _, name in ipairs(list_dir(out_dir .. "/" .. sub)) do
      local rel = sub .. "/" .. name
      if not outputs[rel] then
        os.remove(out_dir .. "/" .. rel)
        deleted = deleted + 1
      end
    end
  end
  return written, unchanged, deleted
end

return M
