// The ensemble view: the forest as the running ensemble has it (the global
// leader's links to the groups' coordinators, then one tree per group,
// drawn from its coordinator down the links its messages take) and a
// table of every server.

import type { Ensemble, Event, Group, Member } from "./api";
import { fill, groupColor, h, s } from "./dom";

const R = 16; // node radius
const DX = 46;
const DY = 58;

interface Placed {
  id: number;
  x: number;
  y: number;
}

/** Lays out group g's tree: leaves left to right, a parent above the middle of its children. */
function layout(g: Group): { nodes: Placed[]; width: number; height: number } {
  const kids = new Map<number, number[]>();
  for (const [p, c] of g.edges) kids.set(p, [...(kids.get(p) ?? []), c]);
  const nodes: Placed[] = [];
  let next = 0;
  let depth = 0;
  const place = (id: number, d: number): number => {
    depth = Math.max(depth, d);
    const cs = kids.get(id) ?? [];
    let x: number;
    if (cs.length === 0) x = next++;
    else {
      const xs = cs.map((c) => place(c, d + 1));
      x = (xs[0] + xs[xs.length - 1]) / 2;
    }
    nodes.push({ id, x, y: d });
    return x;
  };
  const seen = new Set<number>();
  if (g.coordinator) {
    place(g.coordinator, 0);
    for (const n of nodes) seen.add(n.id);
  }
  // Members the tree does not reach (no coordinator known): a row below.
  const loose = g.members.filter((m) => !seen.has(m));
  const row = nodes.length ? depth + 1 : 0;
  for (const id of loose) nodes.push({ id, x: next++, y: row });
  const rows = nodes.reduce((m, n) => Math.max(m, n.y), 0) + 1;
  return {
    nodes: nodes.map((n) => ({ id: n.id, x: R + 8 + n.x * DX, y: R + 22 + n.y * DY })),
    width: Math.max(next, 1) * DX + 2 * R,
    height: rows * DY + 30,
  };
}

