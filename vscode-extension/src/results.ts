/**
 * What to do with the reply of a server command (`workspace/executeCommand`), and the HTML of
 * the roofline webview. Pure; commands.ts acts on the verdict.
 */

export type Reply =
  | { kind: "error"; message: string }
  | { kind: "svg"; svg: string }
  | { kind: "document"; uri: string; text: string }
  | { kind: "value"; value: unknown };

/**
 * `{"error"}` is a failure the server explains; `{"svg"}` is a roofline plot; `{"uri","text"}`
 * a report the server has already asked the editor to show (window/showDocument).
 */
export function classifyReply(reply: unknown): Reply {
  if (typeof reply === "object" && reply !== null) {
    const r = reply as Record<string, unknown>;
    if (typeof r.error === "string" && r.error !== "") {
      return { kind: "error", message: r.error };
    }
    if (typeof r.svg === "string") {
      return { kind: "svg", svg: r.svg };
    }
    if (typeof r.uri === "string" && typeof r.text === "string") {
      return { kind: "document", uri: r.uri, text: r.text };
    }
  }
  return { kind: "value", value: reply };
}

/**
 * Whether a `window/showDocument` from the server is one the extension shows itself: the
 * server writes the roofline as an `.svg` view and asks to open it, but its reply carries the
 * SVG, which the extension draws in a webview; opening the file too would show its XML text.
 */
export function shownByExtension(uri: string): boolean {
  return /\.svg$/i.test(uri.split(/[?#]/)[0]);
}

/** The message for a JSON-RPC error reply (an unknown command, an exception in the server). */
export function failureMessage(command: string, error: unknown): string {
  const msg = error instanceof Error ? error.message : typeof error === "object" && error !== null && "message" in error ? String((error as { message: unknown }).message) : String(error);
  return `solar: ${command} failed: ${msg}`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string);
}

/**
 * A webview page showing the server's SVG. Scripts are off (no `script-src` in the CSP and
 * the webview is created without `enableScripts`), so a `<script>` or `onload=` in the SVG
 * cannot run; the SVG is embedded inline so its text stays selectable and it follows the theme
 * background.
 */
export function rooflineHtml(svg: string, title: string, cspSource: string): string {
  const start = svg.indexOf("<svg");
  const body = start >= 0 ? svg.slice(start) : `<p>The server's reply holds no SVG.</p>`;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src ${cspSource} data:; style-src 'unsafe-inline' ${cspSource}; font-src ${cspSource};">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>${escapeHtml(title)}</title>
<style>
  body { background: var(--vscode-editor-background); color: var(--vscode-editor-foreground); padding: 12px; }
  .plot { background: #fff; display: inline-block; padding: 8px; border-radius: 4px; max-width: 100%; }
  .plot svg { max-width: 100%; height: auto; }
</style>
</head>
<body>
<h3>${escapeHtml(title)}</h3>
<div class="plot">${body}</div>
</body>
</html>`;
}
