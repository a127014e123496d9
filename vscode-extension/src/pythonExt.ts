/**
 * The Python extension's active interpreter, when ms-python.python is installed (the same API
 * vscode-python-tools-extension-template and ruff's extension use), and its change event.
 */
import * as vscode from "vscode";

interface EnvironmentPath {
  readonly id: string;
  readonly path: string;
}

interface PythonApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): EnvironmentPath;
    resolveEnvironment(env: EnvironmentPath | string): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
  };
  settings?: {
    getExecutionDetails(resource?: vscode.Uri): { execCommand: string[] | undefined };
  };
}

export const PYTHON_EXTENSION_ID = "ms-python.python";

async function api(): Promise<PythonApi | undefined> {
  const ext = vscode.extensions.getExtension<PythonApi>(PYTHON_EXTENSION_ID);
  if (!ext) {
    return undefined;
  }
  try {
    return ext.isActive ? ext.exports : await ext.activate();
  } catch {
    return undefined;
  }
}

/** The active interpreter's executable for `resource`, or undefined (no extension, none chosen). */
export async function activeInterpreter(resource?: vscode.Uri): Promise<string | undefined> {
  const py = await api();
  if (!py) {
    return undefined;
  }
  try {
    if (py.environments) {
      const env = await py.environments.resolveEnvironment(py.environments.getActiveEnvironmentPath(resource));
      const path = env?.executable.uri?.fsPath;
      if (path) {
        return path;
      }
    }
    const exec = py.settings?.getExecutionDetails(resource).execCommand;
    return exec && exec.length === 1 ? exec[0] : undefined;
  } catch {
    return undefined;
  }
}

/** Fires when the user picks another interpreter in the Python extension. */
export async function onInterpreterChange(listener: () => void): Promise<vscode.Disposable | undefined> {
  const py = await api();
  return py?.environments?.onDidChangeActiveEnvironmentPath(() => listener());
}

/** Whether the Python extension is installed (to offer its interpreter picker). */
export function hasPythonExtension(): boolean {
  return vscode.extensions.getExtension(PYTHON_EXTENSION_ID) !== undefined;
}
