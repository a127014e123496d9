/**
 * What the status bar item says, from the extension's state and the server's `solar/status`
 * payload. Pure, so every state is unit-tested; controller.ts (`Controller.render`) puts it on
 * screen.
 */

/** The payload of `solar/status` and of `solar.status` (server.py status_payload). */
export interface ServerStatus {
  chip: string;
  analyzing: number;
  errors: number;
  jobs?: number;
  workers?: number[];
  version?: string;
  settings_error?: string | null;
}

export type ClientState =
  | { kind: "untrusted" }
  | { kind: "starting"; python: string }
  | { kind: "not-installed"; python: string; detail: string }
  | { kind: "no-python"; python: string; detail: string }
  | { kind: "failed"; detail: string }
  | { kind: "stopped" }
  | { kind: "running"; python: string; status?: ServerStatus };

export interface StatusView {
  text: string;
  tooltip: string;
  /** Command id run on click. */
  command: string;
  severity: "normal" | "warning" | "error";
}

/** A chip setting as shown: a bundled name as is, a chip file by its name without `.toml`. */
export function chipLabel(chip: string): string {
  if (/[\\/]/.test(chip) || chip.toLowerCase().endsWith(".toml")) {
    const base = chip.split(/[\\/]/).pop() ?? chip;
    return base.replace(/\.toml$/i, "");
  }
  return chip;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** The item's text, tooltip, click command and colour for a state. `chip` is the configured chip. */
export function statusView(state: ClientState, chipSetting: string, target?: string): StatusView {
  const chip = chipLabel(chipSetting);
  const tgt = target ? ` · target ${target}` : "";
  switch (state.kind) {
    case "untrusted":
      return {
        text: "$(shield) solar: restricted",
        tooltip:
          "solar-lsp is off in this untrusted workspace: it would run the workspace's Python code " +
          "(tracing, golden runs) and its interpreter. Trust the workspace to start it.",
        command: "workbench.trust.manage",
        severity: "warning",
      };
    case "starting":
      return {
        text: `$(sync~spin) solar: ${chip} · starting`,
        tooltip: `Starting solar-lsp with ${state.python}`,
        command: "solar-lsp.showLog",
        severity: "normal",
      };
    case "not-installed":
      return {
        text: "$(warning) solar: not installed",
        tooltip: `solar_lsp is not importable in ${state.python} (${state.detail}). Click to install it.`,
        command: "solar-lsp.installServer",
        severity: "warning",
      };
    case "no-python":
      return {
        text: "$(warning) solar: no Python",
        tooltip: `Cannot run ${state.python} (${state.detail}). Set solar.interpreter or select an interpreter.`,
        command: "solar-lsp.showLog",
        severity: "warning",
      };
    case "failed":
      return {
        text: "$(error) solar: server failed",
        tooltip: `solar-lsp stopped: ${state.detail}. Click for the log; run "solar: Restart Server" to retry.`,
        command: "solar-lsp.showLog",
        severity: "error",
      };
    case "stopped":
      return { text: "$(circle-slash) solar: stopped", tooltip: "solar-lsp is not running", command: "solar-lsp.restart", severity: "normal" };
    case "running": {
      const s = state.status;
      const active = chipLabel(s?.chip ?? chip);
      if (s?.settings_error) {
        return {
          text: `$(warning) solar: ${active} · settings error`,
          tooltip: `Server rejected a setting: ${s.settings_error}`,
          command: "workbench.action.openSettings",
          severity: "warning",
        };
      }
      const version = s?.version ? ` ${s.version}` : "";
      const base = `solar-lsp${version} with ${state.python}, chip ${active}${tgt}. Click to select a chip.`;
      if (s && s.analyzing > 0) {
        return { text: `$(sync~spin) solar: ${active} · analyzing ${s.analyzing}`, tooltip: `${base}\nAnalyzing ${plural(s.analyzing, "file")}.`, command: "solar-lsp.selectChip", severity: "normal" };
      }
      if (s && s.errors > 0) {
        return {
          text: `$(error) solar: ${active} · ${plural(s.errors, "error")}`,
          tooltip: `${base}\n${plural(s.errors, "file")} with entries that failed: see the Problems panel.`,
          command: "solar-lsp.selectChip",
          severity: "error",
        };
      }
      return { text: `$(dashboard) solar: ${active} · idle`, tooltip: base, command: "solar-lsp.selectChip", severity: "normal" };
    }
  }
}

/** Accept a `solar/status` payload only if it has the fields the view reads. */
export function asServerStatus(payload: unknown): ServerStatus | undefined {
  if (typeof payload !== "object" || payload === null) {
    return undefined;
  }
  const p = payload as Record<string, unknown>;
  if (typeof p.chip !== "string" || typeof p.analyzing !== "number" || typeof p.errors !== "number") {
    return undefined;
  }
  return p as unknown as ServerStatus;
}
