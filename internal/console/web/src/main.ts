// The Giraffe console: three tabs (the ensemble, its load, its data) over
// the JSON of the server that served the page, polled. When that server
// stops answering, the page moves to another member's console.

import "./style.css";
import { getEnsemble, getLoads, getNamespaces, getTimeline, getWho, setToken, token, type Ensemble } from "./api";
import { Charts } from "./charts";
import { DataBrowser } from "./data";
import { fill, h } from "./dom";
import { renderEnsemble, renderTimeline } from "./forest";
import { renderNamespaces } from "./namespaces";

const $ = (id: string) => document.getElementById(id)!;

let admin = false;
let last: Ensemble | null = null;
let failingSince = 0;

const tabs = ["ensemble", "load", "data"] as const;
type Tab = (typeof tabs)[number];
let current: Tab = "ensemble";

const charts = new Charts($("load"));
const browser = new DataBrowser($("data"), () => admin);

function show(tab: Tab, focus = false): void {
  current = tab;
  for (const t of tabs) {
    const b = $("tab-" + t);
    b.setAttribute("aria-selected", String(t === tab));
    b.tabIndex = t === tab ? 0 : -1;
    $(t).hidden = t !== tab;
  }
  if (focus) $("tab-" + tab).focus();
  history.replaceState(null, "", "#" + tab);
  if (tab === "load") void pollLoads();
  if (tab === "data") void browser.refresh();
}

// Tabs: arrow keys move between them, as the ARIA tabs pattern has it.
for (const t of tabs) {
  const b = $("tab-" + t);
  b.addEventListener("click", () => show(t));
  b.addEventListener("keydown", (e) => {
    const i = tabs.indexOf(t);
    if (e.key === "ArrowRight") show(tabs[(i + 1) % tabs.length], true);
    else if (e.key === "ArrowLeft") show(tabs[(i + tabs.length - 1) % tabs.length], true);
  });
}

async function refreshWho(): Promise<void> {
  try {
    admin = token() !== null && (await getWho()).admin;
  } catch {
    admin = false;
  }
  let refused = "";
  if (token() && !admin) {
    setToken(null);
    refused = "That token is not the ensemble's admin token.";
  }
  const box = $("auth");
  if (admin) {
    fill(
      box,
      h("span", { class: "badge admin", "data-testid": "admin" }, "administrator"),
      h("button", { type: "button", onclick: () => (setToken(null), void refreshWho()) }, "Sign out"),
    );
  } else {
    const input = h("input", { id: "token", type: "password", autocomplete: "off", placeholder: "admin token", "aria-label": "admin token" });
    fill(
      box,
      h(
        "form",
        {
          class: "signin",
          onsubmit: (e: Event) => {
            e.preventDefault();
            setToken(input.value.trim() || null);
            void refreshWho();
          },
        },
        input,
        h("button", { type: "submit" }, "Sign in"),
        h("span", { id: "signin-msg", class: "error", role: "alert" }, refused),
      ),
    );
  }
  if (current === "data") void browser.refresh();
}

function renderHeader(e: Ensemble): void {
  const leader = e.leader ? `server ${e.leader}` : "none";
  fill(
    $("summary"),
    h("span", {}, "leader ", h("strong", { "data-testid": "leader", "data-leader": e.leader }, leader)),
    h("span", {}, `epoch ${e.epoch}`),
    h("span", {}, e.classic ? "classic (one group)" : `forest ${e.trees}-${e.children}`),
    h("span", {}, `${e.members.filter((m) => m.reachable).length}/${e.members.length} answering`),
    h("span", { class: "muted" }, `seen by server ${e.answered_by}`),
  );
}

let polling = false;

async function pollEnsemble(): Promise<void> {
  if (polling) return; // a slow answer is not asked for twice
  polling = true;
  try {
    const e = await getEnsemble();
    last = e;
    failingSince = 0;
    $("live").className = "live ok";
    $("live").textContent = "live";
    renderHeader(e);
    renderEnsemble($("ensemble-view"), e);
  } catch (err) {
    $("live").className = "live stale";
    $("live").textContent = "not answering";
    // Only a refused connection means the server is gone: a slow or
    // failed answer comes from a server that is still there.
    const gone = err instanceof TypeError;
    if (!gone) failingSince = 0;
    else if (!failingSince) failingSince = Date.now();
    else if (Date.now() - failingSince > 1000) await moveToAnotherMember();
  } finally {
    polling = false;
  }
}

/** Opens the console of the first other member that answers. */
async function moveToAnotherMember(): Promise<void> {
  const here = location.host;
  for (const m of last?.members ?? []) {
    if (!m.admin || m.admin === here) continue;
    try {
      // An opaque answer is enough: it says the server is up.
      await fetch(`http://${m.admin}/ui/`, { mode: "no-cors", signal: AbortSignal.timeout(500) });
      location.href = `http://${m.admin}/ui/#${current}`;
      return;
    } catch {
      // Try the next.
    }
  }
}

async function pollTimeline(): Promise<void> {
  if (current !== "ensemble") return;
  try {
    renderTimeline($("events"), await getTimeline());
  } catch {
    // The ensemble poll reports the server's state.
  }
}

async function pollNamespaces(): Promise<void> {
  if (current !== "ensemble") return;
  try {
    renderNamespaces($("ns-view"), await getNamespaces());
  } catch {
    // The ensemble poll reports the server's state.
  }
}

async function pollLoads(): Promise<void> {
  if (current !== "load") return;
  try {
    charts.update(await getLoads());
  } catch {
    // The ensemble poll reports the server's state.
  }
}

const start = (location.hash.slice(1) as Tab) || "ensemble";
show(tabs.includes(start) ? start : "ensemble");
void refreshWho();
void pollEnsemble();
setInterval(() => void pollEnsemble(), 500);
setInterval(() => void pollLoads(), 2000);
void pollTimeline();
setInterval(() => void pollTimeline(), 2000);
void pollNamespaces();
setInterval(() => void pollNamespaces(), 2000);
