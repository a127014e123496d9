import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { CLIENT_KEYS, SERVER_KEYS } from "../src/config";

const root = join(__dirname, "..", "..");
const repo = join(root, "..");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const props: Record<string, Record<string, unknown>> = pkg.contributes.configuration.properties;

/** solar_lsp/lsp/settings.py's ALIASES table (client spelling -> field), read from the source. */
function aliasTable(): Map<string, string> {
  const src = readFileSync(join(repo, "solar_lsp", "lsp", "settings.py"), "utf8");
  const table = /ALIASES = \{([\s\S]*?)\n\}/.exec(src)?.[1] ?? "";
  return new Map([...table.matchAll(/"([A-Za-z_0-9]+)":\s*"([A-Za-z_0-9]+)"/g)].map((m) => [m[1], m[2]]));
}

function serverAliases(): Set<string> {
  return new Set(aliasTable().keys());
}

/** The commands solar_lsp/lsp/commands.py registers (its `@server.command("…")` handlers). */
function serverCommands(): string[] {
  const src = readFileSync(join(repo, "solar_lsp", "lsp", "commands.py"), "utf8");
  return [...src.matchAll(/@server\.command\("([\w.]+)"\)/g)].map((m) => m[1]);
}

/** The keys in the first column of docs/editors.md's settings table. */
function documentedKeys(): string[] {
  const doc = readFileSync(join(repo, "docs", "editors.md"), "utf8");
  const table = doc.slice(doc.indexOf("| key |"), doc.indexOf("```toml"));
  const rows = table.split("\n").filter((l) => l.startsWith("|")).slice(2); // past the header and |---|
  return rows.flatMap((row) => [...(row.split("|")[1] ?? "").matchAll(/`([A-Za-z]+)`/g)].map((m) => m[1]));
}

describe("package.json settings", () => {
  it("contributes a setting for every server option, each one the server accepts", () => {
    const aliases = serverAliases();
    assert.ok(aliases.size > 10, "parsed the server's ALIASES");
    for (const key of SERVER_KEYS) {
      assert.ok(aliases.has(key), `the server does not accept ${key}`);
      assert.ok(props[`solar.${key}`], `no setting solar.${key}`);
    }
    for (const key of CLIENT_KEYS) {
      assert.ok(props[`solar.${key}`], `no setting solar.${key}`);
    }
    const contributed = Object.keys(props).map((k) => k.slice("solar.".length));
    const known = new Set<string>([...SERVER_KEYS, ...CLIENT_KEYS]);
    assert.deepEqual(contributed.filter((k) => !known.has(k)), [], "settings the mapping does not know");
  });
  it("leaves no server option without a setting", () => {
    const table = aliasTable();
    const fields = new Set(table.values());
    const covered = new Set(SERVER_KEYS.map((k) => table.get(k)));
    assert.deepEqual([...fields].filter((f) => !covered.has(f)), [], "server fields without a solar.* setting");
  });
  it("covers every key in docs/editors.md's settings table", () => {
    const keys = documentedKeys();
    assert.ok(keys.length >= 10);
    assert.ok(keys.includes("targetHz") && keys.includes("entries") && !keys.includes("smem"), keys.join(" "));
    for (const k of keys) {
      assert.ok(props[`solar.${k}`], `docs/editors.md lists ${k}, the extension has no solar.${k}`);
    }
  });
  it("describes every setting, and every enum value", () => {
    for (const [key, p] of Object.entries(props)) {
      assert.ok(typeof p.markdownDescription === "string" || typeof p.description === "string", `${key} has no description`);
      if (Array.isArray(p.enum)) {
        assert.equal((p.enumDescriptions as unknown[] | undefined)?.length, p.enum.length, `${key}: enumDescriptions`);
      }
    }
  });
  it("offers exactly the bundled chips (hardware/*.toml), with their display names", () => {
    const files = readdirSync(join(repo, "hardware")).filter((f) => f.endsWith(".toml")).sort();
    assert.deepEqual(props["solar.chip"].enum, files.map((f) => f.replace(/\.toml$/, "")), "run npm run sync-chips");
    const names = files.map((f) => /^display_name\s*=\s*"([^"]*)"/m.exec(readFileSync(join(repo, "hardware", f), "utf8"))?.[1]);
    assert.deepEqual(props["solar.chip"].enumDescriptions, names);
    assert.ok((props["solar.chip"].enum as string[]).includes(props["solar.chip"].default as string));
  });
  it("has the server's defaults (solar_lsp/lsp/settings.py Settings, solar_lsp/defaults.py)", () => {
    const src = readFileSync(join(repo, "solar_lsp", "lsp", "settings.py"), "utf8");
    const dflt = (field: string) => new RegExp(`\\n    ${field}: [^=]+= ([^#\\n]+)`).exec(src)?.[1].trim();
    const shared = readFileSync(join(repo, "solar_lsp", "defaults.py"), "utf8");
    assert.equal(dflt("chip"), "DEFAULT_CHIP");
    assert.equal(JSON.stringify(props["solar.chip"].default), /\nDEFAULT_CHIP = ("[^"]*")/.exec(shared)?.[1]);
    assert.equal(JSON.stringify(props["solar.tf32"].default), dflt("tf32"));
    assert.equal(String(props["solar.workers"].default), dflt("workers"));
    assert.equal(Number(props["solar.timeout"].default), Number(dflt("timeout_s")));
    assert.equal(JSON.stringify(props["solar.memoryLimit"].default), dflt("memory_limit"));
    assert.equal(Number(props["solar.debounce"].default), Number(dflt("debounce_s")));
    assert.equal(JSON.stringify(props["solar.headroomDevice"].default), dflt("headroom_device"));
    assert.equal(props["solar.verify"].default, true);
    assert.equal(props["solar.llm"].default, false);
    assert.deepEqual(props["solar.tf32"].enum, ["conv", "all", "none"]);
    assert.equal(JSON.stringify(props["solar.mode"].default), dflt("mode"));
    assert.equal(JSON.stringify(props["solar.optimizer"].default), dflt("optimizer"));
    assert.equal(String(props["solar.symbolic"].default), dflt("symbolic")?.toLowerCase());
    assert.equal(props["solar.targetStepsPerSecond"].default, null);
    assert.equal(dflt("target_steps_per_s"), "None");
    const tuple = (name: string) => [...(new RegExp(`\\n${name} = \\(([^)]*)\\)`).exec(src)?.[1] ?? "").matchAll(/"(\w+)"/g)].map((m) => m[1]);
    assert.deepEqual(props["solar.mode"].enum, tuple("MODES"));
    assert.deepEqual(props["solar.optimizer"].enum, tuple("OPTIMIZERS"));
  });
});

