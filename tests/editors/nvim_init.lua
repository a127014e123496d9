-- Headless Neovim (0.11) as a real LSP client of solar-lsp. Opens the file given on the
-- command line, waits for inlay hints, then records what the editor holds: the hints its LSP
-- client received, the virtual text it rendered, the code lenses and a hover on the hinted
-- line. Writes JSON to $SOLAR_NVIM_OUT and quits; exits non-zero on timeout.
local out = os.getenv("SOLAR_NVIM_OUT")
local python = os.getenv("SOLAR_PYTHON") or "python3"
local cache = os.getenv("SOLAR_NVIM_CACHE")
local hover_line = tonumber(os.getenv("SOLAR_HOVER_LINE") or "0")

vim.api.nvim_create_autocmd("FileType", {
  pattern = "python",
  callback = function(args)
    vim.lsp.start({
      name = "solar-lsp",
      cmd = { python, "-m", "solar_lsp.lsp.server" },
      root_dir = vim.fn.getcwd(),
      init_options = { solar = { cacheDir = cache, timeout = 120 } },
    }, { bufnr = args.buf })
  end,
})

local function finish(result, code)
  local f = assert(io.open(out, "w"))
  f:write(vim.json.encode(result))
  f:close()
  vim.cmd(code == 0 and "qa!" or "cq!")
end

vim.defer_fn(function() finish({ error = "timeout" }, 1) end, 170000)

vim.api.nvim_create_autocmd("LspAttach", {
  callback = function(args)
    local buf = args.buf
    vim.lsp.inlay_hint.enable(true, { bufnr = buf })
    local tries = 0
    local function poll()
      tries = tries + 1
      -- re-request: toggling makes the client ask the server again
      vim.lsp.inlay_hint.enable(false, { bufnr = buf })
      vim.lsp.inlay_hint.enable(true, { bufnr = buf })
      vim.defer_fn(function()
        local hints = vim.lsp.inlay_hint.get({ bufnr = buf })
        if #hints == 0 then
          if tries < 300 then vim.defer_fn(poll, 500) end
          return
        end
        local got = {}
        for _, h in ipairs(hints) do
          local label = h.inlay_hint.label
          if type(label) == "table" then
            local parts = {}
            for _, p in ipairs(label) do table.insert(parts, p.value) end
            label = table.concat(parts)
          end
          table.insert(got, { line = h.inlay_hint.position.line, label = label })
        end
        local rendered = {}
        for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(buf, -1, 0, -1, { details = true })) do
          local d = mark[4]
          if d.virt_text then
            local parts = {}
            for _, chunk in ipairs(d.virt_text) do table.insert(parts, chunk[1]) end
            table.insert(rendered, { line = mark[2], text = table.concat(parts) })
          end
        end
        local params = { textDocument = { uri = vim.uri_from_bufnr(buf) },
                         position = { line = hover_line, character = 4 } }
        local hov = vim.lsp.buf_request_sync(buf, "textDocument/hover", params, 10000) or {}
        local hover_text = nil
        for _, r in pairs(hov) do
          if r.result and r.result.contents then hover_text = r.result.contents.value end
        end
        vim.lsp.codelens.refresh({ bufnr = buf })
        vim.defer_fn(function()
          local lenses = {}
          for _, l in ipairs(vim.lsp.codelens.get(buf)) do
            if l.command then table.insert(lenses, { line = l.range.start.line, title = l.command.title }) end
          end
          finish({ hints = got, rendered = rendered, hover = hover_text, lenses = lenses }, 0)
        end, 1500)
      end, 300)
    end
    vim.defer_fn(poll, 500)
  end,
})
