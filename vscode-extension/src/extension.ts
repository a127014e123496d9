/**
 * Entry point: wires the real vscode-languageclient into the controller and registers the
 * commands. Everything with logic in it lives in the modules this file imports.
 */
import * as vscode from "vscode";
import {
  CloseAction,
  ErrorAction,
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  ResponseError,
  RevealOutputChannelOn,
  State,
  TransportKind,
  type LanguageClientOptions,
  type ServerOptions,
} from "vscode-languageclient/node";
import { askSizes, handleReply, registerCommands, type Hooks } from "./commands";
import { Controller, type ClientHandle, type ClientSpec } from "./controller";
import { failureMessage, shownByExtension } from "./results";
import { sizesToAsk } from "./sizes";

let controller: Controller | undefined;

function makeClient(spec: ClientSpec, output: vscode.OutputChannel, trace: vscode.OutputChannel): ClientHandle {
  const serverOptions: ServerOptions = {
    command: spec.command,
    args: spec.args,
    transport: TransportKind.stdio,
    options: { cwd: spec.cwd, env: { ...process.env, PYTHONUNBUFFERED: "1" } },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: "file", language: "python" }],
    outputChannel: output,
    traceOutputChannel: trace,
    revealOutputChannelOn: RevealOutputChannelOn.Never,
    // a dead server is reported in the status bar and restarted by the user, not in a loop
    errorHandler: {
      error: () => ({ action: ErrorAction.Continue }),
      closed: () => ({ action: CloseAction.DoNotRestart, handled: true }),
    },
    initializationOptions: { solar: spec.settings() },
    middleware: {
      workspace: {
        // the server pulls section "solar": answer with the mapped, explicitly set settings
        configuration: async (params, token, next) => {
          const base = await next(params, token);
          if (!Array.isArray(base)) {
            return base;
          }
          return params.items.map((item, i) => (item.section === "solar" ? spec.settings(item.scopeUri) : base[i]));
        },
      },
      window: {
        showDocument: async (params, next) => {
          if (shownByExtension(params.uri)) {
            output.appendLine(`[client] ${params.uri}: drawn in the roofline panel, not opened as text`);
            return { success: true };
          }
          const result = await next(params, undefined as never);
          return result instanceof ResponseError ? { success: false } : result;
        },
      },
      // code lens / code action clicks on server commands: show an error reply, an SVG; the
      // "SOL at S=…" lens first asks for the sizes
      executeCommand: async (command, args, next) => {
        try {
          const ask = sizesToAsk(command, args);
          const sizes = ask ? await askSizes(ask.prefill) : undefined;
          if (ask && sizes === undefined) {
            return undefined;
          }
          const reply = await next(command, ask ? [args[0], args[1], sizes] : args);
          await handleReply(command, reply);
          return reply;
        } catch (error) {
          void vscode.window.showErrorMessage(failureMessage(command, error));
          return undefined;
        }
      },
    },
  };
  const client = new LanguageClient("solar", "solar-lsp", serverOptions, clientOptions);
  let stopping = false;
  client.onDidChangeState((e) => {
    if (e.newState === State.Stopped && !stopping) {
      spec.onStopped("the server process exited (see the solar-lsp output)");
    }
  });
  client.onNotification("solar/status", (payload: unknown) => spec.onStatus(payload));
  return {
    async start() {
      await client.start();
      try {
        spec.onStatus(await client.sendRequest(ExecuteCommandRequest.type, { command: "solar.status", arguments: [] }));
      } catch {
        // the notification will come with the first analysis
      }
    },
    async stop() {
      stopping = true;
      if (client.isRunning()) {
        await client.stop();
      }
    },
    async notifyConfigChanged() {
      // settings: null makes the server pull section "solar" through the middleware above
      await client.sendNotification(DidChangeConfigurationNotification.type, { settings: null });
    },
    isRunning: () => client.isRunning(),
    execute: (command, args) => client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args }),
  };
}

function chipsOf(ext: vscode.Extension<unknown>): { name: string; description: string }[] {
  const prop = ext.packageJSON?.contributes?.configuration?.properties?.["solar.chip"];
  const names: string[] = prop?.enum ?? [];
  const descs: string[] = prop?.enumDescriptions ?? [];
  return names.map((name, i) => ({ name, description: descs[i] ?? "" }));
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel("solar-lsp");
  const trace = vscode.window.createOutputChannel("solar-lsp trace");
  const ctl = new Controller({ factory: (spec) => makeClient(spec, output, trace), output });
  controller = ctl;
  const hooks: Hooks = {
    restart: () => ctl.restart(),
    install: () => ctl.install(),
    showLog: () => output.show(true),
    chips: () => chipsOf(context.extension),
  };
  context.subscriptions.push(output, trace, ctl, ...registerCommands(ctl, hooks));
  void ctl.watchInterpreter();
  void ctl.restart();
}

export async function deactivate(): Promise<void> {
  await controller?.dispose();
  controller = undefined;
}
