// The data browser: the znode tree, its children loaded when a node is
// opened, and the selected znode's data (text, JSON or hex), Stat and ACL;
// an administrator creates, sets and deletes znodes, with version checks.

import { createZnode, deleteZnode, fromBase64, getZnode, HTTPError, setZnode, token, type Contender, type Recipe, type Znode } from "./api";
import { fill, h } from "./dom";

const PERMS: [number, string][] = [
  [1, "r"],
  [2, "w"],
  [4, "c"],
  [8, "d"],
  [16, "a"],
];

const join = (parent: string, name: string) => (parent === "/" ? "/" + name : parent + "/" + name);
const parentOf = (p: string) => (p.lastIndexOf("/") <= 0 ? "/" : p.slice(0, p.lastIndexOf("/")));

function hex(b: Uint8Array): string {
  const lines: string[] = [];
  for (let i = 0; i < b.length; i += 16) {
    const row = [...b.slice(i, i + 16)];
    const hx = row.map((x) => x.toString(16).padStart(2, "0")).join(" ");
    const tx = row.map((x) => (x >= 32 && x < 127 ? String.fromCharCode(x) : ".")).join("");
    lines.push(`${i.toString(16).padStart(8, "0")}  ${hx.padEnd(48)}  ${tx}`);
  }
  return lines.join("\n");
}

function asText(b: Uint8Array, mode: string): string {
  const text = new TextDecoder().decode(b);
  if (mode === "hex") return hex(b);
  if (mode === "json") {
    try {
      return JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      return "(not JSON)\n" + text;
    }
  }
  return text;
}

/** What a recipe's holders and waiting are called, by kind. */
const ROLES: Record<Recipe["kind"], [string, string]> = {
  lock: ["holder", "waiting, in order"],
  "read-write lock": ["holding", "waiting, in order"],
  election: ["leader", "candidates, in order"],
  semaphore: ["leases held", ""],
  queue: ["head", "behind it, in order"],
};

function contender(c: Contender, role: string): HTMLElement {
  const owner = c.session !== "0x0" ? ` (session ${c.session})` : "";
  const mode = c.mode ? `${c.mode} ` : "";
  return h("li", { class: "mono", "data-role": role, "data-name": c.name }, `${mode}${c.name}${owner}`);
}

/** The recipe a znode's children form: who holds or leads, who waits. */
function recipeView(r: Recipe): HTMLElement {
  const [held, waiting] = ROLES[r.kind];
  return h(
    "section",
    { class: "recipe", "data-testid": "recipe", "data-kind": r.kind, "aria-label": "recipe" },
    h("h3", {}, `${r.kind} `, h("span", { class: "muted" }, `(${r.layout})`)),
    h("p", {}, held + ":"),
    h("ul", {}, ...r.holders.map((c) => contender(c, "holder"))),
    r.waiting.length ? h("p", {}, waiting + ":") : null,
    r.waiting.length ? h("ol", {}, ...r.waiting.map((c) => contender(c, "waiting"))) : null,
  );
}

const TREE_KEYS = ["ArrowDown", "ArrowUp", "Home", "End", "ArrowRight", "ArrowLeft"];

const errText = (e: unknown) => (e instanceof HTTPError ? `${e.status}: ${e.message}` : String(e));

/** The Data tab. */
export class DataBrowser {
  private treeEl = h("ul", { class: "ztree", role: "tree", "aria-label": "znodes" });
  private detail = h("section", { class: "zdetail", "aria-live": "polite" });
  private status = h("p", { class: "status", role: "status" });
  private open = new Set<string>(["/"]);
  private selected = "/";
  private mode = "text";
  private follow = false;
  private stream: EventSource | null = null;
  private streamPath = "";
  private live = false;
  private shownPath = "";
  private shownKey = "";

  constructor(el: HTMLElement, private isAdmin: () => boolean) {
    fill(el, h("div", { class: "browser" }, h("nav", { class: "treebox", "aria-label": "znode tree" }, this.treeEl), this.detail), this.status);
    this.treeEl.addEventListener("keydown", (e) => void this.treeKey(e));
    // A followed znode is re-read on each event of its watch; while the
    // watch's stream is down (it reconnects by itself), every second.
    setInterval(() => {
      if (this.follow && !this.live && !el.hidden) void this.select(this.selected, true);
    }, 1000);
  }

  async refresh(): Promise<void> {
    await this.renderTree();
    await this.select(this.selected);
  }

  private async renderTree(): Promise<void> {
    const root = await this.item("/", "/");
    fill(this.treeEl, root);
  }

