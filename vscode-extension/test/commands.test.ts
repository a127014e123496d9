import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeEach, describe, it } from "node:test";
import { askSizes, ENTRY_COMMANDS, registerCommands, type Hooks, type ServerLink } from "../src/commands";
import { sizesToAsk } from "../src/sizes";
import { fake, openEditor, workspace, Uri } from "./fake-vscode";

const root = join(__dirname, "..", "..");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const mlp = readFileSync(join(root, "..", "examples", "mlp.py"), "utf8");

/** What the server's solar.entries answers for examples/mlp.py (lines 1-based). */
const MLP_ENTRIES = { entries: [{ name: "Model", kind: "model", frontend: "torch", line: 7, end_line: 17, pragma_line: null }] };

/** A server link that records requests and answers from a table (or throws, like a JSON-RPC error). */
class Link implements ServerLink {
  calls: { command: string; args: unknown[] }[] = [];
  running = true;
  replies: Record<string, unknown> = { "solar.entries": MLP_ENTRIES };
  isRunning() {
    return this.running;
  }
  async execute(command: string, args: unknown[]) {
    this.calls.push({ command, args });
    const r = this.replies[command];
    if (r instanceof Error) {
      throw r;
    }
    return r;
  }
}

function hooks(): Hooks & { restarted: number; installed: number; logShown: number } {
  const h = {
    restarted: 0,
    installed: 0,
    logShown: 0,
    async restart() {
      h.restarted++;
    },
    async install() {
      h.installed++;
    },
    showLog() {
      h.logShown++;
    },
    chips: () => pkg.contributes.configuration.properties["solar.chip"].enum.map((name: string) => ({ name, description: name.toUpperCase() })),
  };
  return h;
}

const run = (id: string, ...args: unknown[]) => fake.commands.get(id)!(...args) as Promise<unknown>;

