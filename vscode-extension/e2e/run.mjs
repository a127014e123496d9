// End-to-end check in a real VS Code: code-server (from npm, see e2e/setup.sh) driven by Debian's
// headless Chromium through playwright-core. Installs the packaged .vsix, opens examples/mlp.py
// and waits for what a user sees: the inlay hints, the code lens, a hover and the status bar;
// then runs two palette commands (Select Chip, Show IR). A second pass opens the same folder
// untrusted and checks that no server starts. Prints the screenshot's path.
//
//   npm run e2e                      # package, install code-server if needed, run
//   node e2e/run.mjs --readme        # also copy the screenshot to media/screenshot.png
//
// Environment: SOLAR_E2E_PYTHON (interpreter with solar_lsp; default python3 on PATH),
// CHROMIUM (default /usr/bin/chromium), SOLAR_E2E_TIMEOUT (seconds per wait, default 240).
import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const repo = join(root, "..");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const vsix = join(root, `${pkg.name}-${pkg.version}.vsix`);
const cs = join(root, ".e2e", "code-server", "node_modules", "code-server", "out", "node", "entry.js");
const run = join(root, ".e2e", "run");
const WAIT = Number(process.env.SOLAR_E2E_TIMEOUT || 240) * 1000;
const t0 = Date.now();

function log(msg) {
  console.log(`[e2e ${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}`);
}

function fail(msg) {
  throw new Error(msg);
}

const chromiumPath = process.env.CHROMIUM || "/usr/bin/chromium";
for (const [what, path] of [["the .vsix (npm run package)", vsix], ["code-server (npm run e2e:setup)", cs], ["Chromium (apt-get install chromium, or set CHROMIUM)", chromiumPath]]) {
  if (!existsSync(path)) fail(`missing ${what}: ${path}`);
}

const python = execFileSync(process.env.SOLAR_E2E_PYTHON || "python3", ["-c", "import solar_lsp, sys; print(sys.executable)"]).toString().trim();

async function freePort() {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function prepare(name, trusted) {
  const dir = join(run, name);
  rmSync(dir, { recursive: true, force: true });
  // the workspace lives outside this repository: no pyproject.toml or git repository above it
  const ws = mkdtempSync(join(tmpdir(), `solar-e2e-${name}-`));
  const user = join(dir, "user-data");
  const ext = join(dir, "extensions");
  for (const d of [ws, join(user, "User"), ext]) mkdirSync(d, { recursive: true });
  copyFileSync(join(repo, "examples", "mlp.py"), join(ws, "mlp.py"));
  const settings = {
    "solar.interpreter": python,
    "solar.cacheDir": join(dir, "cache"), // fresh: the hints come from a real analysis
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": false,
    "workbench.colorTheme": "Default Light Modern",
    "editor.inlayHints.enabled": "on",
    "editor.hover.delay": 200,
    "editor.hover.above": false,
    "editor.minimap.enabled": false,
    "window.restoreWindows": "none",
    "telemetry.telemetryLevel": "off",
    "extensions.autoCheckUpdates": false,
    "extensions.ignoreRecommendations": true,
    "git.openRepositoryInParentFolders": "never",
    "security.workspace.trust.enabled": true,
    "security.workspace.trust.startupPrompt": "never",
    "security.workspace.trust.untrustedFiles": "open",
  };
  writeFileSync(join(user, "User", "settings.json"), JSON.stringify(settings, null, 2));
  writeFileSync(join(dir, "config.yaml"), "auth: none\n");
  return { dir, ws, user, ext, trusted };
}

function codeServer(env, args, opts = {}) {
  return spawn(process.execPath, [cs, "--config", join(env.dir, "config.yaml"), "--user-data-dir", env.user, "--extensions-dir", env.ext, ...args], {
    cwd: env.dir,
    ...opts,
  });
}

async function install(env) {
  const p = codeServer(env, ["--install-extension", vsix], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  p.stdout.on("data", (d) => (out += d));
  p.stderr.on("data", (d) => (out += d));
  const code = await new Promise((r) => p.on("exit", r));
  if (code !== 0 || !/was successfully installed/.test(out)) fail(`installing the .vsix failed (${code}):\n${out}`);
  log(`installed ${vsix.split("/").pop()}`);
}

async function start(env) {
  const port = await freePort();
  const args = ["--bind-addr", `127.0.0.1:${port}`, "--auth", "none", "--disable-telemetry", "--disable-update-check"];
  if (env.trusted) args.push("--disable-workspace-trust");
  const proc = codeServer(env, [...args, env.ws], { stdio: ["ignore", "pipe", "pipe"], detached: true });
  const logs = [];
  proc.stdout.on("data", (d) => logs.push(String(d)));
  proc.stderr.on("data", (d) => logs.push(String(d)));
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const r = await fetch(`http://127.0.0.1:${port}/healthz`);
      if (r.ok) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline || proc.exitCode !== null) fail(`code-server did not start:\n${logs.join("")}`);
    await new Promise((r) => setTimeout(r, 300));
  }
  log(`code-server on port ${port} (pid ${proc.pid})`);
  return { proc, port, logs };
}

