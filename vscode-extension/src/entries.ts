/**
 * Entry points of a document, from its text: the fallback for palette commands when the
 * server has no code action at the cursor (it answers from its own AST discovery first).
 *
 * Mirrors docs/entry-points.md closely enough to pick a name: a top-level `class Model` with a
 * top-level `get_inputs`, or a top-level `def`/`class` with a `# solar:` pragma above it (among
 * its decorators and the comment lines directly above them), on its line, or inside its
 * signature.
 */

export interface TextEntry {
  name: string;
  /** 0-based line of the `def`/`class` keyword. */
  line: number;
  /** 0-based last line of the definition. */
  endLine: number;
}

const DEF = /^(?:async\s+def|def|class)\s+([A-Za-z_][A-Za-z0-9_]*)/;
const PRAGMA = /#\s*solar\s*:/;
const GET_INPUTS = /^(?:def\s+get_inputs\b|get_inputs\s*=)/;

function isTopLevelCode(line: string): boolean {
  return line.length > 0 && !/^\s/.test(line) && !line.startsWith("#");
}

/** Top-level entries of `text`, in order. */
export function listEntries(text: string): TextEntry[] {
  const lines = text.split(/\r?\n/);
  const hasGetInputs = lines.some((l) => GET_INPUTS.test(l));
  const found: TextEntry[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const m = DEF.exec(line);
    if (!m) {
      continue;
    }
    // decorators and the comment-only lines directly above them (no blank line between)
    let first = i;
    while (first > 0 && (lines[first - 1].startsWith("@") || lines[first - 1].startsWith("#"))) {
      first--;
    }
    const end = endOfDefinition(lines, i);
    const sigEnd = endOfSignature(lines, i, end);
    const pragma = lines.slice(first, sigEnd + 1).some((l) => PRAGMA.test(l));
    const isModel = /^class\s+Model\b/.test(line) && /Module/.test(line) && hasGetInputs;
    if (pragma || isModel) {
      found.push({ name: m[1], line: i, endLine: end });
    }
    i = end;
  }
  // the last top-level definition of a name is the one Python binds
  const last = new Map<string, TextEntry>();
  for (const e of found) {
    last.set(e.name, e);
  }
  return [...last.values()].sort((a, b) => a.line - b.line);
}

function endOfDefinition(lines: string[], start: number): number {
  let end = start;
  for (let j = start + 1; j < lines.length; j++) {
    const l = lines[j];
    if (l.trim() === "") {
      continue;
    }
    if (isTopLevelCode(l) && !/^[)\]}]/.test(l)) {
      break;
    }
    if (l.startsWith("#") && j > end + 1) {
      // a top-level comment after a blank line belongs to what follows
      break;
    }
    end = j;
  }
  return end;
}

function endOfSignature(lines: string[], start: number, end: number): number {
  let depth = 0;
  for (let j = start; j <= end; j++) {
    const code = lines[j].replace(/#.*$/, "");
    for (const ch of code) {
      if (ch === "(" || ch === "[") depth++;
      if (ch === ")" || ch === "]") depth--;
    }
    if (depth <= 0 && /:\s*$/.test(code)) {
      return j;
    }
  }
  return start;
}

/** The entry whose definition holds `line` (0-based), if any. */
export function entryAt(entries: TextEntry[], line: number): TextEntry | undefined {
  return entries.find((e) => e.line <= line && line <= e.endLine);
}
