/**
 * The contract with the real server (python -m solar_lsp.lsp.server, as the extension starts it):
 * mapped settings reach it through initializationOptions and workspace/configuration pulls,
 * solar.status has what the status bar reads, its command ids do not collide with ours, and an
 * unknown command comes back as an error the extension can show.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
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
import { serverArgs } from "../src/interpreter";
import { classifyReply } from "../src/results";
import { asServerStatus } from "../src/status";

const PYTHON = process.env.SOLAR_TEST_PYTHON || "python3";
const root = join(__dirname, "..", "..");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));

describe("the real solar-lsp server", { timeout: 120_000 }, () => {
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

  it("registers commands that do not collide with the extension's", () => {
    const server = init.capabilities.executeCommandProvider?.commands ?? [];
    assert.ok(server.includes("solar.showIR") && server.includes("solar.status"), JSON.stringify(server));
    const ours = (pkg.contributes.commands as { command: string }[]).map((c) => c.command);
    assert.deepEqual(ours.filter((c) => server.includes(c)), []);
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
