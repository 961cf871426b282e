-- Output tree writer: all-or-nothing, unchanged files untouched, stale files removed.
--
-- Outputs are computed in memory first; the caller writes only when the whole
-- run had no error. Every changed file is first written to NAME.tmp; only when
-- all of them were written are they renamed over their targets, so a full disk
-- leaves the tree as it was. Files in the managed directories that are no
-- longer produced are deleted.
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
  local unchanged, deleted = 0, 0
  os.execute('mkdir -p "' .. out_dir .. '"')
  for _, sub in ipairs(managed) do os.execute('mkdir -p "' .. out_dir .. "/" .. sub .. '"') end
  -- phase 1: every changed file goes to NAME.tmp; any failure removes them all
  local staged = {}
  local function unstage()
    for _, path in ipairs(staged) do os.remove(path .. ".tmp") end
  end
  for _, rel in ipairs(fmt.sorted_keys(outputs)) do
    local path = out_dir .. "/" .. rel
    local content = outputs[rel]
    if read_file(path) == content then
      unchanged = unchanged + 1
    else
      local f, err = io.open(path .. ".tmp", "wb")
      local ok = f and f:write(content)
      if f then ok = f:close() and ok end
      staged[#staged + 1] = path
      if not ok then unstage(); return nil, err or ("cannot write " .. path .. ".tmp") end
    end
  end
  -- phase 2: rename into place (no new data is written from here on)
  for _, path in ipairs(staged) do
    local ok, err = os.rename(path .. ".tmp", path)
    if not ok then unstage(); return nil, err end
  end
  -- phase 3: files of variants that no longer exist
  for _, sub in ipairs(managed) do
    for _, name in ipairs(list_dir(out_dir .. "/" .. sub)) do
      local rel = sub .. "/" .. name
      if not outputs[rel] then
        os.remove(out_dir .. "/" .. rel)
        deleted = deleted + 1
      end
    end
  end
  return #staged, unchanged, deleted
end

return M