/** Draws one group's tree as an SVG figure with a caption that says the same in words. */
function groupFigure(e: Ensemble, g: Group, byID: Map<number, Member>): HTMLElement {
  const { nodes, width, height } = layout(g);
  const at = new Map(nodes.map((n) => [n.id, n]));
  const color = groupColor(g.index);
  const svg = s("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-hidden": "true" });
  for (const [p, c] of g.edges) {
    const a = at.get(p)!;
    const b = at.get(c)!;
    const down = g.down.includes(c) || !byID.get(c)?.reachable;
    svg.append(s("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y, class: down ? "edge down" : "edge", stroke: color }));
  }
  for (const n of nodes) {
    const m = byID.get(n.id);
    const up = !!m?.reachable;
    const leader = n.id === e.leader;
    const coord = n.id === g.coordinator;
    const cls = ["node", up ? "" : "unreachable", leader ? "leader" : "", coord ? "coordinator" : "", m?.recovering ? "recovering" : ""]
      .filter(Boolean)
      .join(" ");
    const gEl = s("g", { class: cls, "data-server": n.id });
    if (leader) gEl.append(s("circle", { cx: n.x, cy: n.y, r: R + 5, class: "leader-ring" }));
    gEl.append(s("circle", { cx: n.x, cy: n.y, r: R, fill: up ? color : "#fff", stroke: color }));
    gEl.append(s("text", { x: n.x, y: n.y + 4, "text-anchor": "middle", class: up ? "id" : "id dark" }, String(n.id)));
    if (leader || coord) {
      gEl.append(s("text", { x: n.x, y: n.y - R - 8, "text-anchor": "middle", class: "tag" }, leader ? "leader" : "coord."));
    }
    gEl.append(s("title", {}, describe(m, n.id, leader, coord)));
    svg.append(gEl);
  }
  const down = g.members.filter((id) => !byID.get(id)?.reachable);
  const caption =
    `Group ${g.index}: ` +
    (g.coordinator ? `coordinator ${g.coordinator}` : "no coordinator known") +
    `; members ${g.members.join(", ")}` +
    (down.length ? `; not answering ${down.join(", ")}` : "") +
    (g.down.length ? `; routed around ${g.down.join(", ")}` : "");
  return h(
    "figure",
    { class: "group", "data-group": g.index, "data-coordinator": g.coordinator, style: `border-top-color:${color}` },
    svg,
    h("figcaption", {}, caption),
  );
}

/**
 * Draws the top of the forest: the global leader and the coordinators of
 * the other groups, which its proposals reach first (each coordinator then
 * relays down its group's tree). Null in classic mode or with no leader.
 */
function leaderFigure(e: Ensemble, byID: Map<number, Member>): HTMLElement | null {
  const leaderGroup = e.groups.find((g) => g.members.includes(e.leader));
  const others = e.groups.filter((g) => g !== leaderGroup);
  if (!e.leader || e.classic || others.length === 0) return null;
  const width = Math.max(others.length, 1) * DX * 1.6 + 2 * R;
  const height = DY + 2 * R + 46;
  const lx = width / 2;
  const ly = R + 22;
  const svg = s("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-hidden": "true" });
  const spots = others.map((g, i) => ({ g, x: R + 8 + (i + 0.5) * ((width - 2 * R - 16) / others.length), y: ly + DY }));
  for (const { g, x, y } of spots) {
    if (!g.coordinator) continue;
    const down = !byID.get(g.coordinator)?.reachable;
    svg.append(s("line", { x1: lx, y1: ly, x2: x, y2: y, class: down ? "edge down" : "edge", stroke: groupColor(g.index), "data-group": g.index }));
  }
  const node = (id: number, x: number, y: number, color: string, tag: string) => {
    const up = !!byID.get(id)?.reachable;
    // Marked by data-role, not by the group figures' leader and
    // coordinator classes: each server is one node of its group's tree.
    const gEl = s("g", { class: "node" + (up ? "" : " unreachable"), "data-server": id, "data-role": tag === "leader" ? "leader" : "coordinator" });
    if (tag === "leader") gEl.append(s("circle", { cx: x, cy: y, r: R + 5, class: "leader-ring" }));
    gEl.append(s("circle", { cx: x, cy: y, r: R, fill: up ? color : "#fff", stroke: color }));
    gEl.append(s("text", { x, y: y + 4, "text-anchor": "middle", class: up ? "id" : "id dark" }, String(id)));
    gEl.append(s("text", { x, y: tag === "leader" ? y - R - 8 : y + R + 14, "text-anchor": "middle", class: "tag" }, tag));
    svg.append(gEl);
  };
  node(e.leader, lx, ly, groupColor(leaderGroup?.index ?? 0), "leader");
  for (const { g, x, y } of spots) if (g.coordinator) node(g.coordinator, x, y, groupColor(g.index), `group ${g.index}`);
  const caption =
    `The global leader ${e.leader} sends its proposals to ` +
    others.map((g) => (g.coordinator ? `group ${g.index}'s coordinator ${g.coordinator}` : `group ${g.index} (no coordinator known)`)).join(", ") +
    (leaderGroup ? `, and coordinates group ${leaderGroup.index} itself` : "");
  return h("figure", { class: "leader-links", "data-leader": e.leader }, svg, h("figcaption", {}, caption));
}

function describe(m: Member | undefined, id: number, leader: boolean, coord: boolean): string {
  if (!m || !m.reachable) return `server ${id}: not answering${m?.error ? " (" + m.error + ")" : ""}`;
  const what = leader ? "global leader" : coord ? "group coordinator" : m.role;
  return `server ${id}: ${what}, epoch ${m.epoch}, applied ${m.applied}, lag ${m.lag < 0 ? "?" : m.lag}`;
}

const fmt = (x: number, digits = 0) => (Number.isFinite(x) ? x.toFixed(digits) : "–");

