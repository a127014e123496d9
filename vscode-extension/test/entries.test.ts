import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { entryAt, listEntries } from "../src/entries";

const repo = join(__dirname, "..", "..", "..");

describe("listEntries", () => {
  it("finds the Model convention in the bundled example", () => {
    const text = readFileSync(join(repo, "examples", "mlp.py"), "utf8");
    const entries = listEntries(text);
    assert.deepEqual(entries.map((e) => e.name), ["Model"]);
    const lines = text.split("\n");
    assert.match(lines[entries[0].line], /^class Model\(nn\.Module\)/);
    // the class body ends before get_inputs
    assert.match(lines[entries[0].endLine], /return x \+ self\.down\(h\)/);
  });
  it("ignores a Model without get_inputs", () => {
    assert.deepEqual(listEntries("import torch\nclass Model(nn.Module):\n    pass\n"), []);
  });
  it("finds pragmas above, between decorators, on the def line and in the signature", () => {
    const text = [
      "import torch",                      // 0
      "",                                  // 1
      "# solar: x=f32[8,16], w=f32[16,4]", // 2
      "def matmul(x, w):",                 // 3
      "    return x @ w",                  // 4
      "",                                  // 5
      "def relu(x):  # solar: x=f16[64]",  // 6
      "    return x.clamp_min(0)",         // 7
      "",                                  // 8
      "@torch.compile",                    // 9
      "# solar: x=f32[4]",                 // 10
      "def g(x):",                         // 11
      "    return x",                      // 12
      "",                                  // 13
      "def h(",                            // 14
      "    q,  # solar: q=bf16[2,8]",      // 15
      "):",                                // 16
      "    return q",                      // 17
      "",                                  // 18
      "def plain(x):",                     // 19
      "    # solar: not a pragma of plain, it is in the body", // 20
      "    return x",                      // 21
      "",                                  // 22
      "# solar: x=f32[4]",                 // 23
      "",                                  // 24
      "def detached(x):",                  // 25
      "    return x",                      // 26
    ].join("\n");
    const entries = listEntries(text);
    assert.deepEqual(entries.map((e) => [e.name, e.line, e.endLine]), [
      ["matmul", 3, 4],
      ["relu", 6, 7],
      ["g", 11, 12],
      ["h", 14, 17],
    ]);
  });
  it("keeps the last definition of a name, as Python binds it", () => {
    const text = "# solar: x=f32[4]\ndef f(x):\n    return x\n\n# solar: x=f32[8]\ndef f(x):\n    return x\n";
    assert.deepEqual(listEntries(text).map((e) => e.line), [5]);
  });
});

describe("entryAt", () => {
  it("picks the definition around the cursor, none outside", () => {
    const text = readFileSync(join(repo, "examples", "mlp.py"), "utf8");
    const entries = listEntries(text);
    const lines = text.split("\n");
    const forward = lines.findIndex((l) => l.includes("h = F.gelu(h)"));
    assert.equal(entryAt(entries, forward)?.name, "Model");
    const getInputs = lines.findIndex((l) => l.startsWith("def get_inputs"));
    assert.equal(entryAt(entries, getInputs), undefined);
  });
});
