-- The Neovim example (examples/nvim) used as a user would, in a headless
-- Neovim: `:NextPage demo` opens the list, the test presses `G` (through
-- the typeahead, so Neovim's main loop moves the cursor and fires the
-- CursorMoved autocmd) until the list says it has ended, and checks the
-- buffer holds the demo's 250 names, one line each, in order. Then: the
-- whole-item view (`field = false`), an unknown collection shown as an
-- error, and wiping each buffer ends its server with status 0.
--
--   NEXTPAGE=/path/to/nextpage nvim --headless --clean -c "luafile Tests/Editors/nvim_example_test.lua"
--
-- Run from the repository root. The steps run in a coroutine resumed by a
-- timer, so that Neovim's main loop handles keys and autocmds between them;
-- every wait is bounded, and a failure exits 1 with the failed check.

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

-- Yields to the main loop until condition() holds (bounded).
local function wait_until(what, condition)
  local deadline = vim.loop.now() + TIMEOUT_MS
  while not condition() do
    if vim.loop.now() > deadline then
      fail(string.format("timed out after %d ms waiting for %s", TIMEOUT_MS, what))
    end
    coroutine.yield()
  end
end

local function lines_of(buffer)
  return vim.api.nvim_buf_get_lines(buffer, 0, -1, false)
end

local function wipe_and_expect_exit(buffer, session, what)
  vim.cmd("bwipeout! " .. buffer)
  wait_until(what .. ": its server to exit after the buffer was wiped", function()
    return session.exit_code ~= nil
  end)
  check(session.exit_code == 0 and session.exit_signal == 0, "%s: the server ended with code %s, signal %s",
    what, vim.inspect(session.exit_code), vim.inspect(session.exit_signal))
end

local function main()
  local binary = os.getenv("NEXTPAGE")
  check(binary and vim.fn.executable(binary) == 1, "set NEXTPAGE to the nextpage binary (got %s)", vim.inspect(binary))
  local example = vim.fn.getcwd() .. "/examples/nvim"
  check(vim.fn.filereadable(example .. "/lua/nextpage.lua") == 1, "run from the repository root (no %s)", example)
  local folder = vim.fn.tempname()
  vim.fn.mkdir(folder, "p")

  -- Installed as the README says: the folder on the runtimepath.
  vim.opt.runtimepath:prepend(example)
  vim.cmd("runtime plugin/nextpage.lua")
  local nextpage = require("nextpage")
  nextpage.setup({ cmd = { binary, "--log-level", "warning" }, cwd = folder })

  -- The demo, shown by name; G until the end.
  vim.cmd("NextPage demo")
  local buffer = vim.api.nvim_get_current_buf()
  local session = nextpage.session(buffer)
  check(session and session.collection == "demo", ":NextPage demo opened no list")
  check(vim.api.nvim_buf_get_name(buffer) == "nextpage://demo", "buffer name %s", vim.api.nvim_buf_get_name(buffer))
  local presses = 0
  while session.has_next do
    wait_until("a page to land", function()
      return not session.loading
    end)
    check(not vim.startswith(session.status or "", "error"), "the list shows %s", session.status)
    if not session.has_next then
      break
    end
    presses = presses + 1
    check(presses <= DEMO_PAGES + 5, "still not at the end after pressing G %d times", presses - 1)
    local before = session.count
    vim.api.nvim_feedkeys("G", "n", false)
    wait_until("G at the end of the buffer to load a page", function()
      return session.loading or session.count > before
    end)
  end
  local lines = lines_of(buffer)
  check(#lines == DEMO_ITEMS, "%d lines in the buffer, expected %d", #lines, DEMO_ITEMS)
  for index, line in ipairs(lines) do
    local id = tonumber(line:match("^%a+ %a+ (%d+)$"))
    check(id == index, "line %d is %q: not the demo's item %d by name (each once, in order)", index, line, index)
  end
  check(presses == DEMO_PAGES - 1, "%d pages loaded by G, expected %d after the first", presses, DEMO_PAGES - 1)
  local status = vim.api.nvim_buf_get_var(buffer, "nextpage_status")
  check(status == "end · 250 items", "b:nextpage_status is %q", status)
  local marks = vim.api.nvim_buf_get_extmarks(buffer, vim.api.nvim_create_namespace("nextpage"), 0, -1, { details = true })
  check(#marks == 1 and marks[1][2] == DEMO_ITEMS - 1, "the status mark is not on the last line: %s", vim.inspect(marks))
  local shown = marks[1][4].virt_lines and marks[1][4].virt_lines[1][1][1]
  check(shown == status, "the virtual line shows %s", vim.inspect(shown))
  check(not vim.api.nvim_buf_get_option(buffer, "modifiable"), "the list buffer is modifiable")
  wipe_and_expect_exit(buffer, session, "the demo list")

  -- field = false: each line is the whole item as compact JSON.
  local whole = nextpage.open("demo", { field = false })
  local whole_session = nextpage.session(whole)
  wait_until("the first page of the whole-item list", function()
    return whole_session.count > 0 and not whole_session.loading
  end)
  local first = lines_of(whole)
  check(#first == DEMO_ITEMS / DEMO_PAGES, "whole-item list: %d lines after the first page", #first)
  for index, line in ipairs(first) do
    local ok, item = pcall(vim.json.decode, line)
    check(ok and type(item) == "table" and item.id == index and type(item.name) == "string" and type(item.tags) == "table",
      "whole-item list: line %d is %q", index, line)
  end
  wipe_and_expect_exit(whole, whole_session, "the whole-item list")

  -- An unknown collection: the list says so, and the server keeps running.
  local unknown = nextpage.open("no-such-collection")
  local unknown_session = nextpage.session(unknown)
  wait_until("the error of an unknown collection", function()
    return not unknown_session.loading
  end)
  check(vim.startswith(unknown_session.status, "error: ") and unknown_session.status:find("no-such-collection", 1, true),
    "unknown collection: the list shows %q", unknown_session.status)
  check(unknown_session.exit_code == nil, "unknown collection: the server exited")
  wipe_and_expect_exit(unknown, unknown_session, "the unknown collection's list")

  vim.fn.delete(folder, "rf")
  local version = vim.version()
  io.stdout:write(string.format(
    "nvim_example_test (Neovim %d.%d.%d): :NextPage demo + G x%d: %d lines, in order; field = false; unknown collection shown; servers exit 0 on wipe\n",
    version.major, version.minor, version.patch, presses, #lines))
end

local function finish(problem)
  if problem == nil then
    vim.cmd("qall!")
  else
    if type(problem) == "table" and problem.check then
      problem = problem.check
    end
    io.stderr:write("nvim_example_test: FAILED: " .. tostring(problem) .. "\n")
    vim.cmd("cquit 1")
  end
end

local steps = coroutine.create(function()
  local ok, problem = xpcall(main, function(err)
    if type(err) == "table" then
      return err
    end
    return debug.traceback(tostring(err), 2)
  end)
  if not ok then
    return problem
  end
end)
local timer = vim.loop.new_timer()
timer:start(0, 10, vim.schedule_wrap(function()
  if coroutine.status(steps) ~= "suspended" then
    return
  end
  local resumed, problem = coroutine.resume(steps)
  if not resumed or coroutine.status(steps) == "dead" then
    timer:stop()
    if resumed then
      finish(problem)
    else
      finish("the steps failed: " .. tostring(problem))
    end
  end
end))
