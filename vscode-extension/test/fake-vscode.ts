/**
 * A test double of the `vscode` module (the bundler aliases `vscode` to this file in tests):
 * just enough of the API the extension calls, recording what it did, with scripted answers
 * for the UI prompts. Settings behave like VS Code's: defaults from package.json, three scopes,
 * `inspect`, `update` and change events.
 */
import * as path from "node:path";
import { readFileSync } from "node:fs";

type Listener<T> = (e: T) => unknown;

export class EventEmitter<T> {
  private listeners: Listener<T>[] = [];
  event = (listener: Listener<T>): Disposable => {
    this.listeners.push(listener);
    return new Disposable(() => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    });
  };
  fire(e: T): void {
    for (const l of [...this.listeners]) {
      l(e);
    }
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class Disposable {
  constructor(private readonly fn: () => void = () => undefined) {}
  dispose(): void {
    this.fn();
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly fsPath: string,
  ) {}
  static file(p: string): Uri {
    return new Uri("file", p);
  }
  static parse(s: string): Uri {
    return s.startsWith("file://") ? new Uri("file", decodeURIComponent(s.slice(7))) : new Uri(s.split(":")[0], s);
  }
  get path(): string {
    return this.fsPath;
  }
  toString(): string {
    return this.scheme === "file" ? `file://${this.fsPath}` : this.fsPath;
  }
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}
export enum ConfigurationTarget {
  Global = 1,
  Workspace = 2,
  WorkspaceFolder = 3,
}
export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}
export enum ViewColumn {
  Active = -1,
  Beside = -2,
  One = 1,
}

// ---------------------------------------------------------------- settings

