/**
 * The server's life cycle: workspace trust, the interpreter, the import check and the offer to
 * install, start/stop/restart, settings changes and the status bar. The language client itself
 * comes from a factory (extension.ts) so this logic is tested without a real VS Code.
 */
import * as os from "node:os";
import * as vscode from "vscode";
import type { ServerLink } from "./commands";
import { changeAction, configuredChip, explicitValue, SERVER_KEYS, serverSettings, targetLabel, type PathContext, type ServerSettings } from "./config";
import { pipInstallCommand, probe, resolveInterpreter, serverArgs, type Interpreter, type Probe } from "./interpreter";
import { activeInterpreter, hasPythonExtension, onInterpreterChange } from "./pythonExt";
import { asServerStatus, statusView, type ClientState } from "./status";

export interface ClientHandle extends ServerLink {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Tell the server its settings changed; it pulls them again (workspace/configuration). */
  notifyConfigChanged(): Promise<void>;
}

export interface ClientSpec {
  command: string;
  args: string[];
  cwd: string | undefined;
  /** Settings for initializationOptions and for each `workspace/configuration` pull. */
  settings: (scopeUri?: string) => ServerSettings;
  onStatus: (payload: unknown) => void;
  onStopped: (detail: string) => void;
}

export type ClientFactory = (spec: ClientSpec) => ClientHandle;

export interface ControllerDeps {
  factory: ClientFactory;
  output: vscode.OutputChannel;
  /** Probe an interpreter (interpreter.ts `probe`; replaceable in tests). */
  probe?: (python: string, cwd: string | undefined) => Promise<Probe>;
  /** Seconds between import checks after *Install* was started, and how long to keep checking. */
  installPoll?: { everyMs: number; forMs: number };
}

function folder(): vscode.WorkspaceFolder | undefined {
  return vscode.workspace.workspaceFolders?.[0];
}

function pathContext(scope?: vscode.Uri): PathContext {
  const wf = scope ? vscode.workspace.getWorkspaceFolder(scope) ?? folder() : folder();
  return { workspaceFolder: wf?.uri.fsPath, home: os.homedir(), env: process.env };
}

/** The server's settings as the user set them, for `scope` (a document or folder URI). */
export function readServerSettings(scope?: vscode.Uri): ServerSettings {
  const config = vscode.workspace.getConfiguration("solar", scope);
  const explicit: Record<string, unknown> = {};
  for (const key of [...SERVER_KEYS, "chipFile"]) {
    explicit[key] = explicitValue(config.inspect(key));
  }
  return serverSettings(explicit, pathContext(scope));
}

export class Controller implements ServerLink, vscode.Disposable {
  private client: ClientHandle | undefined;
  private state: ClientState = { kind: "stopped" };
  private readonly item: vscode.StatusBarItem;
  private readonly subs: vscode.Disposable[] = [];
  private chain: Promise<void> = Promise.resolve();
  private next: Promise<void> | undefined;
  private queued = false;
  private poll: NodeJS.Timeout | undefined;
  private trustWait: vscode.Disposable | undefined;
  private readonly probeFn: (python: string, cwd: string | undefined) => Promise<Probe>;

  constructor(private readonly deps: ControllerDeps) {
    this.probeFn = deps.probe ?? ((python, cwd) => probe(python, cwd));
    this.item = vscode.window.createStatusBarItem("solar.status", vscode.StatusBarAlignment.Right, 100);
    this.item.name = "solar-lsp";
    this.subs.push(
      this.item,
      vscode.workspace.onDidChangeConfiguration((e) => this.onConfig(e)),
    );
    this.render();
    this.item.show();
  }

  get current(): ClientState {
    return this.state;
  }

  get statusItem(): vscode.StatusBarItem {
    return this.item;
  }

  log(message: string): void {
    this.deps.output.appendLine(`[client] ${message}`);
  }

  private setState(state: ClientState): void {
    this.state = state;
    this.render();
  }

  private render(): void {
    const config = vscode.workspace.getConfiguration("solar");
    const chip = configuredChip((key) => config.get<string>(key));
    const view = statusView(this.state, chip, targetLabel(readServerSettings()));
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.command = view.command;
    this.item.backgroundColor =
      view.severity === "error"
        ? new vscode.ThemeColor("statusBarItem.errorBackground")
        : view.severity === "warning"
          ? new vscode.ThemeColor("statusBarItem.warningBackground")
          : undefined;
  }

