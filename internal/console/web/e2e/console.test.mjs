// The console in a real browser (Debian's Chromium, driven by
// playwright-core) against a real 9-server ensemble (forest 3-3) started
// with `giraffe cluster start`: the forest shows the leader and the
// coordinators the servers report, the data browser lists a znode a real
// client created, an unauthenticated user cannot delete it and an
// administrator can, the pages fit a phone, and the console follows a
// leader kill within 2 s. `make test-ui` runs it; GIRAFFE_BIN names the
// binary (built with the front end), CONSOLE_SCREENSHOTS a directory for
// screenshots of the main views (`make ui-screenshots`: docs/img).

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, mkdirSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const bin = process.env.GIRAFFE_BIN;
assert.ok(bin, "GIRAFFE_BIN must name the giraffe binary (make test-ui sets it)");
const shots = process.env.CONSOLE_SCREENSHOTS || null;
const dir = mkdtempSync(join(tmpdir(), "giraffe-console-e2e-"));
const giraffe = (...args) => execFileSync(bin, args, { encoding: "utf8", timeout: 90_000 });
const status = () => JSON.parse(giraffe("cluster", "status", "--json", "--dir", dir));

/** Resolves when port p on 127.0.0.1 is free. */
const free = (p) =>
  new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen(p, "127.0.0.1", () => s.close(() => resolve(true)));
  });

/** A base port with n free ports after it, below the kernel's ephemeral ports. */
async function freeRange(n) {
  for (let tries = 0; tries < 50; tries++) {
    const base = 10000 + Math.floor(Math.random() * 22000);
    let ok = true;
    for (let p = base; p < base + n && ok; p++) ok = await free(p);
    if (ok) return base;
  }
  throw new Error(`no ${n} consecutive free ports`);
}

/** Polls f until it returns a truthy value, for at most ms. */
async function until(f, ms, what) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

let browser;
let rows;
let leader;

before(async () => {
  const base = await freeRange(9 * 4);
  giraffe("cluster", "start", "--nodes", "9", "--trees", "3", "--children", "3", "--dir", dir, "--base-port", String(base), "--wait", "60s",
    "--set", "giraffe.namespace.app=weak");
  rows = status();
  leader = rows.find((r) => r.role === "leader").id;
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  if (shots) mkdirSync(shots, { recursive: true });
});

