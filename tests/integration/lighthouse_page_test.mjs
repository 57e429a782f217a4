// lighthouse_page_test.mjs - runs the dashboard's own JavaScript against a
// real `ftc lighthouse` and checks what it renders and what its buttons do.
//
// The page is served by the lighthouse (GET /); its inline script runs here
// in a node:vm context whose `document` is a small DOM of the page's own
// elements, and whose `fetch` goes to the lighthouse over HTTP. Nothing of
// the lighthouse is faked: two replicas join a real quorum first.
//
// usage: node lighthouse_page_test.mjs PATH/TO/ftc
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import vm from "node:vm";

const TOKEN = "page-test-secret";
const CALL_MS = 10000; // deadline of every HTTP call of the test

// ------------------------------------------------------------ a small DOM

class FakeNode {
  constructor() { this.childNodes = []; }
  get textContent() { return this.childNodes.map((c) => c.textContent).join(""); }
  set textContent(v) { this.childNodes = [new FakeText(String(v))]; }
  append(...kids) {
    for (const k of kids) {
      this.childNodes.push(k instanceof FakeNode ? k : new FakeText(String(k)));
    }
  }
  replaceChildren(...kids) { this.childNodes = []; this.append(...kids); }
  all(tag) {
    const out = [];
    for (const c of this.childNodes) {
      if (c instanceof FakeElement) {
        if (c.tagName === tag) { out.push(c); }
        out.push(...c.all(tag));
      }
    }
    return out;
  }
}

class FakeText extends FakeNode {
  constructor(data) { super(); this.data = data; }
  get textContent() { return this.data; }
}

class FakeElement extends FakeNode {
  constructor(tag) {
    super();
    this.tagName = tag.toUpperCase();
    this.attrs = {};
    this.listeners = {};
    this.onclick = null;
    this.value = "";
  }
  setAttribute(k, v) { this.attrs[k] = String(v); }
  addEventListener(type, f) { (this.listeners[type] ||= []).push(f); }
  fire(type) { for (const f of this.listeners[type] || []) { f({ type }); } }
}

// The page's elements with an id, by id, with their tag.
function pageElements(html) {
  const byId = {};
  for (const m of html.matchAll(/<(\w+)[^>]*\sid="([\w-]+)"/g)) {
    byId[m[2]] = new FakeElement(m[1]);
  }
  return byId;
}

// Rows of the table under the section whose heading starts with `title`,
// as arrays of cell texts (the header row dropped); also the row elements.
function table(root, title) {
  const sec = root.all("SECTION").find((s) =>
    s.all("H2")[0].textContent.startsWith(title));
  assert.ok(sec, `no section "${title}" in: ${root.textContent}`);
  const rows = sec.all("TR").slice(1);
  return { rows, cells: rows.map((r) => r.all("TD").map((td) => td.textContent)) };
}

// ------------------------------------------------------------ the lighthouse

async function startLighthouse(ftc, dir) {
  const tokenFile = path.join(dir, "token");
  fs.writeFileSync(tokenFile, TOKEN + "\n");
  const child = spawn(ftc, ["lighthouse", "--bind", "127.0.0.1:0",
    "--token-file", tokenFile, "--min-replicas", "2",
    "--heartbeat-timeout-ms", "600000"], { stdio: ["ignore", "pipe", "inherit"] });
  process.on("exit", () => child.kill("SIGKILL"));
  let out = "";
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no address: " + out)), CALL_MS);
    child.stdout.on("data", (d) => {
      out += d;
      const m = /serving on (\S+)/.exec(out);
      if (m) { clearTimeout(timer); resolve("http://" + m[1]); }
    });
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

function member(id, step) {
  return { replica_id: id, address: "http://127.0.0.1:2960" + step,
           store_address: "127.0.0.1:2950" + step, step, world_size: 2 };
}

// ------------------------------------------------------------ the page

async function loadPage(base) {
  const r = await fetch(base + "/", { signal: AbortSignal.timeout(CALL_MS) });
  assert.equal(r.status, 200);
  assert.match(r.headers.get("content-security-policy"), /default-src 'none'/);
  const html = await r.text();
  const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)];
  assert.equal(scripts.length, 1, "one inline script");
  const code = scripts[0][1];
  const els = pageElements(html.slice(0, scripts[0].index));
  for (const m of code.matchAll(/getElementById\("([\w-]+)"\)/g)) {
    assert.ok(els[m[1]], `the script uses #${m[1]}, which the page lacks`);
  }
  const page = { els, alerts: [], intervals: [], storage: {}, fetched: [] };
  const ctx = vm.createContext({
    Node: FakeNode,
    document: {
      getElementById: (id) => els[id] || null,
      createElement: (tag) => new FakeElement(tag),
      createTextNode: (s) => new FakeText(s),
    },
    sessionStorage: {
      getItem: (k) => (k in page.storage ? page.storage[k] : null),
      setItem: (k, v) => { page.storage[k] = String(v); },
    },
    fetch: (p, opts) => {
      assert.ok(p.startsWith("/"), `the page fetched ${p}, not its own API`);
      page.fetched.push(p);
      return fetch(base + p, { ...opts, signal: AbortSignal.timeout(CALL_MS) });
    },
    confirm: () => true,
    alert: (msg) => { page.alerts.push(msg); },
    setInterval: (f, ms) => { page.intervals.push(ms); return page.intervals.length; },
  });
  vm.runInContext(code, ctx, { filename: "lighthouse_page.html" });
  page.refresh = () => ctx.refresh();
  return page;
}

