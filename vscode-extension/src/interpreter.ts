/**
 * Which Python runs the server, whether `solar_lsp` is importable there, and the pip command
 * that installs it. No `vscode` import: the Python extension's answer is passed in.
 */
import { execFile } from "node:child_process";
import { expandPath, type PathContext } from "./config";

export type InterpreterSource = "solar.interpreter" | "Python extension" | "default";

export interface Interpreter {
  /** Executable (a path, or a name looked up on PATH such as `python3`). */
  command: string;
  source: InterpreterSource;
}

export const DEFAULT_PYTHON = "python3";

/**
 * The interpreter the user chose: the `solar.interpreter` setting, else the Python
 * extension's active interpreter (when it is installed and has one), else `python3`.
 */
export function resolveInterpreter(
  setting: string | undefined,
  pythonExtension: string | undefined,
  ctx: PathContext,
): Interpreter {
  if (setting && setting.trim() !== "") {
    return { command: expandPath(setting, ctx), source: "solar.interpreter" };
  }
  if (pythonExtension && pythonExtension.trim() !== "") {
    return { command: pythonExtension, source: "Python extension" };
  }
  return { command: DEFAULT_PYTHON, source: "default" };
}

/** How the server is started with that interpreter (stdio). */
export function serverArgs(): string[] {
  return ["-m", "solar_lsp.lsp.server"];
}

/** A script that checks that the server's module and its LSP library import, without torch. */
export const PROBE_SCRIPT = [
  "import importlib.util, json, sys",
  "import solar_lsp",
  "missing = [m for m in ('solar_lsp.lsp.server', 'pygls', 'lsprotocol') if importlib.util.find_spec(m) is None]",
  "print(json.dumps({'version': solar_lsp.__version__, 'python': sys.version.split()[0],",
  "                  'executable': sys.executable, 'missing': missing}))",
].join("\n");

export type Probe =
  | { ok: true; version: string; python: string; executable: string }
  | { ok: false; reason: "not-found" | "not-installed" | "failed"; detail: string };

/** Read the probe's output (exit status and streams) into a verdict. */
export function readProbe(code: number | null, stdout: string, stderr: string, spawnError?: NodeJS.ErrnoException): Probe {
  if (spawnError && (spawnError.code === "ENOENT" || spawnError.code === "EACCES")) {
    return { ok: false, reason: "not-found", detail: spawnError.message };
  }
  if (code === 0) {
    const line = stdout.trim().split(/\r?\n/).pop() ?? "";
    try {
      const info = JSON.parse(line) as { version: string; python: string; executable: string; missing: string[] };
      if (info.missing.length > 0) {
        return { ok: false, reason: "not-installed", detail: `missing modules: ${info.missing.join(", ")}` };
      }
      return { ok: true, version: info.version, python: info.python, executable: info.executable };
    } catch {
      return { ok: false, reason: "failed", detail: `unexpected output: ${stdout.slice(0, 300)}` };
    }
  }
  if (/ModuleNotFoundError: No module named '?solar_lsp/.test(stderr)) {
    return { ok: false, reason: "not-installed", detail: "No module named 'solar_lsp'" };
  }
  const lastLine = stderr.trim().split(/\r?\n/).pop() ?? "";
  return { ok: false, reason: "failed", detail: lastLine || `exit status ${code}` };
}

/** Run the probe with `python`; never throws. */
export function probe(python: string, cwd: string | undefined, timeoutMs = 30_000): Promise<Probe> {
  return new Promise((resolve) => {
    execFile(python, ["-c", PROBE_SCRIPT], { cwd, timeout: timeoutMs, windowsHide: true }, (error, stdout, stderr) => {
      const err = error as (NodeJS.ErrnoException & { code?: string | number; killed?: boolean }) | null;
      if (err?.killed) {
        resolve({ ok: false, reason: "failed", detail: `${python} did not answer within ${timeoutMs / 1000} s` });
        return;
      }
      const spawnError = err && typeof err.code === "string" ? err : undefined;
      const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
      resolve(readProbe(code, String(stdout), String(stderr), spawnError));
    });
  });
}

/** Quote one word for the user's shell (POSIX sh, or PowerShell on Windows). */
export function shellQuote(word: string, platform: NodeJS.Platform): string {
  if (platform === "win32") {
    return `'${word.replace(/'/g, "''")}'`;
  }
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(word)) {
    return word;
  }
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * The command typed into a terminal to install the server: `<python> -m pip install <spec>`.
 * `spec` is the user's `solar.pipSpec` and may hold several words (`-e /path/to/repo`), so it
 * is passed through as written; the interpreter path is quoted.
 */
export function pipInstallCommand(python: string, spec: string, platform: NodeJS.Platform): string {
  const exe = shellQuote(python, platform);
  const call = platform === "win32" ? `& ${exe}` : exe;
  return `${call} -m pip install ${spec.trim() || "solar-lsp"}`;
}
