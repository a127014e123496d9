/**
 * The "SOL at S=…" code lens (server command `solar.solAt [uri, entry, sizes, prefill]`): the
 * lens leaves `sizes` empty for the user to type, and passes the pragma's own sizes as
 * `prefill`. Pure (no `vscode` import); commands.ts asks with an input box.
 */

/** The server command that evaluates an entry's SOL at other sizes of its shape symbols. */
export const SOL_AT_COMMAND = "solar.solAt";

/** Whether a `solar.solAt` call still needs the user's sizes, and what to pre-fill the box with. */
export function sizesToAsk(command: string, args: unknown[]): { prefill: string } | undefined {
  if (command !== SOL_AT_COMMAND || args.length < 2) {
    return undefined;
  }
  const given = args[2];
  const has =
    typeof given === "string" ? given.trim() !== "" : typeof given === "object" && given !== null && Object.keys(given).length > 0;
  if (has) {
    return undefined;
  }
  return { prefill: typeof args[3] === "string" ? args[3] : "" };
}

const ITEM = /^([A-Za-z_]\w*)\s*=\s*([0-9][0-9_]*)$/;

/**
 * What is wrong with sizes the user typed (`S=4096, B=8`), or undefined when the server can read
 * them: the same grammar as solar_lsp/lsp/sizes.py `parse_sizes`.
 */
export function checkSizes(text: string): string | undefined {
  const items = text
    .trim()
    .split(/[,\s;]+(?=[A-Za-z_])/)
    .map((s) => s.trim().replace(/,$/, ""))
    .filter((s) => s !== "");
  if (items.length === 0) {
    return "write NAME=SIZE, e.g. S=4096";
  }
  for (const item of items) {
    const m = ITEM.exec(item);
    if (!m) {
      return `cannot read ${JSON.stringify(item)}: write NAME=SIZE, e.g. S=4096`;
    }
    if (Number(m[2].replace(/_/g, "")) < 1) {
      return `${m[1]} must be at least 1`;
    }
  }
  return undefined;
}
