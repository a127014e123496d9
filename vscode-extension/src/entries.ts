/**
 * Entry points of a document as the server finds them: `solar.entries` runs the server's own
 * discovery (solar_lsp.source.discover, on the document's text, AST only) so the palette
 * commands name the same entries the code lenses and hints are about.
 */

export interface ServerEntry {
  name: string;
  /** `model`, `function` or `module`. */
  kind: string;
  /** `torch` or `jax`. */
  frontend: string;
  /** 0-based line of the `def`/`class` keyword. */
  line: number;
  /** 0-based last line of the definition. */
  endLine: number;
  /** 0-based line of its `# solar:` pragma, when it has one. */
  pragmaLine?: number;
}

export interface EntriesReply {
  entries: ServerEntry[];
  /** Why the server found none (a syntax error, a bad pragma, an unreadable file). */
  error?: string;
}

/** The server command that lists a document's entries; its one argument is the document URI. */
export const ENTRIES_COMMAND = "solar.entries";

function isLine(v: unknown): v is number {
  return typeof v === "number" && Number.isInteger(v) && v >= 1;
}

/**
 * Read the server's `solar.entries` reply (`{entries: [{name, kind, frontend, line, end_line,
 * pragma_line}], error?}`, lines 1-based) into 0-based entries; malformed items are skipped.
 */
export function readEntries(reply: unknown): EntriesReply {
  if (typeof reply !== "object" || reply === null) {
    return { entries: [], error: "the server sent no entry list" };
  }
  const r = reply as Record<string, unknown>;
  const entries: ServerEntry[] = [];
  for (const item of Array.isArray(r.entries) ? r.entries : []) {
    const e = (item ?? {}) as Record<string, unknown>;
    if (typeof e.name !== "string" || !isLine(e.line)) {
      continue;
    }
    entries.push({
      name: e.name,
      kind: typeof e.kind === "string" ? e.kind : "",
      frontend: typeof e.frontend === "string" ? e.frontend : "",
      line: e.line - 1,
      endLine: (isLine(e.end_line) ? Math.max(e.end_line, e.line) : e.line) - 1,
      pragmaLine: isLine(e.pragma_line) ? e.pragma_line - 1 : undefined,
    });
  }
  const error = typeof r.error === "string" && r.error !== "" ? r.error : undefined;
  return error === undefined ? { entries } : { entries, error };
}

/** The entry whose definition, or its pragma line, holds `line` (0-based), if any. */
export function entryAt(entries: ServerEntry[], line: number): ServerEntry | undefined {
  return entries.find((e) => (e.line <= line && line <= e.endLine) || e.pragmaLine === line);
}
