import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { changeAction, configuredChip, expandPath, explicitValue, parseTarget, serverSettings, targetLabel, writeScope } from "../src/config";

const ctx = { workspaceFolder: "/ws/proj", home: "/home/me", env: { VENV: "/opt/venv" } };

describe("expandPath", () => {
  it("expands variables and ~", () => {
    assert.equal(expandPath("${workspaceFolder}/.venv/bin/python", ctx), "/ws/proj/.venv/bin/python");
    assert.equal(expandPath("~/py/bin/python", ctx), "/home/me/py/bin/python");
    assert.equal(expandPath("${env:VENV}/bin/python", ctx), "/opt/venv/bin/python");
    assert.equal(expandPath("${userHome}/x", ctx), "/home/me/x");
  });
  it("takes a relative path from the workspace folder, leaves bare names to PATH", () => {
    assert.equal(expandPath(".venv/bin/python", ctx), "/ws/proj/.venv/bin/python");
    assert.equal(expandPath("./chips/my.toml", ctx), "/ws/proj/chips/my.toml");
    assert.equal(expandPath("python3.11", ctx), "python3.11");
    assert.equal(expandPath("/usr/bin/python3", ctx), "/usr/bin/python3");
    assert.equal(expandPath("C:\\Python311\\python.exe", ctx), "C:\\Python311\\python.exe");
  });
});

describe("serverSettings", () => {
  it("forwards only what was set, dropping blanks and client-only keys", () => {
    const out = serverSettings(
      { chip: "b200", targetLatency: "", targetHz: null, verify: false, interpreter: "/x/python", pipSpec: "solar-lsp", dims: {}, entries: undefined, workers: 2 },
      ctx,
    );
    assert.deepEqual(out, { chip: "b200", verify: false, workers: 2 });
  });
  it("passes the training-step and symbolic settings as the server spells them", () => {
    assert.deepEqual(serverSettings({ mode: "train", optimizer: "sgd", targetStepsPerSecond: 4, symbolic: true, symbols: { batch_size: "B" } }, ctx), {
      mode: "train",
      optimizer: "sgd",
      targetStepsPerSecond: 4,
      symbolic: true,
      symbols: { batch_size: "B" },
    });
  });
  it("keeps false and 0 (they are values, not blanks)", () => {
    assert.deepEqual(serverSettings({ llm: false, debounce: 0 }, ctx), { llm: false, debounce: 0 });
  });
  it("lets chipFile replace chip, expanded", () => {
    assert.deepEqual(serverSettings({ chip: "h100-sxm", chipFile: "${workspaceFolder}/my-chip.toml" }, ctx), { chip: "/ws/proj/my-chip.toml" });
  });
  it("expands cacheDir and trims strings", () => {
    assert.deepEqual(serverSettings({ cacheDir: "~/.cache/solar", targetLatency: " 2ms " }, ctx), { cacheDir: "/home/me/.cache/solar", targetLatency: "2ms" });
  });
  it("passes dims and entries through when not empty", () => {
    const out = serverSettings({ dims: { B: 8 }, entries: { f: "x=f32[B,4]" } }, ctx);
    assert.deepEqual(out, { dims: { B: 8 }, entries: { f: "x=f32[B,4]" } });
  });
  it("sends nothing when nothing is set, so pyproject's [tool.solar] is not overridden", () => {
    assert.deepEqual(serverSettings({}, ctx), {});
  });
});

describe("parseTarget", () => {
  it("reads latencies and rates", () => {
    assert.deepEqual(parseTarget("2ms"), { targetLatency: "2ms", targetHz: undefined });
    assert.deepEqual(parseTarget(" 500 us "), { targetLatency: "500us", targetHz: undefined });
    assert.deepEqual(parseTarget("500Hz"), { targetLatency: undefined, targetHz: 500 });
    assert.deepEqual(parseTarget("2kHz"), { targetLatency: undefined, targetHz: 2000 });
    assert.deepEqual(parseTarget(""), { targetLatency: undefined, targetHz: undefined });
  });
  it("refuses bare numbers, zero and junk", () => {
    for (const bad of ["500", "0ms", "0Hz", "fast", "2 parsecs"]) {
      assert.ok("error" in parseTarget(bad), bad);
    }
  });
  it("agrees with the server's latency grammar on what it accepts", () => {
    // solar_lsp/units.py _LAT: number, optional exponent, unit s|ms|us|µs|ns
    for (const ok of ["1e-3s", "0.5ms", "250µs", "10ns", "1s"]) {
      assert.ok(!("error" in parseTarget(ok)), ok);
    }
  });
});

describe("targetLabel, writeScope, explicitValue, changeAction", () => {
  it("labels the target, latency first as on the server", () => {
    assert.equal(targetLabel({ targetLatency: "2ms", targetHz: 500 }), "2ms");
    assert.equal(targetLabel({ targetHz: 500 }), "500 Hz");
    assert.equal(targetLabel({}), undefined);
    assert.equal(targetLabel({ mode: "train", targetStepsPerSecond: 4, targetLatency: "2ms" }), "4 steps/s");
    assert.equal(targetLabel({ targetStepsPerSecond: 4, targetLatency: "2ms" }), "2ms"); // steps/s: train mode only
  });
  it("writes where the value is set with the highest precedence", () => {
    assert.equal(writeScope({ globalValue: "a", workspaceFolderValue: "b" }, true), "folder");
    assert.equal(writeScope({ globalValue: "a", workspaceValue: "b" }, true), "workspace");
    assert.equal(writeScope({ globalValue: "a" }, true), "global");
    assert.equal(writeScope({}, true), "workspace");
    assert.equal(writeScope(undefined, false), "global");
  });
  it("reads the most specific explicit value", () => {
    assert.equal(explicitValue({ globalValue: 1, workspaceValue: 2 }), 2);
    assert.equal(explicitValue({ globalValue: 1, workspaceFolderValue: 3, workspaceValue: 2 }), 3);
    assert.equal(explicitValue({}), undefined);
  });
  it("restarts for the interpreter and workers, notifies for the rest", () => {
    const only = (k: string) => (key: string) => key === k;
    assert.equal(changeAction(only("interpreter")), "restart");
    assert.equal(changeAction(only("workers")), "restart");
    assert.equal(changeAction(only("chip")), "notify");
    assert.equal(changeAction(only("chipFile")), "notify");
    assert.equal(changeAction(only("targetHz")), "notify");
    assert.equal(changeAction(only("pipSpec")), "none");
  });
  it("names the chip file when one is set, else the chip setting (its default comes from package.json)", () => {
    const get = (values: Record<string, string>) => (key: string) => values[key];
    assert.equal(configuredChip(get({ chip: "b200", chipFile: "/ws/mine.toml" })), "/ws/mine.toml");
    assert.equal(configuredChip(get({ chip: "b200", chipFile: "" })), "b200");
    assert.equal(configuredChip(get({})), "");
  });
});
