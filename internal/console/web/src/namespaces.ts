// The namespaces section of the ensemble view: each namespace's level and,
// per server, its state, last zxid, znode count and digest, with its
// health: servers at the same last zxid must hold the same digest.

import type { NamespacesStatus } from "./api";
import { fill, h } from "./dom";

const hex = (z: number) => "0x" + z.toString(16);

/** Says where servers at one last zxid disagree on a namespace's digest ("" when none do). */
function mismatch(rows: { server: number; zxid: number; digest: string }[]): string {
  const byZxid = new Map<number, { server: number; digest: string }>();
  for (const r of rows) {
    const seen = byZxid.get(r.zxid);
    if (!seen) byZxid.set(r.zxid, r);
    else if (seen.digest !== r.digest) return `digest differs at zxid ${hex(r.zxid)}: server ${seen.server} ${seen.digest}, server ${r.server} ${r.digest}`;
  }
  return "";
}

/** Renders every member's namespaces, one row per namespace. */
export function renderNamespaces(el: HTMLElement, byServer: Record<string, NamespacesStatus>): void {
  const servers = Object.values(byServer).sort((a, b) => a.id - b.id);
  const roots = servers[0]?.namespaces.map((n) => n.root) ?? [];
  const rows = roots.map((root) => {
    const per = servers.map((s) => ({ server: s.id, ns: s.namespaces.find((n) => n.root === root) }));
    const first = per.find((p) => p.ns)?.ns;
    const bad = mismatch(per.filter((p) => p.ns).map((p) => ({ server: p.server, zxid: p.ns!.last_zxid, digest: p.ns!.digest })));
    const states = [...new Set(per.map((p) => p.ns?.state ?? "unknown"))];
    const health = bad || (states.length === 1 ? states[0] : states.join(", "));
    return h(
      "tr",
      { "data-root": root, "data-level": first?.level ?? "", "data-health": bad ? "diverged" : states.join(",") },
      h("th", { scope: "row", class: "mono" }, root + (first?.name === "" ? " (default)" : "")),
      h("td", {}, h("span", { class: "level " + (first?.level ?? "") }, first?.level ?? "?")),
      h("td", { class: bad ? "error" : "" }, health),
      h(
        "td",
        { class: "mono small" },
        per
          .map((p) => (p.ns ? `${p.server}: ${hex(p.ns.last_zxid)} · ${p.ns.nodes} · ${p.ns.digest.slice(0, 8)}` : `${p.server}: —`))
          .join("\n"),
      ),
    );
  });
  fill(
    el,
    h(
      "table",
      { class: "nstable", "aria-label": "namespaces" },
      h("thead", {}, h("tr", {}, ...["namespace", "level", "health", "server: last zxid · znodes · digest"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, ...rows),
    ),
  );
}