describe("command wiring", () => {
  let link: Link;
  let h: ReturnType<typeof hooks>;
  beforeEach(() => {
    fake.reset();
    link = new Link();
    h = hooks();
    registerCommands(link, h);
  });

  it("registers every command package.json contributes, and no other", () => {
    const contributed = (pkg.contributes.commands as { command: string }[]).map((c) => c.command).sort();
    assert.deepEqual([...fake.commands.keys()].sort(), contributed);
  });

  it("sends [uri, entry] for the entry under the cursor, as the server's solar.entries names it", async () => {
    const ed = openEditor("/ws/examples/mlp.py", mlp, 14);
    const uri = ed.document.uri.toString();
    for (const [id, spec] of Object.entries(ENTRY_COMMANDS)) {
      link.calls = [];
      link.replies[spec.server] = { uri: "file:///views/x.md", text: "..." };
      await run(id);
      assert.deepEqual(link.calls, [{ command: "solar.entries", args: [uri] }, { command: spec.server, args: [uri, "Model"] }], id);
    }
    assert.deepEqual(fake.messages, []);
  });

  it("takes the entry at the cursor or its pragma, the only one, or asks", async () => {
    const text = "# solar: x=f32[4]\ndef f(x):\n    return x\n\n# solar: x=f32[4]\ndef g(x):\n    return x\n";
    link.replies["solar.entries"] = {
      entries: [
        { name: "f", kind: "function", frontend: "torch", line: 2, end_line: 3, pragma_line: 1 },
        { name: "g", kind: "function", frontend: "torch", line: 6, end_line: 7, pragma_line: 5 },
      ],
    };
    openEditor("/ws/a.py", text, 6);
    await run("solar-lsp.showIR");
    assert.deepEqual(link.calls.at(-1)!.args, ["file:///ws/a.py", "g"]);
    openEditor("/ws/a.py", text, 0);
    await run("solar-lsp.showIR");
    assert.deepEqual(link.calls.at(-1)!.args, ["file:///ws/a.py", "f"]);
    // between entries: the user picks one
    link.calls = [];
    openEditor("/ws/a.py", text, 3);
    let offered: string[] = [];
    fake.answerQuickPick = (_m, items) => {
      offered = (items as { label: string }[]).map((i) => i.label);
      return (items as object[])[0];
    };
    await run("solar-lsp.compareChips");
    assert.deepEqual(offered, ["f", "g"]);
    assert.deepEqual(link.calls.at(-1), { command: "solar.compareChips", args: ["file:///ws/a.py", "f"] });
    // one entry anywhere in the file is the one
    link.replies["solar.entries"] = { entries: [{ name: "g", kind: "function", frontend: "torch", line: 6, end_line: 7 }] };
    openEditor("/ws/a.py", text, 0);
    await run("solar-lsp.showIR");
    assert.deepEqual(link.calls.at(-1)!.args, ["file:///ws/a.py", "g"]);
  });

  it("says why there is no entry, and sends nothing", async () => {
    openEditor("/ws/a.py", "def f(:\n", 0);
    link.replies["solar.entries"] = { entries: [], error: "syntax error at line 1, col 7: invalid syntax" };
    await run("solar-lsp.showIR");
    link.replies["solar.entries"] = { entries: [] };
    await run("solar-lsp.showIR");
    link.replies["solar.entries"] = new Error("Command 'solar.entries' not found");
    await run("solar-lsp.showIR");
    assert.deepEqual(link.calls.map((c) => c.command), ["solar.entries", "solar.entries", "solar.entries"]);
    assert.deepEqual(fake.messages.map((m) => [m.level, m.text]), [
      ["warning", "solar: no entry point: syntax error at line 1, col 7: invalid syntax"],
      ["warning", "solar: no entry point in this file (a Model class with get_inputs, or a function with a # solar: pragma)."],
      ["error", "solar: solar.entries failed: Command 'solar.entries' not found"],
    ]);
  });

  it("uses [uri, entry] when given (from a code lens) without asking", async () => {
    await run("solar-lsp.explainHeadroom", "file:///ws/m.py", "Model");
    assert.deepEqual(link.calls, [{ command: "solar.explainHeadroom", args: ["file:///ws/m.py", "Model"] }]);
  });

  it("shows an error reply and a JSON-RPC failure as error messages", async () => {
    openEditor("/ws/examples/mlp.py", mlp, 14);
    link.replies["solar.showIR"] = { error: "no result for this entry yet" };
    await run("solar-lsp.showIR");
    link.replies["solar.showRoofline"] = new Error("Command 'solar.showRoofline' not found");
    await run("solar-lsp.showRoofline");
    assert.deepEqual(fake.messages.map((m) => [m.level, m.text]), [
      ["error", "solar: no result for this entry yet"],
      ["error", "solar: solar.showRoofline failed: Command 'solar.showRoofline' not found"],
    ]);
  });

  it("opens the roofline SVG in a webview without scripts", async () => {
    openEditor("/ws/examples/mlp.py", mlp, 14);
    link.replies["solar.showRoofline"] = { svg: '<svg xmlns="http://www.w3.org/2000/svg"><circle r="3"/></svg>' };
    await run("solar-lsp.showRoofline");
    assert.equal(fake.webviews.length, 1);
    assert.match(fake.webviews[0].html, /<circle r="3"\/>/);
    assert.equal((fake.webviews[0].options as { enableScripts: boolean }).enableScripts, false);
    assert.match(fake.webviews[0].title, /Roofline of Model/);
  });

  it("warns instead of sending when the server is not running", async () => {
    link.running = false;
    openEditor("/ws/examples/mlp.py", mlp, 14);
    await run("solar-lsp.showIR");
    assert.deepEqual(link.calls, []);
    assert.equal(fake.messages[0].level, "warning");
  });

  it("Select chip writes the picked chip to the settings, and a chip file to solar.chipFile", async () => {
    workspace.workspaceFolders = [{ uri: Uri.file("/ws"), name: "ws", index: 0 }];
    let offered: string[] = [];
    fake.answerQuickPick = (_m, items) => {
      offered = (items as { label: string }[]).map((i) => i.label);
      return (items as { label: string }[]).find((i) => i.label === "b200");
    };
    assert.equal(await run("solar-lsp.selectChip"), "b200");
    assert.deepEqual(offered.slice(0, -1), pkg.contributes.configuration.properties["solar.chip"].enum);
    assert.deepEqual(fake.settings.writes, [{ key: "solar.chip", value: "b200", scope: "workspace" }]);
    fake.answerQuickPick = (_m, items) => (items as { label: string }[]).at(-1);
    fake.answerOpenDialog = () => [Uri.file("/ws/chips/mine.toml")];
    await run("solar-lsp.selectChip");
    assert.deepEqual(fake.settings.writes.at(-1), { key: "solar.chipFile", value: "/ws/chips/mine.toml", scope: "workspace" });
    // picking a bundled chip again clears the chip file, or it would keep winning
    fake.answerQuickPick = (_m, items) => (items as { label: string }[])[0];
    await run("solar-lsp.selectChip");
    const first = pkg.contributes.configuration.properties["solar.chip"].enum[0];
    assert.deepEqual(fake.settings.writes.slice(-2).map((w) => [w.key, w.value]), [["solar.chipFile", undefined], ["solar.chip", first]]);
  });

  it("Set target validates the input and writes latency or rate, clearing the other", async () => {
    let validate: ((v: string) => unknown) | undefined;
    fake.answerInputBox = (o) => {
      validate = o.validateInput;
      return "500Hz";
    };
    await run("solar-lsp.setTarget");
    assert.equal(validate?.("2ms"), undefined);
    assert.match(String(validate?.("500")), /add a unit/);
    assert.deepEqual(fake.settings.writes.map((w) => [w.key, w.value, w.scope]), [["solar.targetLatency", undefined, "global"], ["solar.targetHz", 500, "global"]]);
    fake.answerInputBox = () => "2ms";
    await run("solar-lsp.setTarget");
    assert.deepEqual(fake.settings.writes.slice(-2).map((w) => [w.key, w.value]), [["solar.targetLatency", "2ms"], ["solar.targetHz", undefined]]);
  });

  it("SOL at other sizes: picks the entry, asks the sizes (validated) and sends them", async () => {
    const ed = openEditor("/ws/examples/mlp.py", mlp, 14);
    let validate: ((v: string) => unknown) | undefined;
    fake.answerInputBox = (o) => {
      validate = o.validateInput;
      return " S=4096, B=8 ";
    };
    link.replies["solar.solAt"] = { uri: "file:///views/Model-sol-at.md", text: "# SOL of Model" };
    await run("solar-lsp.solAt");
    const uri = ed.document.uri.toString();
    assert.deepEqual(link.calls.at(-1), { command: "solar.solAt", args: [uri, "Model", "S=4096, B=8"] });
    assert.equal(validate?.("S=4096"), undefined);
    assert.match(String(validate?.("S=big")), /NAME=SIZE/);
    assert.match(String(validate?.("S=0")), /at least 1/);
    // cancelled: nothing is sent
    link.calls = [];
    fake.answerInputBox = () => undefined;
    await run("solar-lsp.solAt");
    assert.deepEqual(link.calls.map((c) => c.command), ["solar.entries"]);
    assert.deepEqual(fake.messages, []);
  });

  it("the SOL-at lens click asks with the pragma's sizes pre-filled, and only when it left them out", async () => {
    // the server's lens: [uri, entry, "", prefill]
    const ask = sizesToAsk("solar.solAt", ["file:///ws/a.py", "mm", "", "B=4, S=64"]);
    assert.deepEqual(ask, { prefill: "B=4, S=64" });
    assert.equal(sizesToAsk("solar.solAt", ["file:///ws/a.py", "mm", "S=128"]), undefined);
    assert.equal(sizesToAsk("solar.solAt", ["file:///ws/a.py", "mm", { S: 128 }]), undefined);
    assert.equal(sizesToAsk("solar.compareChips", ["file:///ws/a.py", "mm"]), undefined);
    let prefilled: string | undefined;
    fake.answerInputBox = (o) => {
      prefilled = o.value;
      return "S=128";
    };
    assert.equal(await askSizes(ask!.prefill), "S=128");
    assert.equal(prefilled, "B=4, S=64");
  });

  it("Restart, Show log, Install and Reanalyze reach their hooks and the server", async () => {
    await run("solar-lsp.restart");
    await run("solar-lsp.showLog");
    await run("solar-lsp.installServer");
    assert.deepEqual([h.restarted, h.logShown, h.installed], [1, 1, 1]);
    openEditor("/ws/examples/mlp.py", mlp, 0);
    link.replies["solar.reanalyze"] = { ok: true };
    await run("solar-lsp.reanalyze");
    assert.deepEqual(link.calls, [{ command: "solar.reanalyze", args: ["file:///ws/examples/mlp.py"] }]);
  });
});
