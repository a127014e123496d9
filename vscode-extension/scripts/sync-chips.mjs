// Write the bundled chips (../hardware/*.toml: file name and display_name) into the enum of
// the solar.chip setting in package.json. test/manifest.test.ts fails when they drift apart.
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const hw = join(root, "..", "hardware");
const files = readdirSync(hw).filter((f) => f.endsWith(".toml")).sort();
const names = files.map((f) => f.replace(/\.toml$/, ""));
const displays = files.map((f) => {
  const m = /^display_name\s*=\s*"([^"]*)"/m.exec(readFileSync(join(hw, f), "utf8"));
  return m ? m[1] : "";
});
const pkgPath = join(root, "package.json");
const pkg = JSON.parse(readFileSync(pkgPath, "utf8"));
const prop = pkg.contributes.configuration.properties["solar.chip"];
prop.enum = names;
prop.enumDescriptions = displays;
writeFileSync(pkgPath, JSON.stringify(pkg, null, 2) + "\n");
console.log(`solar.chip: ${names.join(", ")}`);