// ------------------------------------------------------------ the test

async function main() {
  const ftc = process.argv[2];
  assert.ok(ftc, "usage: lighthouse_page_test.mjs PATH/TO/ftc");
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ftc-page-"));
  const { child, url } = await startLighthouse(ftc, dir);

  // Two replicas join one quorum; b is behind, so it heals from a.
  const joins = await Promise.all([member("a", 5), member("b", 3)].map((m) =>
    call(url, "POST", "/v1/jobs/default/quorum", { member: m, timeout_ms: CALL_MS })));
  const q = joins[0].quorum;
  assert.equal(q.members.length, 2);
  await call(url, "PUT", "/v1/jobs/other", { min_replicas: 3 });

  const page = await loadPage(url);
  await page.refresh();
  const { jobs, detail, err, token } = page.els;
  assert.equal(err.textContent, "");
  assert.deepEqual(page.intervals, [1000], "polls every second");

  // The job cards: both jobs, the first selected, with its quorum.
  const cards = jobs.all("DIV");
  assert.equal(cards.length, 2);
  assert.match(cards[0].textContent, new RegExp(
    `^default quorum ${q.epoch}\\.${q.counter} · 2 members · 2 healthy · `));
  assert.equal(cards[0].attrs.class, "job sel");
  assert.match(cards[1].textContent, /^other quorum \d+\.0 · 0 members/);

  // The selected job: heading, members (b behind and healing from a).
  assert.match(detail.all("H2")[0].textContent, new RegExp(
    `^Job default — quorum ${q.epoch}\\.${q.counter} \\(2 members, ` +
    `formed [\\d.]+ s ago, max step 5\\)$`));
  // The headline in plain words; the quorum machinery's reason is calm
  // when nobody waits.
  const plain = detail.all("P").filter((e) => e.attrs.class === "headline");
  assert.equal(plain.length, 1);
  assert.match(plain[0].textContent,
    /^training: 2 replica groups, step 5, .*; no failure$/);
  const reason = detail.all("DIV").filter((e) => e.attrs.class === "reason");
  assert.equal(reason[0].textContent,
    "next quorum: no replica group is waiting for one");
  const members = table(detail, "Members");
  assert.deepEqual(members.cells.map((c) => [c[0], c[1], c[2], c[3], c[4], c[6]]), [
    ["a", "5", "http://127.0.0.1:29605", "127.0.0.1:29505", "2", ""],
    ["b", "3", "http://127.0.0.1:29603", "127.0.0.1:29503", "2", "heals from a"],
  ]);
  assert.equal(members.rows[1].all("TD")[1].attrs.class, "behind");
  assert.equal(members.rows[0].all("TD")[1].attrs.class, undefined);
  assert.equal(detail.all("BUTTON").length, 0, "no kill without a token");
  const beats = table(detail, "Heartbeats");
  assert.deepEqual(beats.cells.map((c) => c[0]), ["a", "b"]);
  for (const r of beats.rows) { assert.equal(r.all("TD")[1].attrs.class, "ok"); }
  const changes = table(detail, "Recent quorum changes").cells;
  assert.deepEqual(changes.map((c) => c.slice(0, 3)),
    [[`${q.epoch}.${q.counter}`, "first", "2"]]);

  // Clicking the other job's card selects it.
  cards[1].onclick();
  await page.refresh();
  assert.match(detail.all("H2")[0].textContent, /^Job other — quorum none yet$/);
  assert.equal(detail.all("P").filter((e) => e.attrs.class === "headline")[0]
    .textContent, "waiting for the first quorum");
  jobs.all("DIV")[0].onclick();
  await page.refresh();

  // A token typed in shows kill buttons; kill reaches the lighthouse.
  token.value = TOKEN;
  token.fire("change");
  assert.equal(page.storage.ftc_token, TOKEN);
  await page.refresh();
  const buttons = detail.all("BUTTON");
  assert.equal(buttons.length, 2);
  await buttons[1].onclick();
  assert.deepEqual(page.alerts, []);
  const w = await call(url, "GET",
    `/v1/jobs/default/watch?epoch=${q.epoch}&since=0&timeout_ms=0`);
  assert.ok(w.events.some((e) => e.kind === "kill" && e.replica_id === "b"),
            "kill event for b: " + JSON.stringify(w.events));

  // A wrong token: the lighthouse refuses and the page says so.
  token.value = "wrong";
  token.fire("change");
  await page.refresh();
  await detail.all("BUTTON")[0].onclick();
  assert.deepEqual(page.alerts, ["kill failed: HTTP 403"]);

  // The lighthouse gone: the page shows an error instead of stale silence.
  child.kill("SIGTERM");
  await new Promise((resolve) => child.on("exit", resolve));
  await page.refresh();
  assert.notEqual(err.textContent, "");
  fs.rmSync(dir, { recursive: true, force: true });
  console.log("lighthouse_page_test: ok (" + page.fetched.length + " page fetches)");
}

main().then(() => process.exit(0), (e) => {
  console.error(e);
  process.exit(1);
});
