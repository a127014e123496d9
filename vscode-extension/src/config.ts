/**
 * Settings mapping: VS Code's `solar.*` settings -> the dictionary the server reads from
 * `workspace/configuration` (section `solar`) and from `initializationOptions`.
 *
 * Pure (no `vscode` import) so it is unit-tested under node. Only values the user set
 * explicitly are forwarded: VS Code would otherwise hand the server every default, and a
 * default sent by the client beats `[tool.solar]` in pyproject.toml on the server.
 */

/** Keys the server understands (solar_lsp/lsp/settings.py ALIASES), in the client's spelling. */
export const SERVER_KEYS = [
  "chip",
  "tf32",
  "targetLatency",
  "targetHz",
  "verify",
  "llm",
  "cacheDir",
  "workers",
  "timeout",
  "memoryLimit",
  "debounce",
  "onchip",
  "headroomDevice",
  "dims",
  "entries",
  "mode",
  "optimizer",
  "targetStepsPerSecond",
  "symbolic",
  "symbols",
] as const;

/** Keys only the extension reads; never sent to the server. */
export const CLIENT_KEYS = ["interpreter", "pipSpec", "chipFile", "trace.server"] as const;

/** Changing one of these needs a new server process (interpreter, worker pool size, tracing). */
export const RESTART_KEYS = ["interpreter", "workers", "trace.server"] as const;

export type ServerSettings = Record<string, unknown>;

export interface PathContext {
  /** Filesystem path of the workspace folder the setting belongs to, if any. */
  workspaceFolder?: string;
  home: string;
  env: Record<string, string | undefined>;
}

/**
 * Expand `${workspaceFolder}`, `${userHome}`, `${env:NAME}` and a leading `~`; a relative path
 * is taken from the workspace folder (so `.venv/bin/python` works as users expect).
 */
export function expandPath(value: string, ctx: PathContext): string {
  let out = value.trim();
  out = out.replace(/\$\{workspaceFolder\}/g, ctx.workspaceFolder ?? "");
  out = out.replace(/\$\{userHome\}/g, ctx.home);
  out = out.replace(/\$\{env:([^}]+)\}/g, (_m, name: string) => ctx.env[name] ?? "");
  if (out === "~" || out.startsWith("~/")) {
    out = ctx.home + out.slice(1);
  }
  const looksRelative =
    out.length > 0 && !out.startsWith("/") && !/^[A-Za-z]:[\\/]/.test(out) && !out.startsWith("\\\\");
  if (looksRelative && ctx.workspaceFolder && /[\\/]/.test(out)) {
    out = joinPath(ctx.workspaceFolder, out);
  }
  return out;
}

function joinPath(dir: string, rel: string): string {
  const sep = dir.includes("\\") && !dir.includes("/") ? "\\" : "/";
  const trimmed = rel.replace(/^\.[\\/]/, "");
  return dir.replace(/[\\/]+$/, "") + sep + trimmed;
}

function isBlank(v: unknown): boolean {
  return v === undefined || v === null || (typeof v === "string" && v.trim() === "");
}

/**
 * The server's view of the settings. `explicit` holds the values the user set (any scope);
 * blanks mean "not set" and are dropped, `chipFile` replaces `chip`, paths are expanded.
 */
export function serverSettings(explicit: Record<string, unknown>, ctx: PathContext): ServerSettings {
  const out: ServerSettings = {};
  for (const key of SERVER_KEYS) {
    const v = explicit[key];
    if (isBlank(v)) {
      continue;
    }
    if (key === "dims" || key === "entries") {
      if (typeof v === "object" && v !== null && Object.keys(v).length > 0) {
        out[key] = v;
      }
      continue;
    }
    out[key] = typeof v === "string" ? v.trim() : v;
  }
  const chipFile = explicit["chipFile"];
  if (typeof chipFile === "string" && chipFile.trim() !== "") {
    out.chip = expandPath(chipFile, ctx);
  }
  if (typeof out.cacheDir === "string") {
    out.cacheDir = expandPath(out.cacheDir, ctx);
  }
  return out;
}