const pkg = JSON.parse(readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8"));
const properties: Record<string, { default?: unknown }> = pkg.contributes.configuration.properties;

type Scope = "global" | "workspace" | "folder";
const scopeOf: Record<number, Scope> = { 1: "global", 2: "workspace", 3: "folder" };

class Store {
  values: Record<Scope, Map<string, unknown>> = { global: new Map(), workspace: new Map(), folder: new Map() };
  writes: { key: string; value: unknown; scope: Scope }[] = [];
  clear(): void {
    for (const m of Object.values(this.values)) {
      m.clear();
    }
    this.writes = [];
  }
}

export interface ConfigurationChangeEvent {
  affectsConfiguration(section: string): boolean;
}

const configChanged = new EventEmitter<ConfigurationChangeEvent>();

class Configuration {
  constructor(
    private readonly section: string,
    private readonly store: Store,
  ) {}
  private full(key: string): string {
    return `${this.section}.${key}`;
  }
  inspect(key: string) {
    const k = this.full(key);
    return {
      key: k,
      defaultValue: properties[k]?.default,
      globalValue: this.store.values.global.get(k),
      workspaceValue: this.store.values.workspace.get(k),
      workspaceFolderValue: this.store.values.folder.get(k),
    };
  }
  get<T>(key: string, fallback?: T): T {
    const i = this.inspect(key);
    for (const v of [i.workspaceFolderValue, i.workspaceValue, i.globalValue, i.defaultValue]) {
      if (v !== undefined) {
        return v as T;
      }
    }
    return fallback as T;
  }
  has(key: string): boolean {
    return this.get(key) !== undefined;
  }
  async update(key: string, value: unknown, target: ConfigurationTarget | boolean = ConfigurationTarget.Workspace): Promise<void> {
    const t = typeof target === "boolean" ? (target ? ConfigurationTarget.Global : ConfigurationTarget.Workspace) : target;
    const scope = scopeOf[t];
    const k = this.full(key);
    fake.settings.writes.push({ key: k, value, scope });
    if (value === undefined) {
      this.store.values[scope].delete(k);
    } else {
      this.store.values[scope].set(k, value);
    }
    configChanged.fire({ affectsConfiguration: (s: string) => k === s || k.startsWith(`${s}.`) });
  }
}

// ---------------------------------------------------------------- recorder and scripted UI

export interface FakeTerminal {
  name: string;
  cwd?: string;
  sent: string[];
  shown: boolean;
}

export interface FakeWebview {
  viewType: string;
  title: string;
  options: unknown;
  html: string;
}

type Answer = (message: string, items: unknown[], options?: unknown) => unknown;

export const fake = {
  settings: new Store(),
  commands: new Map<string, (...args: unknown[]) => unknown>(),
  executed: [] as { command: string; args: unknown[] }[],
  messages: [] as { level: "info" | "warning" | "error"; text: string; items: string[] }[],
  /** Answer to the next message with buttons (return a button label or undefined). */
  answerMessage: ((_m: string, _items: string[]) => undefined) as (message: string, items: string[]) => string | undefined,
  answerQuickPick: ((_m: string, _items: unknown[]) => undefined) as Answer,
  answerInputBox: ((_options: unknown) => undefined) as (options: { validateInput?: (v: string) => unknown; value?: string }) => string | undefined,
  answerOpenDialog: (() => undefined) as () => Uri[] | undefined,
  terminals: [] as FakeTerminal[],
  webviews: [] as FakeWebview[],
  statusItems: [] as StatusBarItem[],
  output: [] as string[],
  extensions: new Map<string, unknown>(),
  trustGranted: new EventEmitter<void>(),
  reset(): void {
    this.settings.clear();
    this.commands.clear();
    this.executed = [];
    this.messages = [];
    this.answerMessage = () => undefined;
    this.answerQuickPick = () => undefined;
    this.answerInputBox = () => undefined;
    this.answerOpenDialog = () => undefined;
    this.terminals = [];
    this.webviews = [];
    this.statusItems = [];
    this.output = [];
    this.extensions.clear();
    workspace.isTrusted = true;
    workspace.workspaceFolders = undefined;
    window.activeTextEditor = undefined;
  },
};

export class StatusBarItem {
  text = "";
  tooltip: string | undefined;
  command: string | undefined;
  backgroundColor: ThemeColor | undefined;
  name: string | undefined;
  visible = false;
  constructor(
    readonly id: string,
    readonly alignment: StatusBarAlignment,
    readonly priority: number,
  ) {}
  show(): void {
    this.visible = true;
  }
  hide(): void {
    this.visible = false;
  }
  dispose(): void {
    this.visible = false;
  }
}

// ---------------------------------------------------------------- namespaces

export const commands = {
  registerCommand(id: string, fn: (...args: unknown[]) => unknown): Disposable {
    if (fake.commands.has(id)) {
      throw new Error(`command '${id}' already exists`);
    }
    fake.commands.set(id, fn);
    return new Disposable(() => fake.commands.delete(id));
  },
  async executeCommand(id: string, ...args: unknown[]): Promise<unknown> {
    fake.executed.push({ command: id, args });
    const fn = fake.commands.get(id);
    return fn ? fn(...args) : undefined;
  },
};

function message(level: "info" | "warning" | "error") {
  return async (text: string, ...items: string[]): Promise<string | undefined> => {
    fake.messages.push({ level, text, items });
    return fake.answerMessage(text, items);
  };
}

export interface FakeDocument {
  uri: Uri;
  languageId: string;
  getText(): string;
}

export interface FakeEditor {
  document: FakeDocument;
  selection: { active: { line: number; character: number } };
}

export const window = {
  activeTextEditor: undefined as FakeEditor | undefined,
  createStatusBarItem(id: string, alignment: StatusBarAlignment, priority: number): StatusBarItem {
    const item = new StatusBarItem(id, alignment, priority);
    fake.statusItems.push(item);
    return item;
  },
  createOutputChannel(name: string) {
    return {
      name,
      appendLine: (l: string) => fake.output.push(l),
      append: (l: string) => fake.output.push(l),
      show: () => undefined,
      clear: () => undefined,
      dispose: () => undefined,
      hide: () => undefined,
      replace: () => undefined,
    };
  },
  showInformationMessage: message("info"),
  showWarningMessage: message("warning"),
  showErrorMessage: message("error"),
  async showQuickPick(items: unknown[], options?: unknown): Promise<unknown> {
    return fake.answerQuickPick("", items, options);
  },
  async showInputBox(options: { validateInput?: (v: string) => unknown; value?: string }): Promise<string | undefined> {
    return fake.answerInputBox(options);
  },
  async showOpenDialog(): Promise<Uri[] | undefined> {
    return fake.answerOpenDialog();
  },
  async withProgress<T>(_options: unknown, task: (progress: unknown, token: unknown) => Promise<T>): Promise<T> {
    return task({ report: () => undefined }, { isCancellationRequested: false });
  },
  createWebviewPanel(viewType: string, title: string, _column: unknown, options: unknown) {
    const view: FakeWebview = { viewType, title, options, html: "" };
    fake.webviews.push(view);
    const disposed = new EventEmitter<void>();
    return {
      get title() {
        return view.title;
      },
      set title(t: string) {
        view.title = t;
      },
      webview: {
        cspSource: "vscode-webview://fake",
        get html() {
          return view.html;
        },
        set html(h: string) {
          view.html = h;
        },
      },
      reveal: () => undefined,
      onDidDispose: disposed.event,
      dispose: () => disposed.fire(),
    };
  },
  createTerminal(options: { name: string; cwd?: string }) {
    const t: FakeTerminal = { name: options.name, cwd: options.cwd, sent: [], shown: false };
    fake.terminals.push(t);
    return {
      name: t.name,
      show: () => {
        t.shown = true;
      },
      sendText: (text: string) => {
        t.sent.push(text);
      },
      dispose: () => undefined,
    };
  },
};

export interface WorkspaceFolder {
  uri: Uri;
  name: string;
  index: number;
}

export const workspace = {
  isTrusted: true,
  workspaceFolders: undefined as WorkspaceFolder[] | undefined,
  onDidGrantWorkspaceTrust: fake.trustGranted.event,
  onDidChangeConfiguration: configChanged.event,
  getConfiguration(section: string, _scope?: unknown): Configuration {
    return new Configuration(section, fake.settings);
  },
  getWorkspaceFolder(_uri: Uri): WorkspaceFolder | undefined {
    return workspace.workspaceFolders?.[0];
  },
};

export const extensions = {
  getExtension(id: string) {
    const exports = fake.extensions.get(id);
    if (exports === undefined) {
      return undefined;
    }
    return { id, isActive: true, exports, activate: async () => exports, packageJSON: {} };
  },
};

/** Helpers for tests: an open Python editor with `text`, the cursor on `line`. */
export function openEditor(file: string, text: string, line: number): FakeEditor {
  const editor: FakeEditor = {
    document: { uri: Uri.file(file), languageId: "python", getText: () => text },
    selection: { active: { line, character: 0 } },
  };
  window.activeTextEditor = editor;
  return editor;
}
