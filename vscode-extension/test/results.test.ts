import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { classifyReply, failureMessage, rooflineHtml, shownByExtension } from "../src/results";

describe("classifyReply", () => {
  it("tells errors, SVGs and documents apart", () => {
    assert.deepEqual(classifyReply({ error: "no result for this entry yet" }), { kind: "error", message: "no result for this entry yet" });
    assert.deepEqual(classifyReply({ svg: "<svg/>" }), { kind: "svg", svg: "<svg/>" });
    assert.deepEqual(classifyReply({ uri: "file:///a.md", text: "# IR" }), { kind: "document", uri: "file:///a.md", text: "# IR" });
    assert.equal(classifyReply({ chip: "b200" }).kind, "value");
    assert.equal(classifyReply(null).kind, "value");
    assert.equal(classifyReply({ error: "" }).kind, "value");
  });
  it("words a JSON-RPC failure with the command", () => {
    assert.equal(failureMessage("solar.showRoofline", new Error("Command 'solar.showRoofline' not found")), "solar: solar.showRoofline failed: Command 'solar.showRoofline' not found");
    assert.equal(failureMessage("x", { message: "boom", code: -32603 }), "solar: x failed: boom");
  });
});

describe("rooflineHtml", () => {
  it("embeds the SVG under a CSP that allows no script", () => {
    const html = rooflineHtml('<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script><rect/></svg>', "Roofline of <Model>", "vscode-webview://x");
    const csp = /Content-Security-Policy" content="([^"]*)"/.exec(html)?.[1] ?? "";
    assert.match(csp, /default-src 'none'/);
    assert.doesNotMatch(csp, /script-src/);
    assert.ok(html.includes("<svg xmlns"));
    assert.ok(!html.includes("<?xml"), "the XML prolog is dropped inside HTML");
    assert.ok(html.includes("Roofline of &lt;Model&gt;"), "the title is escaped");
  });
  it("says so when the reply holds no SVG", () => {
    assert.match(rooflineHtml("not an svg", "t", "x"), /holds no SVG/);
  });
});

describe("shownByExtension", () => {
  it("keeps SVG views for the webview, lets the other reports open", () => {
    assert.equal(shownByExtension("file:///home/me/.cache/solar-lsp/results/views/Model-roofline.svg"), true);
    assert.equal(shownByExtension("file:///x/Model-roofline.SVG?v=1"), true);
    assert.equal(shownByExtension("file:///x/views/Model-ir.py"), false);
    assert.equal(shownByExtension("file:///x/views/Model-compare.md"), false);
  });
});