/** Processes in code-server's process group (the extension host, the server, its workers). */
function groupProcesses(pid) {
  const out = execFileSync("ps", ["-eo", "pid=,pgid=,args="]).toString();
  return out.split("\n").map((l) => l.trim().match(/^(\d+)\s+(\d+)\s+(.*)$/)).filter((m) => m && Number(m[2]) === pid).map((m) => m[3]);
}

function stop(server) {
  try {
    process.kill(-server.proc.pid, "SIGTERM"); // the group we started: code-server and its children
  } catch {
    // gone
  }
}

const norm = (s) => s.replace(/\u00a0/g, " ");

async function openFile(page, port, env) {
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(env.ws)}`);
  await page.locator(".monaco-workbench").waitFor({ timeout: WAIT });
  const row = page.getByRole("treeitem", { name: "mlp.py" });
  await row.waitFor({ timeout: WAIT });
  await row.dblclick(); // a pinned tab, not a preview that the next opened document replaces
  await page.locator(".monaco-editor .view-lines").first().waitFor({ timeout: WAIT });
  log("opened mlp.py");
}

async function statusText(page) {
  const item = page.locator("#solar-lsp\\.solar\\.status, [id$='solar.status']").first();
  return norm((await item.textContent({ timeout: 5000 }).catch(() => "")) ?? "");
}

async function waitFor(what, fn, timeout = WAIT) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    last = await fn();
    if (last) {
      log(`${what}: ${typeof last === "string" ? last : "ok"}`);
      return last;
    }
    if (Date.now() > deadline) fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function trustedPass(browser) {
  const env = prepare("trusted", true);
  await install(env);
  const server = await start(env);
  const page = await browser.newPage({ viewport: { width: 1500, height: 900 } });
  const shot = join(run, "screenshot.png");
  try {
    await openFile(page, server.port, env);
    const lines = page.locator(".monaco-editor .view-lines").first();
    // inlay hints: FLOPs · bytes · time at the end of lines that do work
    await waitFor("inlay hints", async () => {
      const text = norm((await lines.textContent()) ?? "");
      const m = text.match(/[\d.]+ [kMGT]?FLOP · [\d.]+ [kMGT]?B · [\d.]+ [µmn]?s (compute|mem)/);
      return m ? m[0] : undefined;
    });
    if (!groupProcesses(server.proc.pid).some((a) => a.includes("solar_lsp.lsp.server"))) {
      fail("hints shown, yet no solar_lsp.lsp.server process in code-server's process group");
    }
    // the code lens over the Model class
    await waitFor("code lens", async () => {
      const lens = page.getByText(/SOL h100-sxm: unfused/).first();
      return (await lens.count()) > 0 ? norm((await lens.textContent()) ?? "") : undefined;
    });
    // the status bar item with the chip and the analysis state
    await waitFor("status bar", async () => {
      const t = await statusText(page);
      return /solar: h100-sxm · (idle|analyzing \d+)/.test(t) ? t : undefined;
    });
    // the verified result (numba runs each op's IR): the lens drops "verifying…"
    await waitFor("verified lens", async () => {
      const lens = page.getByText(/SOL h100-sxm: unfused/).first();
      const t = norm((await lens.textContent()) ?? "");
      return t && !/verifying/.test(t) ? t : undefined;
    });
    // a hover on the line with the GELU: the ops table
    await waitFor("hover", async () => {
      await page.mouse.move(5, 5);
      const line = lines.locator(".view-line").filter({ hasText: "F.gelu(h)" }).first();
      const box = await line.boundingBox();
      if (!box) return undefined;
      await page.mouse.move(box.x + 100, box.y + box.height / 2, { steps: 5 }); // over "F.gelu"
      const hover = page.locator(".monaco-hover:visible, .monaco-hover-content:visible").first();
      await hover.waitFor({ timeout: 4000 }).catch(() => undefined);
      const text = norm((await hover.textContent().catch(() => "")) ?? "");
      return /gelu/.test(text) && /FLOP/.test(text) ? text.slice(0, 120) : undefined;
    });
    await new Promise((r) => setTimeout(r, 1000)); // the hover fades in
    await page.screenshot({ path: shot });
    log(`screenshot with hints, lens and hover: ${shot}`);

    // palette: Show IR opens the IR the server wrote
    await page.mouse.move(5, 5);
    await page.keyboard.press("Escape");
    await palette(page, "solar: Show IR");
    await waitFor("Show IR document", async () => {
      const tab = page.getByRole("tab", { name: /Model-ir\.py/ });
      return (await tab.count()) > 0 ? "Model-ir.py" : undefined;
    });
    // palette: Show Roofline: the server's SVG in a panel, or (a server without the command)
    // its error as a notification; either way the reply reaches the user
    await page.getByRole("tab", { name: /mlp\.py/ }).click();
    await palette(page, "solar: Show Roofline");
    await waitFor("roofline panel or error message", async () => {
      if ((await page.getByRole("tab", { name: /Roofline of Model/ }).count()) > 0) {
        await new Promise((r) => setTimeout(r, 1500)); // the webview renders
        if ((await page.getByRole("tab", { name: /roofline\.svg/ }).count()) > 0) fail("the SVG was also opened as text");
        await page.screenshot({ path: join(run, "roofline.png") });
        return `roofline panel (${join(run, "roofline.png")})`;
      }
      const toast = page.locator(".notification-toast", { hasText: "solar" }).first();
      return (await toast.count()) > 0 ? norm((await toast.textContent()) ?? "").slice(0, 140) : undefined;
    }, 60_000);
    await page.keyboard.press("Escape");
    // palette: Select Chip writes the setting; the lens follows
    await palette(page, "solar: Select Chip");
    const pick = page.locator(".quick-input-widget .monaco-list-row", { hasText: "b200" }).first();
    await pick.waitFor({ timeout: 10_000 });
    await pick.click();
    await page.getByRole("tab", { name: /mlp\.py/ }).click();
    await waitFor("lens on b200", async () => {
      const lens = page.getByText(/SOL b200: unfused/).first();
      return (await lens.count()) > 0 ? norm((await lens.textContent()) ?? "") : undefined;
    });
    await waitFor("status bar on b200", async () => {
      const t = await statusText(page);
      return /solar: b200/.test(t) ? t : undefined;
    });
  } catch (error) {
    await page.screenshot({ path: join(run, "failure-trusted.png") }).catch(() => undefined);
    console.error(server.logs.join("").slice(-4000));
    throw error;
  } finally {
    await page.close();
    stop(server);
    rmSync(env.ws, { recursive: true, force: true });
  }
  return shot;
}

async function palette(page, title) {
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input").first();
  await input.waitFor({ timeout: 10_000 });
  await input.fill(`>${title}`);
  const row = page.locator(".quick-input-widget .monaco-list-row", { hasText: title }).first();
  await row.waitFor({ timeout: 10_000 });
  await row.click();
  log(`ran "${title}"`);
}

async function untrustedPass(browser) {
  const env = prepare("untrusted", false);
  await install(env);
  const server = await start(env);
  const page = await browser.newPage({ viewport: { width: 1500, height: 900 } });
  try {
    await openFile(page, server.port, env);
    await waitFor("restricted status", async () => {
      const t = await statusText(page);
      return /solar: restricted/.test(t) ? t : undefined;
    }, 90_000);
    await new Promise((r) => setTimeout(r, 5000)); // give a wrongly started server time to appear
    const lsp = groupProcesses(server.proc.pid).filter((a) => a.includes("solar_lsp"));
    if (lsp.length > 0) fail(`untrusted workspace, yet solar_lsp runs: ${lsp.join("; ")}`);
    const text = norm((await page.locator(".monaco-editor .view-lines").first().textContent()) ?? "");
    if (/FLOP/.test(text)) fail("untrusted workspace, yet inlay hints appeared");
    await page.screenshot({ path: join(run, "untrusted.png") });
    log("untrusted: no server process, no hints, status bar says restricted");
    // the status bar item opens Workspace Trust; trusting the folder starts the server
    await page.locator("[id$='solar.status']").first().click();
    const trust = page.getByRole("button", { name: /^Trust( Folder)?$/ }).first();
    await trust.waitFor({ timeout: 30_000 });
    await trust.click();
    log("trusted the folder from the status bar item");
    await page.getByRole("tab", { name: /mlp\.py/ }).click();
    await waitFor("inlay hints after trust", async () => {
      const text = norm((await page.locator(".monaco-editor .view-lines").first().textContent()) ?? "");
      const m = text.match(/[\d.]+ [kMGT]?FLOP · [\d.]+ [kMGT]?B/);
      return m ? m[0] : undefined;
    });
  } catch (error) {
    await page.screenshot({ path: join(run, "failure-untrusted.png") }).catch(() => undefined);
    console.error(server.logs.join("").slice(-4000));
    throw error;
  } finally {
    await page.close();
    stop(server);
    rmSync(env.ws, { recursive: true, force: true });
  }
}

const browser = await chromium.launch({
  executablePath: chromiumPath,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
let code = 0;
try {
  const shot = await trustedPass(browser);
  await untrustedPass(browser);
  if (process.argv.includes("--readme")) {
    copyFileSync(shot, join(root, "media", "screenshot.png"));
    log("copied to media/screenshot.png");
  }
  console.log(`E2E PASSED in ${((Date.now() - t0) / 1000).toFixed(0)} s. Screenshot: ${shot}`);
} catch (error) {
  console.error(`E2E FAILED: ${error.message}`);
  code = 1;
} finally {
  await browser.close();
}
process.exit(code);