describe("package.json commands and trust", () => {
  it("never reuses a server command id (vscode-languageclient registers those itself)", () => {
    const server = serverCommands();
    assert.ok(server.includes("solar.showIR") && server.includes("solar.entries"), "parsed the server's commands");
    for (const c of pkg.contributes.commands as { command: string }[]) {
      assert.ok(!server.includes(c.command), `${c.command} collides with a server command`);
    }
  });
  it("has the seven commands of the issue", () => {
    const titles = (pkg.contributes.commands as { title: string }[]).map((c) => c.title);
    for (const t of ["Select Chip…", "Set Target Latency…", "Explain Headroom", "Show IR", "Compare Chips", "Show Roofline", "Restart Server"]) {
      assert.ok(titles.includes(t), t);
    }
  });
  it("is limited in untrusted workspaces, and restricts settings that name programs or paths", () => {
    const u = pkg.capabilities.untrustedWorkspaces;
    assert.equal(u.supported, "limited");
    for (const k of ["solar.interpreter", "solar.pipSpec", "solar.chipFile"]) {
      assert.ok(u.restrictedConfigurations.includes(k), k);
    }
  });
});

describe("README.md", () => {
  it("has the settings table of package.json (npm run readme)", () => {
    execFileSync(process.execPath, [join(root, "scripts", "readme-settings.mjs"), "--check"]);
    const readme = readFileSync(join(root, "README.md"), "utf8");
    for (const key of Object.keys(props)) {
      assert.ok(readme.includes(`\`${key}\``), key);
    }
  });
  it("shows the screenshot the e2e run took, which the package includes", () => {
    const readme = readFileSync(join(root, "README.md"), "utf8");
    assert.match(readme, /!\[[^\]]*\]\(media\/screenshot\.png\)/);
    const png = readFileSync(join(root, "media", "screenshot.png"));
    assert.equal(png.subarray(1, 4).toString(), "PNG");
    assert.match(readFileSync(join(root, ".vscodeignore"), "utf8"), /^!media\/screenshot\.png$/m);
  });
});
