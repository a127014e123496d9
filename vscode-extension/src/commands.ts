/**
 * The extension's palette commands (`solar-lsp.*`) and what happens with a server command's
 * reply. Server commands keep their own ids (`solar.showIR`, …): vscode-languageclient
 * registers those for code lenses and code actions, so the palette commands use another prefix
 * and reach the server through {@link ServerLink}.
 */
import * as vscode from "vscode";
import { configuredChip, parseTarget, writeScope } from "./config";
import { ENTRIES_COMMAND, entryAt, readEntries } from "./entries";
import { classifyReply, failureMessage, rooflineHtml } from "./results";
import { checkSizes, SOL_AT_COMMAND } from "./sizes";

/** What the commands need from the running language client. */
export interface ServerLink {
  isRunning(): boolean;
  /** `workspace/executeCommand`; rejects on a JSON-RPC error reply. */
  execute(command: string, args: unknown[]): Promise<unknown>;
}

export interface Hooks {
  restart(): Promise<void>;
  install(): Promise<void>;
  showLog(): void;
  /** Bundled chip names and their display names (package.json's enum for solar.chip). */
  chips(): { name: string; description: string }[];
}

/** Palette command id -> server command it sends with `[uri, entry]`. */
export const ENTRY_COMMANDS: Record<string, { server: string; title: string }> = {
  "solar-lsp.explainHeadroom": { server: "solar.explainHeadroom", title: "Explain headroom" },
  "solar-lsp.showIR": { server: "solar.showIR", title: "Show IR" },
  "solar-lsp.compareChips": { server: "solar.compareChips", title: "Compare chips" },
  "solar-lsp.showRoofline": { server: "solar.showRoofline", title: "Roofline" },
};

const TARGETS = {
  folder: vscode.ConfigurationTarget.WorkspaceFolder,
  workspace: vscode.ConfigurationTarget.Workspace,
  global: vscode.ConfigurationTarget.Global,
};

/** Show a server command's reply: an error as a message, an SVG in a webview. */
export async function handleReply(command: string, reply: unknown, title?: string): Promise<void> {
  const r = classifyReply(reply);
  if (r.kind === "error") {
    void vscode.window.showErrorMessage(`solar: ${r.message}`);
  } else if (r.kind === "svg") {
    showSvg(r.svg, title ?? `solar: ${command}`);
  }
  // "document": the server asked the editor to open it (window/showDocument) already
}

function serverRunning(link: ServerLink): boolean {
  if (!link.isRunning()) {
    void vscode.window.showWarningMessage("solar: the server is not running (see the status bar).");
    return false;
  }
  return true;
}

/** Run a server command and show its reply; a JSON-RPC error becomes an error message. */
export async function runServerCommand(link: ServerLink, command: string, args: unknown[], title?: string): Promise<unknown> {
  if (!serverRunning(link)) {
    return undefined;
  }
  let reply: unknown;
  try {
    reply = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: title ?? command },
      () => link.execute(command, args),
    );
  } catch (error) {
    void vscode.window.showErrorMessage(failureMessage(command, error));
    return undefined;
  }
  await handleReply(command, reply, title);
  return reply;
}

let panel: vscode.WebviewPanel | undefined;

function showSvg(svg: string, title: string): void {
  if (!panel) {
    panel = vscode.window.createWebviewPanel("solar.roofline", title, vscode.ViewColumn.Beside, {
      enableScripts: false,
      retainContextWhenHidden: false,
    });
    panel.onDidDispose(() => {
      panel = undefined;
    });
  }
  panel.title = title;
  panel.webview.html = rooflineHtml(svg, title, panel.webview.cspSource);
  panel.reveal(vscode.ViewColumn.Beside, true);
}

/**
 * The entry the palette command is about, among those the server discovers in the document
 * (`solar.entries`): the one at the cursor (its definition or its pragma line); else the only
 * one; else the user picks one.
 */
export async function pickEntry(link: ServerLink, editor: vscode.TextEditor): Promise<string | undefined> {
  const uri = editor.document.uri.toString();
  const line = editor.selection.active.line;
  let reply: unknown;
  try {
    reply = await link.execute(ENTRIES_COMMAND, [uri]);
  } catch (error) {
    void vscode.window.showErrorMessage(failureMessage(ENTRIES_COMMAND, error));
    return undefined;
  }
  const { entries, error } = readEntries(reply);
  const here = entryAt(entries, line);
  if (here) {
    return here.name;
  }
  if (entries.length === 1) {
    return entries[0].name;
  }
  if (entries.length === 0) {
    void vscode.window.showWarningMessage(
      error
        ? `solar: no entry point: ${error}`
        : "solar: no entry point in this file (a Model class with get_inputs, or a function with a # solar: pragma).",
    );
    return undefined;
  }
  const pick = await vscode.window.showQuickPick(
    entries.map((e) => ({ label: e.name, description: `line ${e.line + 1}` })),
    { placeHolder: "Which entry point?" },
  );
  return pick?.label;
}

function hasWorkspace(): boolean {
  return (vscode.workspace.workspaceFolders?.length ?? 0) > 0;
}

async function updateSetting(key: string, value: unknown): Promise<void> {
  const config = vscode.workspace.getConfiguration("solar");
  const scope = writeScope(config.inspect(key), hasWorkspace());
  await config.update(key, value, TARGETS[scope]);
}