  /** One tree item; its children are fetched when it is open. */
  private async item(path: string, name: string): Promise<HTMLElement> {
    const isOpen = this.open.has(path);
    const btn = h(
      "button",
      {
        class: "zname" + (path === this.selected ? " selected" : ""),
        "data-path": path,
        "aria-expanded": String(isOpen),
        "aria-current": path === this.selected ? "true" : "false",
        // One stop for Tab in the tree (the selected item); arrows move within it.
        tabindex: path === this.selected ? 0 : -1,
        onclick: () => void this.toggle(path),
      },
      h("span", { class: "twisty", "aria-hidden": "true" }, isOpen ? "▾" : "▸"),
      name,
    );
    const li = h("li", { role: "treeitem", "aria-expanded": String(isOpen) }, btn);
    if (isOpen) {
      try {
        const z = await getZnode(path);
        const children = z.children ?? [];
        if (children.length) {
          const ul = h("ul", { role: "group" });
          for (const c of children) ul.append(await this.item(join(path, c), c));
          li.append(ul);
        }
      } catch (e) {
        if (e instanceof HTTPError && e.status === 404) this.open.delete(path);
        else li.append(h("span", { class: "error" }, errText(e)));
      }
    }
    return li;
  }

  /** The tree's keys, as the ARIA tree pattern has them: Up/Down move, Right opens or enters, Left closes or leaves, Home/End. */
  private async treeKey(e: KeyboardEvent): Promise<void> {
    const items = [...this.treeEl.querySelectorAll<HTMLButtonElement>("button.zname")];
    const i = items.indexOf(document.activeElement as HTMLButtonElement);
    if (i < 0 || !TREE_KEYS.includes(e.key)) return;
    e.preventDefault(); // before any wait: the arrows would scroll the page
    const path = items[i].dataset.path ?? "/";
    const go = (b: HTMLButtonElement | undefined) => b?.focus();
    const isOpen = this.open.has(path);
    switch (e.key) {
      case "ArrowDown":
        go(items[i + 1]);
        break;
      case "ArrowUp":
        go(items[i - 1]);
        break;
      case "Home":
        go(items[0]);
        break;
      case "End":
        go(items[items.length - 1]);
        break;
      case "ArrowRight":
        if (!isOpen) await this.toggle(path);
        else if (items[i + 1]?.dataset.path?.startsWith(path === "/" ? "/" : path + "/")) go(items[i + 1]);
        break;
      case "ArrowLeft":
        if (isOpen && path !== "/") {
          this.open.delete(path);
          await this.renderTree();
          this.focusItem(path);
        } else if (path !== "/") this.focusItem(parentOf(path));
        break;
    }
  }

  private focusItem(path: string): void {
    (this.treeEl.querySelector(`button[data-path="${CSS.escape(path)}"]`) as HTMLElement | null)?.focus();
  }

  private async toggle(path: string): Promise<void> {
    if (this.open.has(path) && this.selected === path && path !== "/") this.open.delete(path);
    else this.open.add(path);
    this.selected = path;
    await this.renderTree();
    await this.select(path);
    this.focusItem(path);
  }

  /** Shows path; onlyIfChanged keeps the page (and any half-typed form) when the znode is as shown. */
  private async select(path: string, onlyIfChanged = false): Promise<void> {
    let z: Znode;
    try {
      z = await getZnode(path);
    } catch (e) {
      if (e instanceof HTTPError && e.status === 404 && path !== "/") {
        this.selected = parentOf(path);
        return this.refresh();
      }
      fill(this.detail, h("p", { class: "error" }, errText(e)));
      return;
    }
    const key = JSON.stringify([z.stat, z.data, z.children, z.data_error]);
    if (onlyIfChanged && path === this.shownPath && key === this.shownKey) return;
    this.selected = this.shownPath = path;
    this.shownKey = key;
    const data = fromBase64(z.data);
    const pre = h("pre", { class: "zdata", tabindex: 0, "aria-label": "data" }, z.data_error ? `(not readable: ${z.data_error})` : asText(data, this.mode));
    const modes = h(
      "div",
      { class: "modes", role: "radiogroup", "aria-label": "show data as" },
      ...["text", "json", "hex"].map((m) =>
        h(
          "label",
          {},
          h("input", {
            type: "radio",
            name: "mode",
            value: m,
            checked: m === this.mode,
            onchange: () => {
              this.mode = m;
              pre.textContent = z.data_error ? `(not readable: ${z.data_error})` : asText(data, m);
            },
          }),
          " " + m,
        ),
      ),
    );
    const st = z.stat;
    const stat = st
      ? h(
          "table",
          { class: "stat", "aria-label": "Stat" },
          h(
            "tbody",
            {},
            ...Object.entries({
              version: st.version,
              cversion: st.cversion,
              aversion: st.aversion,
              czxid: st.czxid,
              mzxid: st.mzxid,
              pzxid: st.pzxid,
              ctime: new Date(st.ctime).toISOString(),
              mtime: new Date(st.mtime).toISOString(),
              ephemeralOwner: st.ephemeral_owner,
              dataLength: st.data_length,
              numChildren: st.num_children,
            }).map(([k, v]) => h("tr", {}, h("th", { scope: "row" }, k), h("td", { class: "mono" }, String(v)))),
          ),
        )
      : h("p", {}, "Stat: not readable without credentials");
    const acl = z.acl_error
      ? h("p", {}, `ACL: not readable (${z.acl_error})`)
      : h(
          "ul",
          { class: "acl", "aria-label": "ACL" },
          ...z.acl.map((a) => h("li", { class: "mono" }, `${a.scheme}:${a.id} ${PERMS.map(([bit, c]) => (a.perms & bit ? c : "-")).join("")}`)),
        );
    const follow = h("label", { class: "follow", "data-follow": this.follow ? (this.live ? "live" : "polling") : "off" }, h("input", {
      type: "checkbox",
      checked: this.follow,
      onchange: (e: Event) => {
        this.follow = (e.target as HTMLInputElement).checked;
        this.watch(this.follow ? z.path : "");
      },
    }), " follow (a live watch)");
    this.followLabel = follow;
    if (this.follow) this.watch(z.path);
    fill(
      this.detail,
      h("h2", { class: "zpath mono", "data-testid": "znode-path" }, z.path),
      h("div", { class: "modes" }, modes, follow),
      z.recipe ? recipeView(z.recipe) : null,
      pre,
      h("div", { class: "meta" }, h("div", {}, h("h3", {}, "Stat"), stat), h("div", {}, h("h3", {}, "ACL"), acl)),
      this.actions(z, data),
    );
  }

