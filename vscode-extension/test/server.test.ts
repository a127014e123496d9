/**
 * The contract with the real server (python -m solar_lsp.lsp.server, as the extension starts it):
 * mapped settings reach it through initializationOptions and workspace/configuration pulls,
 * solar.status has what the status bar reads, its command ids do not collide with ours,
 * solar.entries names the entries the palette commands pick from, and an unknown command comes
 * back as an error the extension can show.
 *
 * It needs an interpreter that can run the server: $SOLAR_TEST_PYTHON, else the repository's
 * .venv, else python3; when that one cannot import the server, the suite is skipped and says so.
 */
import assert from "node:assert/strict";
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  ConfigurationRequest,
  createMessageConnection,
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  ExitNotification,
  InitializedNotification,
  InitializeRequest,
  ShutdownRequest,
  StreamMessageReader,
  StreamMessageWriter,
  type InitializeResult,
  type MessageConnection,
} from "vscode-languageserver-protocol/node";
import { serverSettings } from "../src/config";
import { readEntries } from "../src/entries";
import { PROBE_SCRIPT, readProbe, serverArgs } from "../src/interpreter";
import { classifyReply } from "../src/results";
import { asServerStatus } from "../src/status";

const root = join(__dirname, "..", "..");
const repo = join(root, "..");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const venv = join(repo, ".venv", "bin", "python");
const PYTHON = process.env.SOLAR_TEST_PYTHON || (existsSync(venv) ? venv : "python3");

/** Why PYTHON cannot run the server (the extension's own probe), or undefined when it can. */
function cannotRun(python: string): string | undefined {
  let out = "";
  try {
    out = execFileSync(python, ["-c", PROBE_SCRIPT], { stdio: ["ignore", "pipe", "pipe"], timeout: 30_000 }).toString();
  } catch (error) {
    const e = error as { status?: number | null; stdout?: Buffer; stderr?: Buffer } & NodeJS.ErrnoException;
    const p = readProbe(e.status ?? null, String(e.stdout ?? ""), String(e.stderr ?? ""), typeof e.code === "string" ? e : undefined);
    return p.ok ? undefined : `${python}: ${p.detail} (set SOLAR_TEST_PYTHON to an interpreter with solar_lsp)`;
  }
  const p = readProbe(0, out, "");
  return p.ok ? undefined : `${python}: ${p.detail} (set SOLAR_TEST_PYTHON to an interpreter with solar_lsp)`;
}

