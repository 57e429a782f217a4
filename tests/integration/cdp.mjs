// cdp.mjs - drives a real headless Chromium through the Chrome DevTools
// Protocol over --remote-debugging-pipe (fd 3: commands to the browser,
// fd 4: its answers and events; each message is JSON ended by a NUL), so
// a test needs neither a WebSocket client nor a driver package.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const CALL_MS = 15000; // deadline of one protocol command

export class Browser {
  // Starts Debian's chromium (FTC_CHROMIUM overrides the path). Root needs
  // --no-sandbox; the profile lives in a temporary folder removed by close().
  static async launch() {
    const exe = process.env.FTC_CHROMIUM || "/usr/bin/chromium";
    assert.ok(fs.existsSync(exe), `${exe} is missing: scripts/deps.sh installs chromium`);
    const profile = fs.mkdtempSync(path.join(os.tmpdir(), "ftc-chromium-"));
    const child = spawn(exe, ["--headless=new", "--no-sandbox", "--disable-gpu",
      "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
      "--remote-debugging-pipe", `--user-data-dir=${profile}`, "about:blank"],
      // its own process group: close() ends its helpers with it
      { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"], detached: true });
    const b = new Browser(child, profile);
    await b.send("Target.setDiscoverTargets", { discover: false });
    return b;
  }

  constructor(child, profile) {
    this.child = child;
    this.profile = profile;
    this.next = 1;
    this.pending = new Map();
    this.stderr = "";
    child.stderr.on("data", (d) => { this.stderr = (this.stderr + d).slice(-4000); });
    let acc = Buffer.alloc(0);
    child.stdio[4].on("data", (d) => {
      acc = Buffer.concat([acc, d]);
      for (let end = acc.indexOf(0); end >= 0; end = acc.indexOf(0)) {
        this.onMessage(JSON.parse(acc.subarray(0, end).toString("utf8")));
        acc = acc.subarray(end + 1);
      }
    });
    child.on("exit", (code, sig) => {
      for (const p of this.pending.values()) {
        p.reject(new Error(`chromium exited (${code ?? sig}): ${this.stderr}`));
      }
      this.pending.clear();
    });
  }

  onMessage(m) {
    const p = m.id !== undefined ? this.pending.get(m.id) : undefined;
    if (!p) { return; }
    this.pending.delete(m.id);
    clearTimeout(p.timer);
    if (m.error) {
      p.reject(new Error(`${p.method}: ${m.error.message}`));
    } else {
      p.resolve(m.result);
    }
  }

  send(method, params = {}, sessionId = undefined) {
    const id = this.next++;
    const msg = JSON.stringify({ id, method, params, sessionId });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${method}: no answer in ${CALL_MS} ms`));
      }, CALL_MS);
      this.pending.set(id, { resolve, reject, timer, method });
      this.child.stdio[3].write(msg + "\0");
    });
  }

  // A new tab of width x height CSS pixels; scripts off when !javascript.
  async newPage({ width = 1280, height = 1500, javascript = true } = {}) {
    const { targetId } = await this.send("Target.createTarget", { url: "about:blank" });
    const { sessionId } = await this.send("Target.attachToTarget",
      { targetId, flatten: true });
    const page = new Page(this, sessionId);
    await page.send("Emulation.setDeviceMetricsOverride",
      { width, height, deviceScaleFactor: 1, mobile: false });
    if (!javascript) {
      await page.send("Emulation.setScriptExecutionDisabled", { value: true });
    }
    return page;
  }

  // Ends the browser and every helper process it started (they write to
  // the profile until they exit), then removes its profile.
  async close() {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolve) => this.child.on("exit", resolve));
      process.kill(-this.child.pid, "SIGKILL");
      await exited;
    }
    try {
      process.kill(-this.child.pid, "SIGKILL"); // helpers left behind
    } catch (e) {
      if (e.code !== "ESRCH") { throw e; }
    }
    fs.rmSync(this.profile, { recursive: true, force: true, maxRetries: 10,
                              retryDelay: 50 });
  }
}

export class Page {
  constructor(browser, sessionId) {
    this.browser = browser;
    this.sessionId = sessionId;
  }

  send(method, params = {}) {
    return this.browser.send(method, params, this.sessionId);
  }

  async goto(url) {
    await this.send("Page.navigate", { url });
    await this.waitFor("document.readyState === 'complete' && location.href", 
      `${url} loaded`);
  }

  // The value of a JavaScript expression in the page (awaited if a promise;
  // a thrown exception fails the test with its text).
  async eval(expr) {
    const r = await this.send("Runtime.evaluate",
      { expression: expr, awaitPromise: true, returnByValue: true });
    if (r.exceptionDetails) {
      const e = r.exceptionDetails;
      throw new Error(`page: ${expr}: ${e.exception?.description ?? e.text}`);
    }
    return r.result.value;
  }

  // Polls expr until it is truthy (and returns it) or fails after ms with
  // what was awaited and the last value seen by `show` (an expression).
  async waitFor(expr, what, ms = 30000, show = "document.body && document.body.innerText") {
    const deadline = Date.now() + ms;
    for (let delay = 20; ; delay = Math.min(delay * 2, 250)) {
      const v = await this.eval(expr);
      if (v) { return v; }
      if (Date.now() > deadline) {
        const seen = await this.eval(show).catch((e) => String(e));
        throw new Error(`timed out after ${ms} ms waiting for ${what}; page shows:\n${seen}`);
      }
      await new Promise((r) => setTimeout(r, delay));
    }
  }

  async screenshot(file) {
    const { data } = await this.send("Page.captureScreenshot",
      { format: "png", captureBeyondViewport: true });
    fs.writeFileSync(file, Buffer.from(data, "base64"));
  }
}
