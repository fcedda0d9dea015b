-- nextpage.lua: list a nextpage collection in a Neovim buffer, one line per
-- item, loading the next page when the cursor reaches the end.
--
--   require("nextpage").setup({ field = "name" })   -- optional
--   require("nextpage").open("demo")                 -- or :NextPage demo
--
-- Each list buffer runs its own nextpage process (vim.lsp.rpc.start: LSP
-- framing over stdio) and speaks nextpage's own methods: `loadNext` with
-- `ifLoading: "skip"` and `fields`, so only the shown member of each item
-- crosses the pipe. Wiping the buffer ends the process (`shutdown`, `exit`).
-- Works with Neovim 0.7 and later.

local M = {}

--- Options; change them with setup() or per list with open()'s second argument.
M.config = {
  -- The server's argv. nextpage reads ./nextpage.json from `cwd`; with
  -- no such file it serves the built-in `demo` collection.
  cmd = { "nextpage", "--log-level", "warning" },
  -- The folder the server runs in (nil: Neovim's current directory).
  cwd = nil,
  -- The member shown for each item: a name ("name") or a JSON Pointer
  -- ("/user/login"). false shows each whole item as compact JSON.
  field = "name",
  -- Seconds to wait for the server to exit after `shutdown` + `exit`
  -- before it is terminated.
  exit_timeout = 2,
}

local namespace = vim.api.nvim_create_namespace("nextpage")
local sessions = {} -- by buffer number

function M.setup(options)
  M.config = vim.tbl_deep_extend("force", M.config, options or {})
end

--- The state of a list buffer: collection, count, has_next, loading,
--- status (the text shown), exit_code (once the server ended).
function M.session(buffer)
  return sessions[buffer or vim.api.nvim_get_current_buf()]
end

-- vim.lsp.rpc.start with an argv list, whichever signature this Neovim has
-- (0.10 and later: start(cmd, dispatchers, extra); before: start(cmd, args,
-- dispatchers, extra)).
local function start_rpc(argv, dispatchers, extra)
  if vim.fn.has("nvim-0.10") == 1 then
    return vim.lsp.rpc.start(argv, dispatchers, extra)
  end
  return vim.lsp.rpc.start(argv[1], vim.list_slice(argv, 2), dispatchers, extra)
end

local function terminate(rpc)
  if rpc.terminate then
    rpc.terminate()
  elseif rpc.handle and not rpc.handle:is_closing() then
    rpc.handle:kill(15)
  end
end

-- A field option as a JSON Pointer and the member name the projection
-- gives it (the pointer's last token).
local function pointer_of(field)
  if field:sub(1, 1) == "/" then
    local last = field:match("([^/]*)$"):gsub("~1", "/"):gsub("~0", "~")
    return field, last
  end
  return "/" .. field:gsub("~", "~0"):gsub("/", "~1"), field
end

local function line_of(session, item)
  local value = item
  if session.key and type(item) == "table" and item[session.key] ~= nil then
    value = item[session.key]
  end
  local text = type(value) == "string" and value or vim.json.encode(value)
  return (text:gsub("\n", " "))
end

local function show_status(session, text, highlight)
  session.status = text
  local buffer = session.buffer
  if not vim.api.nvim_buf_is_valid(buffer) then
    return
  end
  vim.api.nvim_buf_set_var(buffer, "nextpage_status", text)
  local last = vim.api.nvim_buf_line_count(buffer) - 1
  session.mark = vim.api.nvim_buf_set_extmark(buffer, namespace, last, 0, {
    id = session.mark,
    virt_lines = { { { text, highlight or "Comment" } } },
  })
end

local function append(session, items)
  local buffer = session.buffer
  if #items == 0 or not vim.api.nvim_buf_is_valid(buffer) then
    return
  end
  local lines = {}
  for _, item in ipairs(items) do
    table.insert(lines, line_of(session, item))
  end
  vim.api.nvim_buf_set_option(buffer, "modifiable", true)
  local first = session.count == 0 and 0 or -1 -- replace the empty first line once
  vim.api.nvim_buf_set_lines(buffer, first, -1, false, lines)
  vim.api.nvim_buf_set_option(buffer, "modifiable", false)
  session.count = session.count + #items
end

--- Loads the next page into the buffer unless one is loading or the
--- collection has ended.
function M.load_next(buffer)
  local session = M.session(buffer)
  if not session or session.loading or not session.has_next or session.closed then
    return
  end
  session.loading = true
  show_status(session, "loading…")
  local params = { collection = session.collection, ifLoading = "skip" }
  if session.pointer then
    params.fields = { session.pointer }
  end
  local sent = session.rpc.request("loadNext", params, function(err, page)
    session.loading = false
    if err then
      show_status(session, "error: " .. (err.message or vim.inspect(err)) .. " (move to the end to retry)", "ErrorMsg")
      return
    end
    if page.skipped then
      return
    end
    append(session, page.items)
    session.has_next = page.hasNext
    if page.hasNext then
      show_status(session, string.format("%d items · more below", session.count))
    else
      show_status(session, string.format("end · %d items", session.count))
    end
  end)
  if not sent then
    session.loading = false
    show_status(session, "nextpage is not running", "ErrorMsg")
  end
end

local function at_end(session)
  local window = vim.fn.bufwinid(session.buffer)
  if window == -1 then
    return false
  end
  return vim.api.nvim_win_get_cursor(window)[1] >= vim.api.nvim_buf_line_count(session.buffer)
end

local function close(session)
  if session.closed then
    return
  end
  session.closed = true
  local rpc = session.rpc
  if session.exit_code ~= nil then
    return
  end
  rpc.request("shutdown", nil, function()
    rpc.notify("exit", nil)
  end)
  vim.defer_fn(function()
    if session.exit_code == nil then
      terminate(rpc)
    end
  end, M.config.exit_timeout * 1000)
end

--- Opens a buffer listing COLLECTION (a name nextpage knows) in the current
--- window and loads its first page. options override M.config for this list.
--- Returns the buffer number.
function M.open(collection, options)
  collection = collection or "demo"
  local config = vim.tbl_deep_extend("force", M.config, options or {})
  local buffer = vim.api.nvim_create_buf(true, true)
  local name, suffix = "nextpage://" .. collection, 1
  while vim.fn.bufexists(name) == 1 do
    suffix = suffix + 1
    name = string.format("nextpage://%s (%d)", collection, suffix)
  end
  vim.api.nvim_buf_set_name(buffer, name)
  vim.api.nvim_buf_set_option(buffer, "bufhidden", "wipe")
  vim.api.nvim_buf_set_option(buffer, "modifiable", false)
  vim.api.nvim_buf_set_option(buffer, "filetype", "nextpage")

  local session = {
    buffer = buffer,
    collection = collection,
    count = 0,
    has_next = true,
    loading = false,
    closed = false,
  }
  if config.field then
    session.pointer, session.key = pointer_of(config.field)
  end
  local rpc = start_rpc(config.cmd, {
    on_exit = function(code, signal)
      vim.schedule(function()
        session.exit_code, session.exit_signal = code, signal
        if not session.closed then
          session.closed = true
          show_status(session, string.format("nextpage exited (status %d)", code), "ErrorMsg")
        end
      end)
    end,
  }, { cwd = config.cwd })
  if not rpc then
    vim.api.nvim_buf_delete(buffer, { force = true })
    error("nextpage: could not start " .. tostring(config.cmd[1]))
  end
  session.rpc = rpc
  sessions[buffer] = session

  local group = vim.api.nvim_create_augroup("nextpage_" .. buffer, { clear = true })
  vim.api.nvim_create_autocmd("CursorMoved", {
    group = group,
    buffer = buffer,
    callback = function()
      if at_end(session) then
        M.load_next(buffer)
      end
    end,
  })
  vim.api.nvim_create_autocmd("BufWipeout", {
    group = group,
    buffer = buffer,
    callback = function()
      sessions[buffer] = nil
      close(session)
      vim.schedule(function()
        pcall(vim.api.nvim_del_augroup_by_id, group)
      end)
    end,
  })

  vim.api.nvim_set_current_buf(buffer)
  M.load_next(buffer)
  return buffer
end

return M
