import assert from "node:assert/strict";
import { beforeEach, describe, it } from "node:test";
import { Controller, type ClientHandle, type ClientSpec } from "../src/controller";
import type { Probe } from "../src/interpreter";
import { fake, Uri, window, workspace } from "./fake-vscode";

const OK: Probe = { ok: true, version: "0.1.0", python: "3.11.7", executable: "/usr/bin/python3" };

/** A language client double: records start/stop/config notifications; the spec it was made with. */
class Client implements ClientHandle {
  started = 0;
  stopped = 0;
  notified = 0;
  constructor(readonly spec: ClientSpec) {}
  async start() {
    this.started++;
  }
  async stop() {
    this.stopped++;
  }
  async notifyConfigChanged() {
    this.notified++;
  }
  isRunning() {
    return this.started > this.stopped;
  }
  async execute() {
    return undefined;
  }
}

function setup(probeAnswers: Record<string, Probe> = {}) {
  const clients: Client[] = [];
  const probed: string[] = [];
  const ctl = new Controller({
    factory: (spec) => {
      const c = new Client(spec);
      clients.push(c);
      return c;
    },
    output: window.createOutputChannel("solar-lsp") as never,
    probe: async (python) => {
      probed.push(python);
      return probeAnswers[python] ?? OK;
    },
    installPoll: { everyMs: 5, forMs: 2000 },
  });
  const item = fake.statusItems.at(-1)!;
  return { ctl, clients, probed, item };
}

const tick = (ms = 20) => new Promise((r) => setTimeout(r, ms));