  /** Hook the Python extension's interpreter changes (only matters without solar.interpreter). */
  async watchInterpreter(): Promise<void> {
    const sub = await onInterpreterChange(() => {
      if (!vscode.workspace.getConfiguration("solar").get<string>("interpreter")) {
        this.log("the Python extension's interpreter changed; restarting");
        void this.restart();
      }
    });
    if (sub) {
      this.subs.push(sub);
    }
  }

  /** The interpreter the user chose (setting, Python extension, python3). */
  async interpreter(): Promise<Interpreter> {
    const scope = folder()?.uri;
    const setting = vscode.workspace.getConfiguration("solar", scope).get<string>("interpreter");
    const fromExt = setting ? undefined : await activeInterpreter(scope);
    return resolveInterpreter(setting, fromExt, pathContext(scope));
  }

  /**
   * Start (or restart) the server. Restarts run one at a time; calls made while one waits to run
   * join it (it reads the newest settings when it starts).
   */
  restart(): Promise<void> {
    if (this.queued && this.next) {
      return this.next;
    }
    this.queued = true;
    this.next = this.chain.then(() => {
      this.queued = false;
      return this.doRestart();
    }).catch((error) => {
      this.log(`restart failed: ${error instanceof Error ? error.message : String(error)}`);
    });
    this.chain = this.next;
    return this.next;
  }

  private async doRestart(): Promise<void> {
    await this.stopClient();
    if (!vscode.workspace.isTrusted) {
      this.setState({ kind: "untrusted" });
      this.log("workspace not trusted: the server stays off until it is");
      if (!this.trustWait) {
        this.trustWait = vscode.workspace.onDidGrantWorkspaceTrust(() => {
          this.trustWait?.dispose();
          this.trustWait = undefined;
          this.log("workspace trusted: starting");
          void this.restart();
        });
        this.subs.push(this.trustWait);
      }
      return;
    }
    const py = await this.interpreter();
    const cwd = folder()?.uri.fsPath;
    this.log(`interpreter ${py.command} (from ${py.source})`);
    this.setState({ kind: "starting", python: py.command });
    const check = await this.probeFn(py.command, cwd);
    if (!check.ok) {
      this.onProbeFailed(py, check);
      return;
    }
    this.log(`solar_lsp ${check.version} on Python ${check.python} (${check.executable})`);
    const client = this.deps.factory({
      command: py.command,
      args: serverArgs(),
      cwd,
      settings: (scopeUri) => readServerSettings(scopeUri ? vscode.Uri.parse(scopeUri) : undefined),
      onStatus: (payload) => {
        const status = asServerStatus(payload);
        if (status && this.client === client) {
          this.setState({ kind: "running", python: py.command, status });
        }
      },
      onStopped: (detail) => {
        if (this.client === client) {
          this.client = undefined;
          this.log(`server stopped: ${detail}`);
          this.setState({ kind: "failed", detail });
          void vscode.window.showErrorMessage(`solar: ${detail}`, "Restart", "Show Log").then((pick) => {
            if (pick === "Restart") {
              void this.restart();
            } else if (pick === "Show Log") {
              this.deps.output.show(true);
            }
          });
        }
      },
    });
    this.client = client;
    try {
      await client.start();
    } catch (error) {
      this.client = undefined;
      const detail = error instanceof Error ? error.message : String(error);
      this.log(`server failed to start: ${detail}`);
      this.setState({ kind: "failed", detail });
      return;
    }
    if (this.state.kind === "starting") {
      this.setState({ kind: "running", python: py.command });
    }
  }

  private onProbeFailed(py: Interpreter, check: Exclude<Probe, { ok: true }>): void {
    this.log(`${py.command}: ${check.reason}: ${check.detail}`);
    if (check.reason === "not-found") {
      this.setState({ kind: "no-python", python: py.command, detail: check.detail });
      void this.offerInterpreter(`solar: cannot run the interpreter ${py.command} (from ${py.source}).`);
      return;
    }
    if (check.reason === "not-installed") {
      this.setState({ kind: "not-installed", python: py.command, detail: check.detail });
      void this.offerInstall(py);
      return;
    }
    this.setState({ kind: "failed", detail: `${py.command}: ${check.detail}` });
  }