export type Target =
  | { targetLatency: string | undefined; targetHz: number | undefined }
  | { error: string };

const LATENCY = /^\s*([0-9]*\.?[0-9]+(?:e-?\d+)?)\s*(s|ms|us|µs|ns)?\s*$/i;
const RATE = /^\s*([0-9]*\.?[0-9]+)\s*(hz|khz|mhz)\s*$/i;

/**
 * Read what the user typed into *Set target latency*: `2ms` / `500us` is a latency, `500Hz` /
 * `2kHz` a rate, empty clears the target. Same grammar as the server's units.py, except that a
 * bare number is refused: the server's `solar.setTarget` reads `500` as Hz while its
 * `targetLatency` setting reads it as seconds, so the box asks for a unit instead of guessing.
 */
export function parseTarget(text: string): Target {
  const t = text.trim();
  if (t === "") {
    return { targetLatency: undefined, targetHz: undefined };
  }
  const rate = RATE.exec(t);
  if (rate) {
    const mult: Record<string, number> = { hz: 1, khz: 1e3, mhz: 1e6 };
    const hz = Number(rate[1]) * mult[rate[2].toLowerCase()];
    if (!(hz > 0)) {
      return { error: `a rate must be positive, got ${t}` };
    }
    return { targetLatency: undefined, targetHz: hz };
  }
  const lat = LATENCY.exec(t);
  if (lat && !lat[2]) {
    return { error: `add a unit to ${t}: a latency (${t}ms, ${t}us) or a rate (${t}Hz)` };
  }
  if (lat) {
    if (!(Number(lat[1]) > 0)) {
      return { error: `a latency must be positive, got ${t}` };
    }
    return { targetLatency: t.replace(/\s+/g, ""), targetHz: undefined };
  }
  return { error: `cannot read ${JSON.stringify(t)}: write a latency (2ms, 500us) or a rate (500Hz)` };
}

/**
 * The chip the settings name: `chipFile` when set, else `chip`. VS Code fills in `chip`'s
 * default from package.json, the one place the extension names the default chip.
 */
export function configuredChip(get: (key: "chip" | "chipFile") => string | undefined): string {
  return get("chipFile") || get("chip") || "";
}

/** Label of the active target, for the status bar tooltip (in train mode a step rate first). */
export function targetLabel(settings: ServerSettings): string | undefined {
  if (settings.mode === "train" && !isBlank(settings.targetStepsPerSecond)) {
    return `${settings.targetStepsPerSecond} steps/s`;
  }
  if (!isBlank(settings.targetLatency)) {
    return String(settings.targetLatency);
  }
  if (!isBlank(settings.targetHz)) {
    return `${settings.targetHz} Hz`;
  }
  return undefined;
}

/** Which of the extension's reactions a settings change needs. */
export function changeAction(affected: (key: string) => boolean): "restart" | "notify" | "none" {
  if (RESTART_KEYS.some((k) => affected(k))) {
    return "restart";
  }
  if ([...SERVER_KEYS, "chipFile"].some((k) => affected(k))) {
    return "notify";
  }
  return "none";
}

export interface Inspected {
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/**
 * Where a command that changes a setting writes it: where the value is set now with the highest
 * precedence (so the write takes effect), else the workspace when one is open, else the user.
 */
export function writeScope(inspected: Inspected | undefined, hasWorkspace: boolean): "folder" | "workspace" | "global" {
  if (inspected?.workspaceFolderValue !== undefined) {
    return "folder";
  }
  if (inspected?.workspaceValue !== undefined) {
    return "workspace";
  }
  if (inspected?.globalValue !== undefined) {
    return "global";
  }
  return hasWorkspace ? "workspace" : "global";
}

/** The explicitly set value of one inspected setting (most specific scope wins). */
export function explicitValue(inspected: Inspected | undefined): unknown {
  if (!inspected) {
    return undefined;
  }
  for (const v of [inspected.workspaceFolderValue, inspected.workspaceValue, inspected.globalValue]) {
    if (v !== undefined) {
      return v;
    }
  }
  return undefined;
}
