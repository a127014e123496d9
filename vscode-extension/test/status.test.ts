import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { asServerStatus, chipLabel, statusView } from "../src/status";

const running = (status: object) => ({ kind: "running" as const, python: "/usr/bin/python3", status: asServerStatus({ chip: "h100-sxm", analyzing: 0, errors: 0, ...status }) });

describe("statusView", () => {
  it("shows the active chip and idle / analyzing n / errors", () => {
    assert.equal(statusView(running({}), "h100-sxm").text, "$(dashboard) solar: h100-sxm · idle");
    const busy = statusView(running({ chip: "b200", analyzing: 2 }), "h100-sxm");
    assert.equal(busy.text, "$(sync~spin) solar: b200 · analyzing 2");
    assert.match(busy.tooltip, /Analyzing 2 files/);
    const err = statusView(running({ errors: 1 }), "h100-sxm");
    assert.equal(err.text, "$(error) solar: h100-sxm · 1 error");
    assert.equal(err.severity, "error");
  });
  it("prefers the server's chip over the configured one once it reports", () => {
    assert.match(statusView(running({ chip: "a6000" }), "b200").text, /a6000/);
    assert.match(statusView({ kind: "running", python: "p" }, "b200").text, /b200 · idle/);
  });
  it("says why nothing runs in an untrusted workspace and links to trust", () => {
    const v = statusView({ kind: "untrusted" }, "h100-sxm");
    assert.match(v.text, /restricted/);
    assert.match(v.tooltip, /untrusted workspace/);
    assert.equal(v.command, "workbench.trust.manage");
  });
  it("offers install when solar_lsp is missing, the log when the server failed", () => {
    assert.equal(statusView({ kind: "not-installed", python: "/p", detail: "x" }, "b200").command, "solar-lsp.installServer");
    assert.equal(statusView({ kind: "failed", detail: "exit 1" }, "b200").command, "solar-lsp.showLog");
    assert.match(statusView({ kind: "no-python", python: "/nope", detail: "ENOENT" }, "b200").tooltip, /\/nope/);
  });
  it("shows a settings error from the server", () => {
    const v = statusView(running({ settings_error: "solar settings: tf32 must be conv, all or none" }), "h100-sxm");
    assert.match(v.text, /settings error/);
    assert.match(v.tooltip, /tf32 must be/);
  });
  it("names a chip file by its stem and shows the target", () => {
    assert.equal(chipLabel("/home/me/chips/my-gpu.toml"), "my-gpu");
    assert.equal(chipLabel("b200"), "b200");
    assert.match(statusView(running({ chip: "/x/my-gpu.toml" }), "h100-sxm", "2ms").tooltip, /chip my-gpu · target 2ms/);
  });
});

describe("asServerStatus", () => {
  it("rejects payloads without the fields the view reads", () => {
    assert.equal(asServerStatus({ chip: "b200" }), undefined);
    assert.equal(asServerStatus(null), undefined);
    assert.equal(asServerStatus("b200"), undefined);
    assert.ok(asServerStatus({ chip: "b200", analyzing: 0, errors: 0, jobs: 3 }));
  });
});