  private async offerInterpreter(message: string): Promise<void> {
    const choices = hasPythonExtension() ? ["Select Interpreter", "Open Settings"] : ["Open Settings"];
    const pick = await vscode.window.showWarningMessage(message, ...choices);
    if (pick === "Select Interpreter") {
      await vscode.commands.executeCommand("python.setInterpreter");
    } else if (pick === "Open Settings") {
      await vscode.commands.executeCommand("workbench.action.openSettings", "solar.interpreter");
    }
  }

  private async offerInstall(py: Interpreter): Promise<void> {
    const choices = ["Install", ...(hasPythonExtension() ? ["Select Interpreter"] : []), "Open Settings"];
    const pick = await vscode.window.showWarningMessage(
      `solar: solar_lsp is not installed in ${py.command} (from ${py.source}). Install it with pip?`,
      ...choices,
    );
    if (pick === "Install") {
      await this.install();
    } else if (pick === "Select Interpreter") {
      await vscode.commands.executeCommand("python.setInterpreter");
    } else if (pick === "Open Settings") {
      await vscode.commands.executeCommand("workbench.action.openSettings", "solar.interpreter");
    }
  }

  /** pip-install the server into the interpreter, in a terminal the user sees; start when it imports. */
  async install(): Promise<void> {
    if (!vscode.workspace.isTrusted) {
      void vscode.window.showWarningMessage("solar: trust this workspace before installing or running solar-lsp.");
      return;
    }
    const py = await this.interpreter();
    const spec = vscode.workspace.getConfiguration("solar").get<string>("pipSpec", "solar-lsp");
    const line = pipInstallCommand(py.command, spec, process.platform);
    this.log(`installing: ${line}`);
    const terminal = vscode.window.createTerminal({ name: "solar-lsp: install", cwd: folder()?.uri.fsPath });
    terminal.show();
    terminal.sendText(line, true);
    this.watchInstall(py.command);
  }

  private watchInstall(python: string): void {
    if (this.poll) {
      clearInterval(this.poll);
    }
    const { everyMs, forMs } = this.deps.installPoll ?? { everyMs: 3000, forMs: 15 * 60_000 };
    const until = Date.now() + forMs;
    let busy = false;
    this.poll = setInterval(async () => {
      if (busy) {
        return;
      }
      busy = true;
      try {
        if (Date.now() > until || this.state.kind === "running") {
          clearInterval(this.poll);
          this.poll = undefined;
          return;
        }
        const check = await this.probeFn(python, folder()?.uri.fsPath);
        if (check.ok) {
          clearInterval(this.poll);
          this.poll = undefined;
          this.log(`solar_lsp ${check.version} is now importable in ${python}: starting`);
          await this.restart();
        }
      } finally {
        busy = false;
      }
    }, everyMs);
  }

  private async onConfig(e: vscode.ConfigurationChangeEvent): Promise<void> {
    const action = changeAction((key) => e.affectsConfiguration(`solar.${key}`));
    if (action === "none") {
      return;
    }
    this.render();
    if (action === "restart") {
      this.log("settings changed that need a new server: restarting");
      await this.restart();
    } else if (this.client) {
      await this.client.notifyConfigChanged();
    }
  }

  private async stopClient(): Promise<void> {
    const c = this.client;
    this.client = undefined;
    if (c) {
      try {
        await c.stop();
      } catch (error) {
        this.log(`stopping the server: ${error instanceof Error ? error.message : String(error)}`);
      }
      this.setState({ kind: "stopped" });
    }
  }

  // ---- ServerLink
  isRunning(): boolean {
    return this.client !== undefined && this.state.kind === "running";
  }

  execute(command: string, args: unknown[]): Promise<unknown> {
    if (!this.client) {
      return Promise.reject(new Error("the server is not running"));
    }
    return this.client.execute(command, args);
  }

  async dispose(): Promise<void> {
    if (this.poll) {
      clearInterval(this.poll);
    }
    await this.stopClient();
    for (const s of this.subs) {
      s.dispose();
    }
  }
}
