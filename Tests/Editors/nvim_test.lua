-- nextpage driven by Neovim's own JSON-RPC client, vim.lsp.rpc.start: the
-- transport of Neovim's LSP client (LSP Content-Length framing, its JSON
-- encoder and decoder, its dispatch of replies and notifications).
--
--   NEXTPAGE=/path/to/nextpage nvim --headless --clean -c "luafile Tests/Editors/nvim_test.lua"
--
-- nextpage runs in a new empty folder, so it serves its built-in `demo`
-- collection (250 items, 10 pages). The test speaks to it as an LSP client
-- would (initialize, initialized, $/setTrace), pages the demo to its end,
-- projects items with `fields`, reads a -32001 for an unknown collection,
-- walks the demo again with `loadAll` (its `page` and `$/progress`
-- notifications), and ends the process with `shutdown` + `exit`, which must
-- exit with status 0 on its own. Every wait is bounded; the first failed check
-- is printed on stderr and Neovim exits 1 (0 when every check passed).
--
-- Written for the vim.lsp.rpc API of Neovim 0.7-0.9 (start(cmd, cmd_args,
-- dispatchers, extra_spawn_params)) and of 0.10 and later (start(cmd_list,
-- dispatchers, extra_spawn_params)).

local TIMEOUT_MS = 20000
local DEMO_ITEMS, DEMO_PAGES = 250, 10

local function fail(message)
  error({ check = message }, 0)
end

local function check(condition, message, ...)
  if not condition then
    fail(string.format(message, ...))
  end
end

local function wait_for(what, condition)
  if not vim.wait(TIMEOUT_MS, condition, 2) then
    fail(string.format("timed out after %d ms waiting for %s", TIMEOUT_MS, what))
  end
end

-- vim.lsp.rpc.start with an argv list, whichever of its two signatures this
-- Neovim has.
local function start_rpc(argv, dispatchers, extra_spawn_params)
  if vim.fn.has("nvim-0.10") == 1 then
    return vim.lsp.rpc.start(argv, dispatchers, extra_spawn_params)
  end
  return vim.lsp.rpc.start(argv[1], vim.list_slice(argv, 2), dispatchers, extra_spawn_params)
end