/** *Select chip*: a quick pick of the bundled chips, or a chip TOML file; written to settings. */
export async function selectChip(hooks: Hooks): Promise<string | undefined> {
  const config = vscode.workspace.getConfiguration("solar");
  const current = configuredChip((key) => config.get<string>(key));
  const fileItem = { label: "$(file) Chip file…", description: "a TOML file with your chip's peaks", name: "" };
  const items = [
    ...hooks.chips().map((c) => ({
      label: c.name,
      description: c.description,
      detail: c.name === current ? "active" : undefined,
      name: c.name,
    })),
    fileItem,
  ];
  const pick = await vscode.window.showQuickPick(items, { placeHolder: `Chip for the bounds (now ${current})`, matchOnDescription: true });
  if (!pick) {
    return undefined;
  }
  if (pick === fileItem) {
    const files = await vscode.window.showOpenDialog({ canSelectMany: false, filters: { "Chip TOML": ["toml"] }, openLabel: "Use chip" });
    if (!files || files.length === 0) {
      return undefined;
    }
    await updateSetting("chipFile", files[0].fsPath);
    return files[0].fsPath;
  }
  if (config.get<string>("chipFile")) {
    await updateSetting("chipFile", undefined);
  }
  await updateSetting("chip", pick.name);
  return pick.name;
}

/** *Set target latency*: `2ms`, `500us` or `500Hz`; empty clears it. Written to settings. */
export async function setTarget(): Promise<string | undefined> {
  const config = vscode.workspace.getConfiguration("solar");
  const lat = config.get<string>("targetLatency");
  const hz = config.get<number | null>("targetHz");
  const value = await vscode.window.showInputBox({
    title: "solar: target for the inverse roofline",
    prompt: "A latency (2ms, 500us) or a rate (500Hz, 2kHz); empty clears the target.",
    value: lat || (hz ? `${hz}Hz` : ""),
    validateInput: (text) => {
      const t = parseTarget(text);
      return "error" in t ? t.error : undefined;
    },
  });
  if (value === undefined) {
    return undefined;
  }
  const t = parseTarget(value);
  if ("error" in t) {
    return undefined;
  }
  await updateSetting("targetLatency", t.targetLatency);
  await updateSetting("targetHz", t.targetHz);
  return value.trim();
}

/**
 * Ask for the sizes of a "SOL at S=…" evaluation (`S=4096, B=8`), pre-filled with `prefill`
 * (the pragma's sizes the lens passes). Undefined when the user cancels.
 */
export async function askSizes(prefill: string): Promise<string | undefined> {
  const value = await vscode.window.showInputBox({
    title: "solar: SOL at other sizes",
    prompt: "Sizes of the entry's shape symbols, e.g. S=4096 (the others keep the pragma's values)",
    value: prefill,
    placeHolder: "S=4096",
    validateInput: (text) => checkSizes(text),
  });
  return value === undefined || checkSizes(value) !== undefined ? undefined : value.trim();
}

/** Register every palette command. Returns their disposables. */
export function registerCommands(link: ServerLink, hooks: Hooks): vscode.Disposable[] {
  const subs: vscode.Disposable[] = [];
  for (const [id, spec] of Object.entries(ENTRY_COMMANDS)) {
    subs.push(
      vscode.commands.registerCommand(id, async (uriArg?: unknown, entryArg?: unknown) => {
        let uri: string;
        let entry: string | undefined;
        if (typeof uriArg === "string" && typeof entryArg === "string") {
          uri = uriArg;
          entry = entryArg;
        } else {
          const editor = vscode.window.activeTextEditor;
          if (!editor || editor.document.languageId !== "python") {
            void vscode.window.showWarningMessage("solar: open a Python file with an entry point first.");
            return undefined;
          }
          if (!serverRunning(link)) {
            return undefined;
          }
          uri = editor.document.uri.toString();
          entry = await pickEntry(link, editor);
        }
        if (!entry) {
          return undefined;
        }
        return runServerCommand(link, spec.server, [uri, entry], `solar: ${spec.title} of ${entry}`);
      }),
    );
  }
  subs.push(
    vscode.commands.registerCommand("solar-lsp.selectChip", () => selectChip(hooks)),
    vscode.commands.registerCommand("solar-lsp.setTarget", () => setTarget()),
    vscode.commands.registerCommand("solar-lsp.reanalyze", () => {
      const editor = vscode.window.activeTextEditor;
      const args = editor && editor.document.languageId === "python" ? [editor.document.uri.toString()] : [];
      return runServerCommand(link, "solar.reanalyze", args, "solar: reanalyze");
    }),
    vscode.commands.registerCommand("solar-lsp.solAt", async () => {
      const editor = vscode.window.activeTextEditor;
      if (!editor || editor.document.languageId !== "python") {
        void vscode.window.showWarningMessage("solar: open a Python file with an entry point first.");
        return undefined;
      }
      if (!serverRunning(link)) {
        return undefined;
      }
      const entry = await pickEntry(link, editor);
      const sizes = entry ? await askSizes("") : undefined;
      if (!entry || sizes === undefined) {
        return undefined;
      }
      return runServerCommand(link, SOL_AT_COMMAND, [editor.document.uri.toString(), entry, sizes], `solar: SOL of ${entry} at ${sizes}`);
    }),
    vscode.commands.registerCommand("solar-lsp.restart", () => hooks.restart()),
    vscode.commands.registerCommand("solar-lsp.showLog", () => hooks.showLog()),
    vscode.commands.registerCommand("solar-lsp.installServer", () => hooks.install()),
  );
  return subs;
}
