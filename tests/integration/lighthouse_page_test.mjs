// lighthouse_page_test.mjs - the dashboard in a real browser (headless
// Chromium, tests/integration/cdp.mjs) against a real `ftc lighthouse`:
//  1. a job of two hand-made members: the tables, job selection, the kill
//     button with the right token and the refusal with a wrong one, and the
//     page with JavaScript off (the lighthouse's own server-side tables);
//  2. a live job of 3 replica groups (`ftc run` of train_ddp) with a kill
//     injected at a step: the headline says healthy at steady state, the
//     plots have points, the failure is marked with its recovery times, and
//     a kill from the page's button is a second failure the job recovers
//     from. A screenshot goes to SHOT for people to look at;
//  3. the lighthouse gone: the page says so.
//
// usage: node lighthouse_page_test.mjs FTC TRAIN_DDP SHOT.png
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Browser } from "./cdp.mjs";

const TOKEN = "page-test-secret";
const CALL_MS = 10000; // deadline of every HTTP call of the test
const [FTC, TRAIN_DDP, SHOT] = process.argv.slice(2);

// ------------------------------------------------------------ processes

const children = [];
process.on("exit", () => { for (const c of children) { c.kill("SIGKILL"); } });

function start(cmd, args, env = {}) {
  const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"],
                                   env: { ...process.env, ...env } });
  children.push(child);
  child.out = "";
  child.stdout.on("data", (d) => { child.out += d; });
  child.stderr.on("data", (d) => { child.out += d; });
  return child;
}

async function startLighthouse(dir) {
  const tokenFile = path.join(dir, "token");
  fs.writeFileSync(tokenFile, TOKEN + "\n");
  // Reads open (--public-reads), as for a dashboard on a trusted network:
  // the page's own token field is what is under test here. Closed reads
  // (the default) and the browser's Basic prompt: lighthouse_api_test.
  const child = start(FTC, ["lighthouse", "--bind", "127.0.0.1:0",
    "--token-file", tokenFile, "--public-reads", "--min-replicas", "2",
    "--heartbeat-timeout-ms", "600000"]);
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no address: " + child.out)), CALL_MS);
    const look = () => {
      const m = /serving on (\S+)/.exec(child.out);
      if (m) { clearTimeout(timer); resolve("http://" + m[1]); }
    };
    child.stdout.on("data", look);
    child.on("exit", (code) => reject(new Error("lighthouse exited " + code)));
  });
  return { child, url };
}