local function main()
  local binary = os.getenv("NEXTPAGE")
  check(binary and binary ~= "", "set NEXTPAGE to the nextpage binary")
  check(vim.fn.executable(binary) == 1, "NEXTPAGE=%s is not executable", binary)
  check(type(vim.lsp.rpc.start) == "function", "this Neovim has no vim.lsp.rpc.start")

  -- An empty folder: no ./nextpage.json, so the built-in demo is served.
  local folder = vim.fn.tempname()
  vim.fn.mkdir(folder, "p")

  -- Everything the server sends besides replies, and every complaint of the
  -- client about what it received.
  local notifications, server_requests, client_errors = {}, {}, {}
  local exited, exit_code, exit_signal = false, nil, nil
  local rpc = start_rpc({ binary, "--log-level", "warning" }, {
    notification = function(method, params)
      table.insert(notifications, { method = method, params = params })
    end,
    server_request = function(method, params)
      table.insert(server_requests, method)
      return nil, vim.lsp.rpc.rpc_response_error(vim.lsp.protocol.ErrorCodes.MethodNotFound)
    end,
    on_error = function(code, err)
      table.insert(client_errors, string.format("%s: %s", tostring(code), vim.inspect(err)))
    end,
    on_exit = function(code, signal)
      exited, exit_code, exit_signal = true, code, signal
    end,
  }, { cwd = folder })
  check(rpc, "vim.lsp.rpc.start could not spawn %s", binary)

  -- One request; returns its error and result once the reply arrived.
  local function call(method, params)
    local done, reply_error, reply_result = false, nil, nil
    local sent = rpc.request(method, params, function(err, result)
      done, reply_error, reply_result = true, err, result
    end)
    check(sent, "%s: the client could not send the request", method)
    wait_for("the reply to " .. method, function()
      return done
    end)
    return reply_error, reply_result
  end
  local function result_of(method, params)
    local err, result = call(method, params)
    check(err == nil, "%s: unexpected error %s", method, vim.inspect(err))
    check(type(result) == "table", "%s: expected an object, got %s", method, vim.inspect(result))
    return result
  end

  -- The LSP client's opening, as vim.lsp sends it: initialize (no
  -- protocolVersion: not an MCP session), initialized, then a $/ notification
  -- the server does not know, which it must ignore without a word.
  local init = result_of("initialize", {
    processId = vim.fn.getpid(),
    clientInfo = { name = "Neovim", version = tostring(vim.version().major .. "." .. vim.version().minor) },
    rootUri = vim.NIL,
    capabilities = vim.lsp.protocol.make_client_capabilities(),
    trace = "off",
  })
  check(init.serverInfo and init.serverInfo.name == "nextpage", "initialize: serverInfo.name is not nextpage: %s", vim.inspect(init))
  check(init.capabilities and vim.tbl_contains(init.capabilities.methods or {}, "loadNext"),
    "initialize: capabilities.methods lacks loadNext: %s", vim.inspect(init.capabilities))
  rpc.notify("initialized", vim.empty_dict())
  rpc.notify("$/setTrace", { value = "off" })

  -- Page the demo to its end with loadNext.
  local ids, pages = {}, 0
  while true do
    check(pages < DEMO_PAGES + 5, "loadNext: still hasNext after %d pages", pages)
    local page = result_of("loadNext", { collection = "demo" })
    pages = pages + 1
    check(page.collection == "demo", "loadNext: collection %s", vim.inspect(page.collection))
    check(page.page == pages, "loadNext: page number %s where %d was due", vim.inspect(page.page), pages)
    for _, item in ipairs(page.items) do
      table.insert(ids, item.id)
    end
    check(page.count == #ids, "loadNext: count %s after %d items", vim.inspect(page.count), #ids)
    if not page.hasNext then
      check(page.lastId == nil, "loadNext: the last page has lastId %s", vim.inspect(page.lastId))
      break
    end
    check(page.lastId ~= nil, "loadNext: page %d has more but no lastId", pages)
  end
  check(pages == DEMO_PAGES, "loadNext: %d pages, expected %d", pages, DEMO_PAGES)
  check(#ids == DEMO_ITEMS, "loadNext: %d items, expected %d", #ids, DEMO_ITEMS)
  for index, id in ipairs(ids) do
    check(id == index, "loadNext: item %d has id %s (each id once, in order)", index, vim.inspect(id))
  end
  local after_end = result_of("loadNext", { collection = "demo" })
  check(#after_end.items == 0 and after_end.hasNext == false,
    "loadNext after the end: expected no items and hasNext false, got %s", vim.inspect(after_end))

  -- fields: each item projected to just its name.
  local slice = result_of("items", { collection = "demo", offset = 247, limit = 10, fields = { "/name" } })
  check(slice.count == DEMO_ITEMS, "items: count %s", vim.inspect(slice.count))
  check(#slice.items == 3, "items offset 247: %d items, expected 3", #slice.items)
  for index, item in ipairs(slice.items) do
    check(vim.tbl_count(item) == 1 and type(item.name) == "string", "items with fields: %s is not {name}", vim.inspect(item))
    check(vim.endswith(item.name, " " .. (247 + index)), "items with fields: item %d is named %s", 247 + index, item.name)
  end

  -- An unknown collection: error -32001 naming it; the demo is untouched.
  local err = call("loadNext", { collection = "no-such-collection" })
  check(err ~= nil, "loadNext on an unknown collection succeeded")
  check(err.code == -32001, "unknown collection: code %s, expected -32001", vim.inspect(err.code))
  check(err.data and err.data.collection == "no-such-collection", "unknown collection: data %s", vim.inspect(err.data))
  check(vim.tbl_contains(err.data.known or {}, "demo"), "unknown collection: data.known lacks demo: %s", vim.inspect(err.data))
  local state = result_of("status", { collection = "demo" })
  check(state.count == DEMO_ITEMS and state.hasNext == false, "status after the error: %s", vim.inspect(state))

  -- loadAll from a fresh start: every page comes first as a `page`
  -- notification, and $/progress reports begin, one report per page, end.
  local fresh = result_of("reset", { collection = "demo" })
  check(fresh.count == 0 and fresh.hasNext == true and fresh.lastId == nil, "reset: %s", vim.inspect(fresh))
  local before = #notifications
  local all = result_of("loadAll", { collection = "demo", progressToken = "nvim-walk" })
  check(all.pages == DEMO_PAGES and all.count == DEMO_ITEMS and all.hasNext == false,
    "loadAll: result %s", vim.inspect(all))
  -- Neovim hands notifications and replies over in the order they arrived, so
  -- every notification of the walk is here by the time its reply is.
  local page_notes, progress = {}, {}
  for index = before + 1, #notifications do
    local note = notifications[index]
    if note.method == "page" then
      table.insert(page_notes, note.params)
    elseif note.method == "$/progress" then
      table.insert(progress, note.params)
    else
      fail("loadAll: unexpected notification " .. note.method)
    end
  end
  check(#page_notes == DEMO_PAGES, "loadAll: %d page notifications before the reply, expected %d", #page_notes, DEMO_PAGES)
  local walked = 0
  for index, page in ipairs(page_notes) do
    check(page.collection == "demo" and page.page == index, "page notification %d: %s", index,
      vim.inspect({ collection = page.collection, page = page.page }))
    for _, item in ipairs(page.items) do
      walked = walked + 1
      check(item.id == walked, "page notification %d: item id %s where %d was due", index, vim.inspect(item.id), walked)
    end
    check(page.count == walked, "page notification %d: count %s after %d items", index, vim.inspect(page.count), walked)
    check(page.hasNext == (index < DEMO_PAGES), "page notification %d: hasNext %s", index, vim.inspect(page.hasNext))
  end
  check(walked == DEMO_ITEMS, "loadAll: %d items in page notifications", walked)
  check(#progress == DEMO_PAGES + 2, "$/progress: %d notifications, expected begin + %d reports + end", #progress, DEMO_PAGES)
  for index, note in ipairs(progress) do
    check(note.token == "nvim-walk", "$/progress %d: token %s", index, vim.inspect(note.token))
    local kind = index == 1 and "begin" or (index == #progress and "end" or "report")
    local value = note.value or {}
    check(value.kind == kind, "$/progress %d: kind %s, expected %s", index, vim.inspect(value.kind), kind)
    local pages_so_far = math.min(math.max(index - 1, 0), DEMO_PAGES)
    check(value.pages == pages_so_far, "$/progress %d: pages %s, expected %d", index, vim.inspect(value.pages), pages_so_far)
  end
  check(progress[#progress].value.count == DEMO_ITEMS, "$/progress end: count %s", vim.inspect(progress[#progress].value.count))

  -- shutdown (params absent, as vim.lsp sends it), a request after it is
  -- refused, then exit: the process ends by itself with status 0.
  local shutdown_error, shutdown_result = call("shutdown", nil)
  check(shutdown_error == nil and shutdown_result == nil, "shutdown: error %s, result %s",
    vim.inspect(shutdown_error), vim.inspect(shutdown_result))
  local late = call("status", { collection = "demo" })
  check(late ~= nil and late.code == -32801, "a request after shutdown: expected -32801, got %s", vim.inspect(late))
  rpc.notify("exit", nil)
  wait_for("nextpage to exit after shutdown + exit", function()
    return exited
  end)
  check(exit_code == 0 and exit_signal == 0, "nextpage exited with code %s, signal %s", vim.inspect(exit_code), vim.inspect(exit_signal))

  check(#server_requests == 0, "the server sent requests: %s", vim.inspect(server_requests))
  check(#client_errors == 0, "Neovim's client reported errors: %s", table.concat(client_errors, "; "))
  vim.fn.delete(folder, "rf")
  local version = vim.version()
  io.stdout:write(string.format(
    "nvim_test (Neovim %d.%d.%d, vim.lsp.rpc): paged %d items in %d pages; fields; -32001; loadAll: %d page + %d $/progress notifications; shutdown + exit: status 0\n",
    version.major, version.minor, version.patch, #ids, pages, #page_notes, #progress))
end

local ok, problem = xpcall(main, function(err)
  if type(err) == "table" and err.check then
    return err.check
  end
  return debug.traceback(tostring(err), 2)
end)
if ok then
  vim.cmd("qall!")
else
  io.stderr:write("nvim_test: FAILED: " .. tostring(problem) .. "\n")
  vim.cmd("cquit 1")
end