describe("controller", () => {
  beforeEach(() => fake.reset());

  it("starts nothing in an untrusted workspace, says why, and starts once trust is granted", async () => {
    workspace.isTrusted = false;
    const { ctl, clients, probed, item } = setup();
    await ctl.restart();
    assert.deepEqual([clients.length, probed.length], [0, 0], "no interpreter run, no server");
    assert.match(item.text, /restricted/);
    assert.match(String(item.tooltip), /untrusted workspace/);
    assert.equal(item.command, "workbench.trust.manage");
    workspace.isTrusted = true;
    fake.trustGranted.fire();
    await tick();
    await ctl.restart(); // joins nothing: trust already started one
    assert.ok(clients.length >= 1);
    assert.equal(clients[0].spec.command, "python3");
    assert.deepEqual(clients[0].spec.args, ["-m", "solar_lsp.lsp.server"]);
    assert.equal(ctl.current.kind, "running");
  });

  it("takes solar.interpreter over the Python extension, and the extension over python3", async () => {
    workspace.workspaceFolders = [{ uri: Uri.file("/ws"), name: "ws", index: 0 }];
    fake.extensions.set("ms-python.python", {
      environments: {
        getActiveEnvironmentPath: () => ({ id: "x", path: "/envs/torch/bin/python" }),
        resolveEnvironment: async (e: { path: string }) => ({ executable: { uri: Uri.file(e.path) } }),
        onDidChangeActiveEnvironmentPath: () => ({ dispose() {} }),
      },
    });
    const { ctl, clients } = setup();
    await ctl.restart();
    assert.equal(clients[0].spec.command, "/envs/torch/bin/python");
    assert.equal(clients[0].spec.cwd, "/ws");
    await workspace.getConfiguration("solar").update("interpreter", "${workspaceFolder}/.venv/bin/python", 2);
    await tick();
    await ctl.restart();
    assert.equal(clients.at(-1)!.spec.command, "/ws/.venv/bin/python");
    assert.ok(clients[0].stopped >= 1, "the old server was stopped");
  });

  it("offers pip in a visible terminal when solar_lsp is missing, then starts when it imports", async () => {
    const answers: Record<string, Probe> = { python3: { ok: false, reason: "not-installed", detail: "No module named 'solar_lsp'" } };
    await workspace.getConfiguration("solar").update("pipSpec", "-e /src/solar-lsp", 1);
    fake.answerMessage = (_m, items) => (items.includes("Install") ? "Install" : undefined);
    const { ctl, clients, item } = setup(answers);
    await ctl.restart();
    assert.match(item.text, /not installed/);
    assert.equal(item.command, "solar-lsp.installServer");
    assert.match(fake.messages[0].text, /solar_lsp is not installed in python3/);
    await tick();
    assert.equal(fake.terminals.length, 1);
    assert.deepEqual(fake.terminals[0].sent, ["python3 -m pip install -e /src/solar-lsp"]);
    assert.ok(fake.terminals[0].shown);
    assert.equal(clients.length, 0);
    answers.python3 = OK; // pip finished
    await tick(100);
    assert.equal(clients.length, 1);
    assert.equal(ctl.current.kind, "running");
  });

  it("reports a missing interpreter without starting a client", async () => {
    const { ctl, clients, item } = setup({ python3: { ok: false, reason: "not-found", detail: "spawn python3 ENOENT" } });
    await ctl.restart();
    assert.equal(clients.length, 0);
    assert.match(item.text, /no Python/);
  });

  it("shows the server's solar/status in the status bar", async () => {
    const { ctl, clients, item } = setup();
    await ctl.restart();
    assert.match(item.text, /h100-sxm · idle/);
    clients[0].spec.onStatus({ chip: "b200", analyzing: 1, errors: 0, jobs: 0, workers: [1], version: "0.1.0" });
    assert.equal(item.text, "$(sync~spin) solar: b200 · analyzing 1");
    clients[0].spec.onStatus({ chip: "b200", analyzing: 0, errors: 2 });
    assert.equal(item.text, "$(error) solar: b200 · 2 errors");
    clients[0].spec.onStatus({ bogus: true });
    assert.equal(item.text, "$(error) solar: b200 · 2 errors", "a malformed payload changes nothing");
    assert.equal(ctl.isRunning(), true);
  });

  it("forwards only explicit settings, and re-sends on change; interpreter/workers restart", async () => {
    const { ctl, clients } = setup();
    await ctl.restart();
    assert.deepEqual(clients[0].spec.settings(), {});
    const config = workspace.getConfiguration("solar");
    await config.update("chip", "jetson-thor", 1);
    await config.update("targetLatency", "2ms", 1);
    await tick();
    assert.deepEqual(clients[0].spec.settings(), { chip: "jetson-thor", targetLatency: "2ms" });
    assert.equal(clients[0].notified, 2);
    assert.equal(clients.length, 1);
    await config.update("workers", 2, 1);
    await tick();
    await ctl.restart();
    assert.ok(clients.length >= 2, "workers change started a new server");
    assert.deepEqual(clients.at(-1)!.spec.settings(), { chip: "jetson-thor", targetLatency: "2ms", workers: 2 });
  });

  it("marks a server that died as failed and offers a restart", async () => {
    const { ctl, clients, item } = setup();
    await ctl.restart();
    fake.answerMessage = (_m, items) => (items.includes("Restart") ? "Restart" : undefined);
    clients[0].spec.onStopped("the server process exited");
    assert.match(item.text, /server failed/);
    assert.equal(ctl.isRunning(), false);
    await tick(50);
    assert.equal(clients.length, 2, "the Restart button started a new one");
    assert.equal(ctl.current.kind, "running");
  });

  it("runs restarts one at a time; calls made while one waits join it", async () => {
    const { ctl, clients } = setup();
    // all four are asked for before any has begun: one restart serves them
    await Promise.all([ctl.restart(), ctl.restart(), ctl.restart(), ctl.restart()]);
    assert.equal(clients.length, 1);
    // one in flight (its probe is slow), three more asked for meanwhile: exactly one more runs
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const slow = new Controller({
      factory: (spec) => {
        const c = new Client(spec);
        clients.push(c);
        return c;
      },
      output: window.createOutputChannel("x") as never,
      probe: async () => {
        await gate;
        return OK;
      },
    });
    const first = slow.restart();
    await tick();
    const later = [slow.restart(), slow.restart(), slow.restart()];
    release();
    await Promise.all([first, ...later]);
    assert.equal(clients.length, 3, "the one in flight, then one for the three that waited");
    assert.equal(clients.filter((c) => c.isRunning()).length, 2, "one per controller still runs");
  });
});
