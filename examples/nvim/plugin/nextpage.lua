-- :NextPage [COLLECTION] opens a buffer listing COLLECTION (default: demo).
vim.api.nvim_create_user_command("NextPage", function(command)
  require("nextpage").open(command.args ~= "" and command.args or "demo")
end, { nargs = "?", desc = "List a nextpage collection; the next page loads at the end of the buffer" })
