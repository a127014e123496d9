import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ENTRIES_COMMAND, entryAt, readEntries } from "../src/entries";

/** A `solar.entries` reply as the server sends it (lines 1-based, snake_case). */
const reply = {
  entries: [
    { name: "matmul", kind: "function", frontend: "torch", line: 4, end_line: 5, pragma_line: 3 },
    { name: "Model", kind: "model", frontend: "torch", line: 8, end_line: 20, pragma_line: null },
  ],
};

describe("readEntries", () => {
  it("reads the server's entries into 0-based lines", () => {
    assert.equal(ENTRIES_COMMAND, "solar.entries");
    assert.deepEqual(readEntries(reply), {
      entries: [
        { name: "matmul", kind: "function", frontend: "torch", line: 3, endLine: 4, pragmaLine: 2 },
        { name: "Model", kind: "model", frontend: "torch", line: 7, endLine: 19, pragmaLine: undefined },
      ],
    });
  });
  it("keeps the server's reason when there are none", () => {
    assert.deepEqual(readEntries({ entries: [], error: "syntax error at line 3, col 9: expected ':'" }), {
      entries: [],
      error: "syntax error at line 3, col 9: expected ':'",
    });
  });
  it("skips malformed items and survives a reply that is not an entry list", () => {
    const odd = readEntries({ entries: [{ name: 3, line: 1 }, { name: "f", line: 0 }, null, { name: "g", line: 2 }] });
    assert.deepEqual(odd.entries.map((e) => [e.name, e.line, e.endLine]), [["g", 1, 1]]);
    assert.deepEqual(readEntries(undefined).entries, []);
    assert.match(readEntries(null).error ?? "", /no entry list/);
  });
});

describe("entryAt", () => {
  it("picks the definition around the cursor or its pragma line, none outside", () => {
    const { entries } = readEntries(reply);
    assert.equal(entryAt(entries, 2)?.name, "matmul"); // the pragma comment above the def
    assert.equal(entryAt(entries, 4)?.name, "matmul");
    assert.equal(entryAt(entries, 12)?.name, "Model");
    assert.equal(entryAt(entries, 5), undefined); // between them
    assert.equal(entryAt(entries, 25), undefined);
  });
});
