// Bundle the extension with esbuild (dist/extension.js), or with --tests the unit tests
// (out/test/*.test.js), where `vscode` resolves to test/fake-vscode.ts.
import * as esbuild from "esbuild";
import { readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const production = process.argv.includes("--production");
const tests = process.argv.includes("--tests");

const common = { bundle: true, platform: "node", format: "cjs", target: "node20", logLevel: "warning" };

if (tests) {
  rmSync(join(root, "out"), { recursive: true, force: true });
  const entryPoints = readdirSync(join(root, "test"))
    .filter((f) => f.endsWith(".test.ts"))
    .map((f) => join(root, "test", f));
  await esbuild.build({
    ...common,
    entryPoints,
    outdir: join(root, "out", "test"),
    sourcemap: "inline",
    alias: { vscode: join(root, "test", "fake-vscode.ts") },
  });
} else {
  rmSync(join(root, "dist"), { recursive: true, force: true });
  await esbuild.build({
    ...common,
    entryPoints: [join(root, "src", "extension.ts")],
    outfile: join(root, "dist", "extension.js"),
    external: ["vscode"],
    sourcemap: !production,
    minify: production,
  });
}
