// Write the settings table of README.md from package.json (between the settings markers), so
// the two cannot drift; test/manifest.test.ts checks that the README is up to date.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** The markdown table of the contributed settings. */
export function settingsTable(pkg) {
  const rows = ["| setting | default | values | meaning |", "|---|---|---|---|"];
  for (const [key, p] of Object.entries(pkg.contributes.configuration.properties)) {
    const dflt = p.default === null || p.default === "" ? "—" : `\`${JSON.stringify(p.default)}\``;
    const values = Array.isArray(p.enum) ? p.enum.map((v) => `\`${v}\``).join(", ") : [p.type].flat().filter((t) => t !== "null").join(" / ");
    const text = (p.markdownDescription ?? p.description ?? "").replace(/#(solar\.[\w.]+)#/g, "$1").replace(/\n/g, " ").replace(/\|/g, "\\|");
    rows.push(`| \`${key}\` | ${dflt} | ${values} | ${text} |`);
  }
  return rows.join("\n");
}

export const START = "<!-- settings:start (npm run readme) -->";
export const END = "<!-- settings:end -->";

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  const path = join(root, "README.md");
  const text = readFileSync(path, "utf8");
  const a = text.indexOf(START);
  const b = text.indexOf(END);
  if (a < 0 || b < a) throw new Error("README.md lacks the settings markers");
  const updated = text.slice(0, a + START.length) + "\n" + settingsTable(pkg) + "\n" + text.slice(b);
  if (process.argv.includes("--check")) {
    if (updated !== text) {
      console.error("README.md's settings table is out of date: run npm run readme");
      process.exit(1);
    }
  } else {
    writeFileSync(path, updated);
    console.log("README.md settings table updated");
  }
}
