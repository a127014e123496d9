import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { pipInstallCommand, probe, readProbe, resolveInterpreter, serverArgs, shellQuote } from "../src/interpreter";

const ctx = { workspaceFolder: "/ws/proj", home: "/home/me", env: {} };
/** A Python that has solar_lsp installed, when the caller names one (this repository, editable). */
const INSTALLED = process.env.SOLAR_TEST_PYTHON;
/** The Python that makes the bare interpreters below (any python3 on PATH). */
const PYTHON = "python3";
const repo = join(__dirname, "..", "..", "..");
const version = /__version__ = "([^"]+)"/.exec(readFileSync(join(repo, "solar_lsp", "__init__.py"), "utf8"))?.[1];

/**
 * A folder of stand-ins for what the probe imports (solar_lsp at the repository's version, its
 * server module, pygls, lsprotocol, minus `without`). `python -c` puts its working directory
 * first on sys.path, so the probe run there finds them, with no package installed.
 */
function standIns(dir: string, without: string[] = []): string {
  const files: Record<string, string> = {
    "solar_lsp/__init__.py": `__version__ = "${version}"\n`,
    "solar_lsp/lsp/__init__.py": "",
    "solar_lsp/lsp/server.py": "",
    "pygls/__init__.py": "",
    "lsprotocol/__init__.py": "",
  };
  for (const [file, text] of Object.entries(files)) {
    if (without.some((m) => file.startsWith(`${m}/`))) {
      continue;
    }
    mkdirSync(join(dir, file, ".."), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return dir;
}

describe("resolveInterpreter", () => {
  it("prefers solar.interpreter, then the Python extension, then python3", () => {
    assert.deepEqual(resolveInterpreter("${workspaceFolder}/.venv/bin/python", "/usr/bin/python3.12", ctx), {
      command: "/ws/proj/.venv/bin/python",
      source: "solar.interpreter",
    });
    assert.deepEqual(resolveInterpreter("", "/opt/conda/bin/python", ctx), { command: "/opt/conda/bin/python", source: "Python extension" });
    assert.deepEqual(resolveInterpreter(undefined, undefined, ctx), { command: "python3", source: "default" });
    assert.deepEqual(resolveInterpreter("  ", " ", ctx), { command: "python3", source: "default" });
  });
  it("starts the server module on stdio", () => {
    assert.deepEqual(serverArgs(), ["-m", "solar_lsp.lsp.server"]);
  });
});

describe("pipInstallCommand", () => {
  it("quotes the interpreter for the shell and passes the spec as written", () => {
    assert.equal(pipInstallCommand("/usr/bin/python3", "solar-lsp", "linux"), "/usr/bin/python3 -m pip install solar-lsp");
    assert.equal(pipInstallCommand("/home/me/my envs/py", "-e /src/solar", "linux"), "'/home/me/my envs/py' -m pip install -e /src/solar");
    assert.equal(pipInstallCommand("C:\\Program Files\\Python\\python.exe", "", "win32"), "& 'C:\\Program Files\\Python\\python.exe' -m pip install solar-lsp");
  });
  it("quotes single quotes safely", () => {
    const q = shellQuote("/tmp/it's/python", "linux");
    assert.equal(execFileSync("sh", ["-c", `printf %s ${q}`]).toString(), "/tmp/it's/python");
  });
});

describe("readProbe", () => {
  it("reads a good probe, a missing module and a missing interpreter", () => {
    const good = readProbe(0, '{"version": "0.1.0", "python": "3.11.7", "executable": "/p", "missing": []}\n', "");
    assert.deepEqual(good, { ok: true, version: "0.1.0", python: "3.11.7", executable: "/p" });
    const partial = readProbe(0, '{"version": "0.1.0", "python": "3.11.7", "executable": "/p", "missing": ["pygls"]}', "");
    assert.deepEqual(partial, { ok: false, reason: "not-installed", detail: "missing modules: pygls" });
    const none = readProbe(1, "", "Traceback (most recent call last):\n  File \"<string>\", line 2\nModuleNotFoundError: No module named 'solar_lsp'\n");
    assert.equal(none.ok ? "" : none.reason, "not-installed");
    const enoent = Object.assign(new Error("spawn /nope ENOENT"), { code: "ENOENT" });
    assert.equal((readProbe(null, "", "", enoent) as { reason: string }).reason, "not-found");
  });
});

describe("probe (real interpreters)", () => {
  const tmp = mkdtempSync(join(tmpdir(), "solar-probe-"));
  after(() => rmSync(tmp, { recursive: true, force: true }));
  /**
   * A venv without site packages: only the standard library and the stand-ins in its working
   * directory import, whatever the python3 it came from has installed (on CI, pygls itself).
   */
  const bare = (): string => {
    const venv = join(tmp, "bare");
    execFileSync(PYTHON, ["-m", "venv", "--clear", "--without-pip", venv]);
    return join(venv, "bin", "python");
  };

  it("finds solar_lsp, its version and the interpreter", async () => {
    const p = await probe(bare(), standIns(join(tmp, "full")));
    assert.ok(p.ok, JSON.stringify(p));
    assert.equal(p.version, version);
    assert.match(p.python, /^3\.\d+/);
  });
  it("reports solar_lsp without its LSP library as not-installed, naming what is missing", async () => {
    const p = await probe(bare(), standIns(join(tmp, "partial"), ["pygls"]));
    assert.deepEqual(p, { ok: false, reason: "not-installed", detail: "missing modules: pygls" });
  });
  it(`finds solar_lsp in $SOLAR_TEST_PYTHON (${INSTALLED ?? "unset"}), at the repository's version`, { skip: !INSTALLED }, async () => {
    const p = await probe(INSTALLED!, tmp);
    assert.ok(p.ok, JSON.stringify(p));
    assert.equal(p.version, version);
  });
  it("reports a fresh venv as not-installed", async () => {
    const venv = join(tmp, "venv");
    execFileSync(PYTHON, ["-m", "venv", "--without-pip", venv]);
    const p = await probe(join(venv, "bin", "python"), tmp);
    assert.equal(p.ok, false);
    assert.equal(!p.ok && p.reason, "not-installed");
  });
  it("reports a missing interpreter as not-found", async () => {
    const p = await probe(join(tmp, "no-such-python"), undefined);
    assert.equal(!p.ok && p.reason, "not-found");
  });
});