/** Renders the forest and the server table into el. */
export function renderEnsemble(el: HTMLElement, e: Ensemble): void {
  const byID = new Map(e.members.map((m) => [m.id, m]));
  const forest = h("div", { class: "forest" }, leaderFigure(e, byID), ...e.groups.map((g) => groupFigure(e, g, byID)));
  const rows = e.members.map((m) => {
    const role = !m.reachable ? "unreachable" : m.id === e.leader ? "leader" : m.role;
    return h(
      "tr",
      { class: m.reachable ? "" : "unreachable", "data-server": m.id, "data-role": role },
      h("th", { scope: "row" }, String(m.id)),
      h("td", {}, h("span", { class: "swatch", style: `background:${groupColor(m.group)}` }), m.group < 0 ? "–" : String(m.group)),
      h("td", { class: "role" }, role + (m.recovering ? " (recovering)" : "") + (m.reachable && !m.serving ? " (not serving)" : "")),
      h("td", {}, m.reachable ? String(m.epoch) : "–"),
      h("td", { class: "mono" }, m.reachable ? m.last_zxid : "–"),
      h("td", { class: "mono" }, m.reachable ? m.applied : "–"),
      h("td", {}, m.lag < 0 ? "–" : String(m.lag)),
      h("td", {}, m.reachable ? String(m.connections) : "–"),
      h("td", {}, m.reachable ? String(m.sessions) : "–"),
      h("td", {}, m.reachable ? String(m.load.writes) : "–"),
      h("td", {}, m.reachable ? String(m.load.reads) : "–"),
      h("td", {}, m.reachable ? fmt(m.load.p99_ms, 2) : "–"),
      h("td", {}, m.reachable && m.load.fsyncs ? fmt(m.load.fsync_ms, 2) : "–"),
      h("td", {}, m.admin ? h("a", { href: `http://${m.admin}/ui/` }, "console") : "–"),
    );
  });
  const head = ["server", "group", "role", "epoch", "last zxid", "applied", "lag", "conns", "sessions", "writes/s", "reads/s", "p99 ms", "fsync ms", ""];
  const table = h(
    "div",
    { class: "scroll" },
    h(
      "table",
      { class: "servers" },
      h("caption", {}, "Servers, as each reports itself (the last second's load)"),
      h("thead", {}, h("tr", {}, ...head.map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, ...rows),
    ),
  );
  fill(el, forest, table);
}

/**
 * Renders the members' events as one timeline, newest first: the same
 * change noticed by several servers is one line, at the first notice,
 * naming who noticed.
 */
export function renderTimeline(el: HTMLElement, byServer: Record<string, Event[]>): void {
  const merged = new Map<string, { t: number; kind: string; text: string; servers: number[] }>();
  for (const evs of Object.values(byServer)) {
    for (const e of evs) {
      // A change is the same one when noticed within 5 s.
      const key = `${e.kind}|${e.text}|${Math.floor(e.t / 5000)}`;
      const m = merged.get(key);
      if (!m) merged.set(key, { t: e.t, kind: e.kind, text: e.text, servers: [e.server] });
      else {
        m.t = Math.min(m.t, e.t);
        if (!m.servers.includes(e.server)) m.servers.push(e.server);
      }
    }
  }
  const rows = [...merged.values()].sort((a, b) => b.t - a.t).slice(0, 40);
  if (!rows.length) {
    fill(el, h("li", { class: "muted" }, "No elections or membership changes since the servers started."));
    return;
  }
  fill(
    el,
    ...rows.map((r) =>
      h(
        "li",
        { class: "event " + r.kind, "data-kind": r.kind },
        h("time", { datetime: new Date(r.t).toISOString() }, new Date(r.t).toLocaleTimeString()),
        " ",
        h("span", { class: "kind" }, r.kind),
        " ",
        r.text,
        r.kind === "role" ? "" : h("span", { class: "muted" }, ` (seen by ${r.servers.sort((a, b) => a - b).join(", ")})`),
      ),
    ),
  );
}