after(async () => {
  await browser?.close();
  try {
    giraffe("cluster", "stop", "--dir", dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A page at 1280 px on server id's console (tab: a hash). */
async function open(id, tab = "ensemble", viewport = { width: 1280, height: 900 }) {
  const page = await browser.newPage({ viewport });
  // Loading a page waits for the machine, not for the console.
  page.setDefaultTimeout(20_000);
  page.setDefaultNavigationTimeout(60_000);
  await page.goto(rows.find((r) => r.id === id).console + "#" + tab);
  return page;
}

const follower = () => rows.find((r) => r.id !== leader && r.alive).id;

test("cluster status gives each server's console", () => {
  for (const r of rows) assert.match(r.console, /^http:\/\/127\.0\.0\.1:\d+\/ui\/$/);
});

test("the forest shows the leader and every group's coordinator", async () => {
  const page = await open(follower());
  // The page and `cluster status` agree on the leader and on each group's
  // coordinator (asked together until they do: a busy machine may move
  // leadership while the page loads).
  const seen = await until(
    async () => {
      const st = status();
      const l = st.find((r) => r.role === "leader" && r.serving);
      if (!l || (await page.locator(`[data-testid=leader][data-leader="${l.id}"]`).count()) !== 1) return null;
      for (let k = 0; k < 3; k++) {
        const coord = Number(await page.locator(`figure.group[data-group="${k}"]`).getAttribute("data-coordinator"));
        const r = st.find((x) => x.id === coord);
        if (!r || r.color !== k || (r.role !== "coordinator" && r.role !== "leader")) return null;
        // Each group's coordinator is marked in its drawing.
        if ((await page.locator(`figure.group[data-group="${k}"] g.node.coordinator`).count()) !== 1) return null;
      }
      // The leader's node is marked in the drawing, and its table row
      // (the page redraws every 500 ms: checked in the same pass).
      if ((await page.locator(`g.node.leader[data-server="${l.id}"]`).count()) !== 1) return null;
      // Above the groups, the leader's links to the two other groups'
      // coordinators, which its proposals reach first.
      const top = page.locator(`figure.leader-links[data-leader="${l.id}"]`);
      if ((await top.locator("line.edge").count()) !== 2 || (await top.locator('g.node[data-role="coordinator"]').count()) !== 2) return null;
      for (const c of await top.locator('g.node[data-role="coordinator"]').all()) {
        const id = Number(await c.getAttribute("data-server"));
        if (!st.find((x) => x.id === id && (x.role === "coordinator" || x.role === "leader"))) return null;
      }
      if ((await page.locator(`tr[data-server="${l.id}"]`).getAttribute("data-role")) !== "leader") return null;
      return l.id;
    },
    15_000,
    "the console's leader and coordinators those of cluster status",
  );
  leader = seen;
  assert.equal(await page.locator("figure.group").count(), 3);
  // Nine servers in the table, all answering.
  await until(async () => (await page.locator("table.servers tbody tr:not(.unreachable)").count()) === 9, 5000, "nine servers answering");
  if (shots) await page.screenshot({ path: join(shots, "console-ensemble.png"), fullPage: true });
  await page.close();
});

test("the ensemble view lists the namespaces, their level and their health on every server", async () => {
  const servers = rows.map((r) => r.address).join(",");
  giraffe("shell", servers, "create", "/app/registry", "weak data");
  const page = await open(follower());
  const app = page.locator('table.nstable tr[data-root="/app"]');
  await until(async () => (await app.getAttribute("data-health")) === "healthy", 20_000, "/app healthy");
  assert.equal(await app.getAttribute("data-level"), "weak");
  const def = page.locator('table.nstable tr[data-root="/"]');
  assert.equal(await def.getAttribute("data-level"), "strong");
  assert.equal(await def.getAttribute("data-health"), "healthy");
  // Every one of the nine servers reports the namespace.
  assert.equal((await app.locator("td.small").innerText()).split("\n").filter((l) => /^\d+: 0x/.test(l)).length, 9);
  await page.close();
});

test("the load charts plot the servers' own samples", async () => {
  const one = rows.find((r) => r.id === follower()).address;
  giraffe("bench", "--servers", one, "--workload", "mixed", "--duration", "3s", "--warmup", "1s", "--sessions", "1", "--outstanding", "16", "--quiet");
  const page = await open(follower(), "load");
  // The charts' source, every server's samples, holds the benchmark's writes.
  const writes = await page.evaluate(async () => {
    const loads = await (await fetch("api/loads")).json();
    return Object.values(loads).flat().reduce((a, s) => a + s.writes, 0);
  });
  assert.ok(writes > 0, `the servers' samples hold ${writes} writes`);
  await page.locator("figure.chart .uplot").first().waitFor();
  assert.equal(await page.locator("figure.chart .uplot").count(), 4);
  // The writes chart's legend reads a value once the cursor is on it; the series exist.
  assert.ok((await page.locator("figure.chart").first().innerText()).includes("writes/s"));
  if (shots) await page.screenshot({ path: join(shots, "console-load.png"), fullPage: true });
  await page.close();
});

test("the data browser lists a znode a real client created; only an administrator deletes it", async () => {
  const servers = rows.map((r) => r.address).join(",");
  giraffe("shell", servers, "create", "/console-e2e", '{"made":"by-giraffe-shell"}');
  const page = await open(follower(), "data");
  const node = page.locator('button[data-path="/console-e2e"]');
  await node.waitFor();
  await node.click();
  await page.locator('[data-testid=znode-path]', { hasText: "/console-e2e" }).waitFor();
  assert.match(await page.locator("pre.zdata").innerText(), /by-giraffe-shell/);
  await page.getByLabel("json").check();
  assert.match(await page.locator("pre.zdata").innerText(), /"made": "by-giraffe-shell"/);

  // Unauthenticated: no delete control, and the API refuses the delete.
  await page.locator("[data-testid=read-only]").waitFor();
  assert.equal(await page.locator("[data-testid=delete]").count(), 0);
  const refused = await page.evaluate(async () => (await fetch("api/znode?path=/console-e2e&version=-1", { method: "DELETE" })).status);
  assert.equal(refused, 401);
  assert.match(giraffe("shell", servers, "get", "/console-e2e"), /by-giraffe-shell/);
  if (shots) await page.screenshot({ path: join(shots, "console-data.png"), fullPage: true });

  // A wrong token is refused; the ensemble's admin token makes an administrator.
  await page.getByLabel("admin token").fill("not-the-token");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("alert").filter({ hasText: "not the ensemble's admin token" }).waitFor();
  const tok = readFileSync(join(dir, "admin.token"), "utf8").trim();
  await page.getByLabel("admin token").fill(tok);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator("[data-testid=admin]").waitFor();
  await page.locator('[data-testid=znode-path]', { hasText: "/console-e2e" }).waitFor();
  // A stale version is refused; the current one deletes.
  await page.locator("#delete-version").fill("7");
  await page.locator("[data-testid=delete]").click();
  await page.locator("p.status.error", { hasText: "409" }).waitFor();
  await page.locator("#delete-version").fill("0");
  await page.locator("[data-testid=delete]").click();
  await until(async () => (await page.locator('button[data-path="/console-e2e"]').count()) === 0, 5000, "the deleted znode leaves the tree");
  assert.throws(() => giraffe("shell", servers, "get", "/console-e2e"));
  await page.close();
});

/** Starts `giraffe lock` holding (or waiting for) the lock at path; resolves once it runs. */
function lockHolder(servers, path) {
  const p = spawn(bin, ["lock", "--servers", servers, path], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  p.stdout.on("data", (b) => (out += b));
  p.stderr.on("data", (b) => (out += b));
  return { proc: p, output: () => out, stop: () => new Promise((r) => (p.exitCode !== null ? r() : (p.once("exit", r), p.kill("SIGINT")))) };
}

test("the data browser shows a lock's holder and its queue, and follows the lock as it passes", async () => {
  const servers = rows.map((r) => r.address).join(",");
  const first = lockHolder(servers, "/console-lock");
  await until(async () => /sequencer|holding|acquired/i.test(first.output()), 30_000, "the first giraffe lock holding");
  const second = lockHolder(servers, "/console-lock");
  try {
    const page = await open(follower(), "data");
    const node = page.locator('button[data-path="/console-lock"]');
    await node.waitFor();
    await node.click();
    const recipe = page.locator("[data-testid=recipe][data-kind=lock]");
    await until(async () => (await recipe.locator("li[data-role=waiting]").count()) === 1, 20_000, "one contender waiting");
    assert.equal(await recipe.locator("li[data-role=holder]").count(), 1);
    const holder = await recipe.locator("li[data-role=holder]").getAttribute("data-name");
    const waiting = await recipe.locator("li[data-role=waiting]").getAttribute("data-name");
    assert.match(holder, /__lock__\d{10}$/);
    assert.match(await recipe.locator("li[data-role=holder]").innerText(), /session 0x[0-9a-f]+/);
    // Followed, the page shows the waiting contender take the lock when the holder lets go.
    await page.getByLabel("follow (a live watch)").check();
    // The page follows the lock's directory with a watch, not by polling.
    await page.locator('label.follow[data-follow="live"]').waitFor();
    await first.stop();
    await until(
      async () => (await recipe.locator("li[data-role=holder]").getAttribute("data-name")) === waiting,
      20_000,
      "the waiting contender holding",
    );
    assert.equal(await recipe.locator("li[data-role=waiting]").count(), 0);
    if (shots) await page.screenshot({ path: join(shots, "console-lock.png"), fullPage: true });
    await page.close();
  } finally {
    await first.stop();
    await second.stop();
  }
});

test("keyboard: the tabs and the tree work without a mouse", async () => {
  const page = await open(follower());
  await page.locator("#tab-ensemble").focus();
  await page.keyboard.press("ArrowRight");
  await page.keyboard.press("ArrowRight");
  assert.equal(await page.locator("#data").isVisible(), true);
  assert.equal(await page.evaluate(() => document.activeElement?.id), "tab-data");
  const zk = page.locator('button[data-path="/zookeeper"]');
  await zk.waitFor();
  await zk.focus();
  await page.keyboard.press("Enter");
  await page.locator('[data-testid=znode-path]', { hasText: "/zookeeper" }).waitFor();
  // The tree's arrows (the ARIA tree pattern), with one Tab stop in it.
  const focused = () => page.evaluate(() => document.activeElement?.getAttribute("data-path"));
  await until(async () => (await focused()) === "/zookeeper", 5000, "/zookeeper focused after opening it");
  assert.equal(await page.locator('button.zname[tabindex="0"]').count(), 1);
  await page.keyboard.press("ArrowRight");
  assert.match(await focused(), /^\/zookeeper\//, "Right on an open item enters its first child");
  await page.keyboard.press("ArrowLeft");
  assert.equal(await focused(), "/zookeeper", "Left on a child goes to its parent");
  await page.keyboard.press("ArrowLeft");
  await until(async () => (await page.locator('button[data-path^="/zookeeper/"]').count()) === 0, 5000, "Left closes /zookeeper");
  assert.equal(await focused(), "/zookeeper");
  await page.keyboard.press("Home");
  assert.equal(await focused(), "/");
  await page.keyboard.press("ArrowDown");
  assert.notEqual(await focused(), "/", "Down moves to the next item");
  await page.close();
});

test("the pages fit a phone", async () => {
  for (const tab of ["ensemble", "load", "data"]) {
    const page = await open(follower(), tab, { width: 390, height: 844 });
    await page.locator(tab === "ensemble" ? "figure.group" : tab === "load" ? "figure.chart" : "button.zname").first().waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `${tab}: the page is ${overflow} px wider than the phone`);
    if (shots && tab === "ensemble") await page.screenshot({ path: join(shots, "console-phone.png"), fullPage: true });
    await page.close();
  }
});

test("the console follows a leader kill within 2 s, and a page on the dead leader moves to another server", async (t) => {
  // A page on a follower and one on the leader, both showing the leader
  // `cluster status` reports (reopened if leadership moves meanwhile).
  let watcher, watcherOn, onLeader;
  const shows = async (page, id) => (await page.locator(`[data-testid=leader][data-leader="${id}"]`).count()) === 1;
  leader = await until(
    async () => {
      const l = status().find((r) => r.role === "leader" && r.serving)?.id;
      if (!l) return null;
      if (!watcher || watcherOn === l) {
        await watcher?.close();
        watcherOn = rows.find((r) => r.id !== l).id;
        watcher = await open(watcherOn);
      }
      if (!onLeader || !onLeader.url().startsWith(rows.find((r) => r.id === l).console)) {
        await onLeader?.close();
        onLeader = await open(l);
      }
      return (await shows(watcher, l)) && (await shows(onLeader, l)) ? l : null;
    },
    60_000,
    "pages showing the leader of cluster status",
  );
  const killed = Date.now();
  giraffe("cluster", "kill", String(leader), "--dir", dir);
  const next = await until(
    async () => {
      const l = Number(await watcher.locator("[data-testid=leader]").getAttribute("data-leader"));
      return l !== leader && l !== 0 ? l : null;
    },
    10_000,
    "a new leader on the console",
  );
  const took = Date.now() - killed;
  t.diagnostic(`leader ${leader} killed; the console showed leader ${next} after ${took} ms`);
  assert.ok(took <= 2000, `the console showed leader ${next} ${took} ms after the kill (at most 2000)`);
  // The dead leader's row changes when the console's own poll of it fails,
  // which need not come before the survivors' news of the new leader.
  await until(
    async () => (await watcher.locator(`tr[data-server="${leader}"]`).getAttribute("data-role")) === "unreachable",
    10_000,
    "the killed leader's row shown unreachable",
  );
  const gone = Date.now() - killed;
  t.diagnostic(`its row showed it unreachable after ${gone} ms`);
  assert.ok(gone <= 2000, `the console showed the killed leader unreachable ${gone} ms after the kill (at most 2000)`);
  // The timeline shows the election, as the survivors noticed it, even
  // when the survivors have moved on to another leader since.
  await watcher.locator("#events li[data-kind=leader]", { hasText: `leader ${next},` }).first().waitFor();
  // The console and cluster status come to agree on the leader (two
  // survivors may both win an epoch, one after the other).
  await until(
    async () => {
      const l = status().find((r) => r.role === "leader" && r.serving)?.id;
      return l && l !== leader && (await shows(watcher, l));
    },
    20_000,
    "the console showing the leader of cluster status",
  );
  // The page the dead leader served moves to another member's console.
  await onLeader.waitForURL((u) => !u.href.startsWith(rows.find((r) => r.id === leader).console), { timeout: 30_000 });
  // There it shows the leader the other page shows (the survivors may
  // settle on yet another leader meanwhile).
  const leaderOn = async (page) => Number(await page.locator("[data-testid=leader]").getAttribute("data-leader"));
  await until(
    async () => {
      const [a, b] = [await leaderOn(onLeader), await leaderOn(watcher)];
      return a === b && a !== 0 && a !== leader;
    },
    20_000,
    "the moved page showing the live leader",
  );
  await watcher.close();
  await onLeader.close();
});