async function call(base, method, p, body, token = TOKEN) {
  const r = await fetch(base + p, {
    method, signal: AbortSignal.timeout(CALL_MS),
    headers: { "Authorization": "Bearer " + token,
               "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  assert.equal(r.status, 200, `${method} ${p}: ${r.status} ${text}`);
  return JSON.parse(text);
}

// Polls get() until ok(result) or deadline ms, then returns the result.
async function until(get, ok, what, deadline = 30000) {
  const end = Date.now() + deadline;
  for (;;) {
    const r = await get();
    if (ok(r)) { return r; }
    assert.ok(Date.now() < end, `waited ${deadline} ms for ${what}: ${JSON.stringify(r)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function member(id, step) {
  return { replica_id: id, address: "http://127.0.0.1:2960" + step,
           store_address: "127.0.0.1:2950" + step, step, world_size: 2 };
}

// ------------------------------------------------------------ page helpers

// Cell texts of the table in the section whose heading starts with title
// (header row dropped), or null when there is no such section.
const CELLS = `(title) => {
  const sec = [...document.querySelectorAll("section")].find((s) =>
    s.querySelector("h2") && s.querySelector("h2").textContent.startsWith(title));
  return sec ? [...sec.querySelectorAll("tr")].slice(1).map((r) =>
    [...r.querySelectorAll("td")].map((td) => td.textContent)) : null;
}`;
const cells = (page, title) => page.eval(`(${CELLS})(${JSON.stringify(title)})`);
const headline = (page) => page.eval(
  `document.querySelector("#detail .headline")?.textContent ?? ""`);
// Types a token into the page's field, as a user would (a change event).
const setToken = (page, token) => page.eval(`(() => {
  const t = document.getElementById("token");
  t.value = ${JSON.stringify(token)};
  t.dispatchEvent(new Event("change"));
})()`);
const chart = (id, expr) =>
  `(() => { const c = Chart.getChart(${JSON.stringify(id)}); return c && (${expr}); })()`;

// ------------------------------------------------------------ 1. two members

async function handMadeJob(browser, url) {
  // Two replicas join one quorum; b is behind, so it heals from a.
  const joins = await Promise.all([member("a", 5), member("b", 3)].map((m) =>
    call(url, "POST", "/v1/jobs/default/quorum", { member: m, timeout_ms: CALL_MS })));
  const q = joins[0].quorum;
  assert.equal(q.members.length, 2);
  await call(url, "PUT", "/v1/jobs/other", { min_replicas: 3 });

  const r = await fetch(url + "/", { signal: AbortSignal.timeout(CALL_MS) });
  assert.equal(r.status, 200);
  assert.match(r.headers.get("content-security-policy"), /default-src 'none'/);

  // Without JavaScript: the lighthouse's own rendering of the first job.
  const plain = await browser.newPage({ javascript: false });
  await plain.goto(url + "/");
  assert.equal(await plain.eval("typeof Chart"), "undefined");
  assert.match(await headline(plain), /^training: 2 replica groups, step 5, .*; no failure$/);
  assert.deepEqual(await cells(plain, "Members"), [
    ["a", "5", "http://127.0.0.1:29605", "127.0.0.1:29505", "2"],
    ["b", "3", "http://127.0.0.1:29603", "127.0.0.1:29503", "2"]]);
  assert.deepEqual(await plain.eval(
    `[...document.querySelectorAll("#jobs a")].map((a) => a.getAttribute("href"))`),
    ["?job=default", "?job=other"]);
  await plain.goto(url + "/?job=other");
  assert.equal(await headline(plain), "waiting for the first quorum");

  const page = await browser.newPage();
  await page.goto(url + "/");
  await page.waitFor(`document.querySelector("#detail h2")?.textContent.startsWith("Job default — quorum")`,
                     "the script's rendering");
  assert.equal(await page.eval(`document.getElementById("err").textContent`), "");
  assert.match(await page.eval(`document.querySelector("#detail h2").textContent`),
    new RegExp(`^Job default — quorum ${q.epoch}\\.${q.counter} \\(2 members, ` +
               `formed [\\d.]+ s ago, max step 5\\)$`));
  assert.match(await page.eval(`document.querySelector("#jobs .sel").textContent`),
    new RegExp(`^default quorum ${q.epoch}\\.${q.counter} · 2 members · 2 healthy · `));
  assert.equal(await page.eval(`document.querySelector("#detail .reason").textContent`),
               "next quorum: no replica group is waiting for one");
  const members = await cells(page, "Members");
  assert.deepEqual(members.map((c) => [c[0], c[1], c[2], c[3], c[4], c[6]]), [
    ["a", "5", "http://127.0.0.1:29605", "127.0.0.1:29505", "2", ""],
    ["b", "3", "http://127.0.0.1:29603", "127.0.0.1:29503", "2", "heals from a"]]);
  assert.deepEqual(await page.eval(`[...document.querySelectorAll("#detail tr")].slice(1)
    .map((r) => r.children[1].className)`), ["", "behind"]);
  assert.equal(await page.eval(`document.querySelectorAll("button.kill").length`), 0,
               "no kill without a token");
  assert.deepEqual((await cells(page, "Heartbeats")).map((c) => c[0]), ["a", "b"]);
  assert.deepEqual((await cells(page, "Recent quorum changes")).map((c) => c.slice(0, 3)),
                   [[`${q.epoch}.${q.counter}`, "first", "2"]]);
  // The lag plot: b is 2 steps behind a.
  assert.deepEqual(await page.eval(chart("chart-lag",
    `[c.data.labels, c.data.datasets[0].data]`)), [["a", "b"], [0, 2]]);

  // Selecting the other job, and back.
  await page.eval(`document.querySelectorAll("#jobs a")[1].click()`);
  await page.waitFor(`document.querySelector("#detail h2")?.textContent === "Job other — quorum none yet"`,
                     "the other job");
  assert.equal(await headline(page), "waiting for the first quorum");
  assert.equal(await page.eval("location.search"), "?job=other");
  await page.eval(`document.querySelectorAll("#jobs a")[0].click()`);
  await page.waitFor(`document.querySelector("#detail h2")?.textContent.startsWith("Job default")`,
                     "the first job again");

  // A token typed in shows kill buttons; kill reaches the lighthouse.
  await page.eval(`window.alerts = []; window.alert = (m) => alerts.push(m);
    window.confirm = () => true;`);
  await setToken(page, TOKEN);
  await page.waitFor(`document.querySelectorAll("button.kill").length === 2`, "kill buttons");
  assert.equal(await page.eval(`sessionStorage.getItem("ftc_token")`), TOKEN);
  await page.eval(`document.querySelectorAll("button.kill")[1].click()`);
  // The watch long-poll answers with the next event after the quorum's.
  const w = await call(url, "GET",
    `/v1/jobs/default/watch?epoch=${q.epoch}&since=1&timeout_ms=${CALL_MS}`);
  assert.ok(w.events.some((e) => e.kind === "kill" && e.replica_id === "b"),
            "kill event for b: " + JSON.stringify(w.events));
  assert.deepEqual(await page.eval("alerts"), []);

  // A wrong token: the lighthouse refuses and the page says so.
  await setToken(page, "wrong");
  await page.eval(`document.querySelectorAll("button.kill")[0].click()`);
  await page.waitFor(`alerts.length > 0`, "the refusal");
  assert.deepEqual(await page.eval("alerts"), ["kill failed: HTTP 403"]);
  await setToken(page, "");
  return page;
}

// ------------------------------------------------------------ 2. a live job

async function liveJob(browser, page, url) {
  const host = url.replace("http://", "");
  // The hand-made job's members never heartbeat; this one's do.
  await call(url, "PUT", "/v1/jobs/live", { heartbeat_timeout_ms: 1000 });
  const run = start(FTC, ["run", "--lighthouse", host, "--job", "live",
    "--replicas", "3", "--kill-at-steps", "150", "--seed", "7", "--progress", "1",
    "--", TRAIN_DDP, "--steps", "1000000", "--step-sleep-ms", "20"],
    { FTC_TOKEN: TOKEN });
  const status = () => call(url, "GET", "/v1/jobs/live/status");
  await page.goto(url + "/?job=live");

  // Steady state: healthy in plain words, and the plots drawing it.
  await page.waitFor(`/^training: 3 replica groups, step \\d+, [\\d.]+ steps\\/s; no failure$/
    .test(document.querySelector("#detail .headline")?.textContent)`,
    "a healthy headline", 60000, `document.querySelector("#detail")?.innerText + "\\n" +
    ${JSON.stringify(run.out)}`);
  await page.waitFor(chart("chart-progress", "c.data.datasets[0].data.length >= 2"),
                     "two step rates on the progress plot");
  assert.ok(await page.eval(chart("chart-progress",
    "c.data.datasets[0].data.every((p) => p.y >= 0) && c.data.datasets[1].data.some((p) => p.y === 3)")),
    "rates and 3 replica groups plotted");
  assert.deepEqual(await page.eval(chart("chart-lag", "c.data.labels.length")), 3);
  // Each group's own counts before the kill (the groups that healed at the
  // start have reported it a few heartbeats ago).
  const before = await until(status, (s) => s.replicas.length === 3 &&
    s.replicas.every((r) => r.step >= 20 && r.healing === null), "3 groups at step 20");
  assert.equal(before.history.failures.length, 0, "the kill came too early");

  // The injected kill: marked on the plot with its recovery times, named
  // in the headline, listed in the failures table.
  await page.waitFor(`/last failure: .* lost \\(disconnect\\) .*, back after \\d+ ms$/
    .test(document.querySelector("#detail .headline")?.textContent)`,
    "the failure and its recovery in the headline", 60000);
  const s1 = await status();
  assert.equal(s1.history.failures.length, 1, JSON.stringify(s1.history));
  const f = s1.history.failures[0];
  assert.ok(f.survivors_ms !== null && f.back_ms !== null, JSON.stringify(f));
  await page.waitFor(chart("chart-progress", "c.$ftcMarks === 1"), "the failure marker drawn");
  const rows = await cells(page, "Failures");
  assert.equal(rows.length, 1);
  assert.deepEqual(rows[0].slice(1), [f.replica_id, "disconnect", String(f.step),
                                      f.survivors_ms + " ms", f.back_ms + " ms"]);

  // Per replica group, from the leaders' heartbeats: the victim's new
  // incarnation healed from the survivors, which served those bytes; the
  // page's table shows the victim's added heal.
  const group = f.replica_id.split(":")[0];
  const was = before.replicas.find((r) => r.group === group);
  const after = await until(status, (s) => {
    const v = s.replicas.find((r) => r.group === group);
    return v.incarnations === 2 && v.heals === was.heals + 1 && v.healing === null;
  }, "the victim's heal reported");
  const healed = after.replicas.find((r) => r.group === group);
  assert.ok(healed.heal_bytes > was.heal_bytes && healed.heal_seconds > was.heal_seconds &&
            healed.failures.disconnect === 1 && healed.failures.heartbeat === 0 &&
            healed.failures.kill === 0 && healed.step >= 0, JSON.stringify(healed));
  const others = after.replicas.filter((r) => r.group !== group);
  assert.equal(others.length, 2, JSON.stringify(after.replicas));
  assert.ok(others.every((r) => r.incarnations === 1 && r.failures.disconnect === 0 &&
    r.heals === before.replicas.find((b) => b.group === r.group).heals),
    JSON.stringify(others));
  const served = (reps) => reps.filter((r) => r.group !== group)
    .reduce((n, r) => n + r.served_bytes, 0);
  assert.ok(served(after.replicas) - served(before.replicas) >=
            healed.heal_bytes - was.heal_bytes, JSON.stringify([before, after]));
  await page.waitFor(`((${CELLS})("Replica groups") || []).some((r) =>
    r[0].startsWith(${JSON.stringify(group + ":")}) && r[2] === ${JSON.stringify(String(healed.heals))})`,
    "the victim's heal in the replica groups table");

  // Without JavaScript the lighthouse's own table lists it too.
  const plain = await browser.newPage({ javascript: false });
  await plain.goto(url + "/?job=live");
  const plainRows = await cells(plain, "Failures");
  assert.deepEqual(plainRows.map((r) => r.slice(1)), [[f.replica_id, "disconnect",
    String(f.step), f.survivors_ms + " ms", f.back_ms + " ms"]]);
  assert.match(plainRows[0][0], /^\d\d:\d\d:\d\d UTC$/);

  // A kill from the page with the token: a second failure, recovered too.
  await page.eval(`window.confirm = () => true`);
  await setToken(page, TOKEN);
  await page.waitFor(`document.querySelectorAll("button.kill").length === 3`, "kill buttons");
  const victim = await page.eval(`document.querySelector("#detail tr:nth-child(2) td").textContent`);
  await page.eval(`document.querySelectorAll("button.kill")[0].click()`);
  await page.waitFor(chart("chart-progress", `c.$ftc.failures.length === 2 &&
    c.$ftc.failures[1].back_ms !== null && c.$ftcMarks === 2`),
    "the page's kill marked and recovered", 60000);
  const s2 = await status();
  assert.equal(s2.history.failures[1].replica_id, victim);
  assert.equal(s2.history.failures[1].cause, "kill");
  assert.match(await headline(page), /^training: 3 replica groups, .*back after \d+ ms$/);
  await page.screenshot(SHOT);
  assert.ok(fs.statSync(SHOT).size > 10000, "a screenshot with something in it");

  run.kill("SIGTERM");
  await new Promise((resolve) => run.on("exit", resolve));
}

// ------------------------------------------------------------ the test

async function main() {
  assert.ok(SHOT, "usage: lighthouse_page_test.mjs FTC TRAIN_DDP SHOT.png");
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ftc-page-"));
  const { child, url } = await startLighthouse(dir);
  const browser = await Browser.launch();
  try {
    const page = await handMadeJob(browser, url);
    await liveJob(browser, page, url);
    // The lighthouse gone: the page shows an error instead of stale silence.
    child.kill("SIGTERM");
    await new Promise((resolve) => child.on("exit", resolve));
    await page.waitFor(`document.getElementById("err").textContent !== ""`,
                       "an error once the lighthouse is gone");
  } finally {
    await browser.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  console.log("lighthouse_page_test: ok, screenshot " + SHOT);
}

main().then(() => process.exit(0), (e) => {
  console.error(e);
  process.exit(1);
});