  private followLabel: HTMLElement | null = null;

  /** Keeps a watch stream open on path ("" closes it): the page re-reads the znode on each of its events. */
  private watch(path: string): void {
    if (path === this.streamPath) return;
    this.stream?.close();
    this.stream = null;
    this.streamPath = path;
    this.setLive(false);
    if (!path) return;
    const es = new EventSource("api/watch?path=" + encodeURIComponent(path));
    const reread = () => {
      this.setLive(true);
      void this.select(path, true);
    };
    es.addEventListener("ready", reread);
    es.addEventListener("change", reread);
    es.onerror = () => this.setLive(false);
    this.stream = es;
  }

  private setLive(live: boolean): void {
    this.live = live;
    this.followLabel?.setAttribute("data-follow", !this.follow ? "off" : live ? "live" : "polling");
  }

  /** The administrator's forms, or a note saying how to get them. */
  private actions(z: Znode, data: Uint8Array): HTMLElement {
    if (!this.isAdmin() || !token()) {
      return h("p", { class: "note", "data-testid": "read-only" }, "Read-only: sign in as administrator (the admin token) to create, set or delete znodes.");
    }
    const version = z.stat?.version ?? -1;
    const text = h("textarea", { id: "set-data", rows: 4, "aria-label": "new data" });
    text.value = new TextDecoder().decode(data);
    const setVersion = h("input", { id: "set-version", type: "number", value: version, "aria-label": "expected version" });
    const childName = h("input", { id: "child-name", type: "text", placeholder: "name", "aria-label": "new child's name" });
    const childData = h("input", { id: "child-data", type: "text", placeholder: "data", "aria-label": "new child's data" });
    const delVersion = h("input", { id: "delete-version", type: "number", value: version, "aria-label": "version to delete" });
    const run = async (what: () => Promise<unknown>, after: string) => {
      try {
        await what();
        this.say(`done`);
        this.selected = after;
        this.open.add(parentOf(after));
        await this.refresh();
      } catch (e) {
        this.say(errText(e), true);
      }
    };
    const enc = (s: string) => new TextEncoder().encode(s);
    return h(
      "div",
      { class: "actions" },
      h(
        "form",
        { "aria-label": "set data", onsubmit: (e: Event) => (e.preventDefault(), void run(() => setZnode(z.path, enc(text.value), Number(setVersion.value)), z.path)) },
        h("h3", {}, "Set data"),
        text,
        h("label", {}, "at version ", setVersion),
        h("button", { type: "submit" }, "Set"),
      ),
      h(
        "form",
        {
          "aria-label": "create a child",
          onsubmit: (e: Event) => {
            e.preventDefault();
            const p = join(z.path, childName.value);
            void run(() => createZnode(p, enc(childData.value)), p);
          },
        },
        h("h3", {}, "Create a child"),
        childName,
        childData,
        h("button", { type: "submit" }, "Create"),
      ),
      z.path === "/"
        ? null
        : h(
            "form",
            {
              "aria-label": "delete",
              onsubmit: (e: Event) => (e.preventDefault(), void run(() => deleteZnode(z.path, Number(delVersion.value)), parentOf(z.path))),
            },
            h("h3", {}, "Delete"),
            h("label", {}, "at version ", delVersion),
            h("button", { type: "submit", class: "danger", "data-testid": "delete" }, "Delete " + z.path),
          ),
    );
  }

  private say(msg: string, error = false): void {
    this.status.textContent = msg;
    this.status.className = error ? "status error" : "status";
  }
}