describe("the real solar-lsp server", { timeout: 120_000, skip: cannotRun(PYTHON) }, () => {
  let proc: ChildProcess;
  let conn: MessageConnection;
  let init: InitializeResult;
  const tmp = mkdtempSync(join(tmpdir(), "solar-server-"));
  const ctx = { workspaceFolder: tmp, home: tmp, env: {} };
  let configured: Record<string, unknown> = { chip: "a6000", targetLatency: "2ms", cacheDir: "${workspaceFolder}/cache" };
  const pulls: unknown[] = [];
  const statuses: unknown[] = [];

  before(async () => {
    proc = spawn(PYTHON, serverArgs(), { cwd: tmp, stdio: ["pipe", "pipe", "pipe"] });
    proc.stderr!.resume();
    conn = createMessageConnection(new StreamMessageReader(proc.stdout!), new StreamMessageWriter(proc.stdin!));
    conn.onRequest(ConfigurationRequest.type, (params) => {
      pulls.push(params);
      return params.items.map((i) => (i.section === "solar" ? serverSettings(configured, ctx) : null));
    });
    conn.onNotification("solar/status", (p: unknown) => statuses.push(p));
    conn.listen();
    init = await conn.sendRequest(InitializeRequest.type, {
      processId: process.pid,
      rootUri: `file://${tmp}`,
      capabilities: { workspace: { configuration: true }, window: { showDocument: { support: true } } },
      initializationOptions: { solar: serverSettings({ chip: "b200", verify: false }, ctx) },
    });
    await conn.sendNotification(InitializedNotification.type, {});
  });

  after(async () => {
    try {
      await conn.sendRequest(ShutdownRequest.type);
      await conn.sendNotification(ExitNotification.type);
    } catch {
      // already gone
    }
    proc.kill();
    rmSync(tmp, { recursive: true, force: true });
  });

  const status = async () => asServerStatus(await conn.sendRequest(ExecuteCommandRequest.type, { command: "solar.status", arguments: [] }));

  const settle = async (n: number) => {
    for (let i = 0; i < 100 && pulls.length < n; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    await new Promise((r) => setTimeout(r, 100)); // let the server take the answer in
  };

  it("pulls section solar and uses the mapped settings over initializationOptions", async () => {
    assert.equal((await status())?.chip !== undefined, true);
    await settle(1);
    const s = await status();
    assert.ok(s, "solar.status has chip, analyzing and errors");
    assert.equal(s.chip, "a6000");
    assert.equal(s.settings_error ?? null, null);
    assert.ok(pulls.length >= 1);
  });

  it("pulls again on didChangeConfiguration with settings null", async () => {
    configured = { chip: "/nonexistent/dir/mine.toml" };
    const before = pulls.length;
    await conn.sendNotification(DidChangeConfigurationNotification.type, { settings: null });
    await settle(before + 1);
    assert.equal(pulls.length, before + 1);
    assert.equal((await status())?.chip, "/nonexistent/dir/mine.toml");
  });

  it("reports a bad setting in solar.status (shown in the status bar)", async () => {
    configured = { tf32: "sometimes" };
    const before = pulls.length;
    await conn.sendNotification(DidChangeConfigurationNotification.type, { settings: null });
    await settle(before + 1);
    assert.match(String((await status())?.settings_error), /tf32 must be conv, all or none/);
  });

  it("reports a bad training mode in solar.status, naming the setting", async () => {
    configured = { mode: "training" };
    const before = pulls.length;
    await conn.sendNotification(DidChangeConfigurationNotification.type, { settings: null });
    await settle(before + 1);
    assert.match(String((await status())?.settings_error), /mode must be inference or train, got 'training'/);
    configured = { mode: "train", optimizer: "sgd", targetStepsPerSecond: 4, symbolic: true };
    await conn.sendNotification(DidChangeConfigurationNotification.type, { settings: null });
    await settle(before + 2);
    assert.equal((await status())?.settings_error ?? null, null);
  });

  it("answers SOL-at sizes it cannot read with an error the extension shows", async () => {
    const mlp = join(repo, "examples", "mlp.py");
    const reply = await conn.sendRequest(ExecuteCommandRequest.type, { command: "solar.solAt", arguments: [`file://${mlp}`, "Model", "S=lots"] });
    const r = classifyReply(reply);
    assert.equal(r.kind, "error");
    assert.match(r.kind === "error" ? r.message : "", /write NAME=SIZE/);
  });

  it("registers commands that do not collide with the extension's", () => {
    const server = init.capabilities.executeCommandProvider?.commands ?? [];
    assert.ok(server.includes("solar.showIR") && server.includes("solar.status"), JSON.stringify(server));
    const ours = (pkg.contributes.commands as { command: string }[]).map((c) => c.command);
    assert.deepEqual(ours.filter((c) => server.includes(c)), []);
  });

  it("lists a document's entries for solar.entries, as the palette commands read them", async () => {
    const mlp = join(repo, "examples", "mlp.py");
    const lines = readFileSync(mlp, "utf8").split("\n");
    const reply = await conn.sendRequest(ExecuteCommandRequest.type, { command: "solar.entries", arguments: [`file://${mlp}`] });
    const { entries, error } = readEntries(reply);
    assert.equal(error, undefined);
    assert.deepEqual(entries.map((e) => [e.name, e.kind, e.frontend]), [["Model", "model", "torch"]]);
    assert.match(lines[entries[0].line], /^class Model\(nn\.Module\)/);
    assert.match(lines[entries[0].endLine], /return x \+ self\.down\(h\)/); // the class ends before get_inputs
  });

  it("answers a command it lacks with an error the extension shows", async () => {
    let shown: string | undefined;
    try {
      const reply = await conn.sendRequest(ExecuteCommandRequest.type, { command: "solar.noSuchCommand", arguments: [`file://${tmp}/m.py`, "Model"] });
      const r = classifyReply(reply);
      shown = r.kind === "error" ? r.message : undefined;
    } catch (error) {
      shown = (error as Error).message;
    }
    assert.ok(shown && shown.length > 0, "an error reply, not silence");
  });
});
