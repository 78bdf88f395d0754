// The console's JSON, as the server's package console defines it.

export interface Sample {
  t: number;
  writes: number;
  reads: number;
  p50_ms: number;
  p99_ms: number;
  fsyncs: number;
  fsync_ms: number;
  fsync_batch: number;
}

export interface Self {
  id: number;
  role: string;
  group: number;
  leader: number;
  coordinator: number;
  epoch: number;
  last_zxid: string;
  commit: string;
  applied: string;
  pending: number;
  serving: boolean;
  recovering: boolean;
  connections: number;
  sessions: number;
  znodes: number;
  down: number[];
  client: string;
  admin: string;
  load: Sample;
}

export interface Member extends Self {
  reachable: boolean;
  error?: string;
  lag: number;
}

export interface Group {
  index: number;
  members: number[];
  coordinator: number;
  edges: [number, number][];
  down: number[];
}

export interface Ensemble {
  answered_by: number;
  leader: number;
  epoch: number;
  trees: number;
  children: number;
  classic: boolean;
  cluster: string;
  members: Member[];
  groups: Group[];
  at: number;
}

export interface Stat {
  czxid: string;
  mzxid: string;
  pzxid: string;
  ctime: number;
  mtime: number;
  version: number;
  cversion: number;
  aversion: number;
  ephemeral_owner: string;
  data_length: number;
  num_children: number;
}

export interface ACL {
  perms: number;
  scheme: string;
  id: string;
}

export interface Znode {
  path: string;
  data: string | null; // base64
  data_error?: string;
  stat?: Stat;
  acl: ACL[];
  acl_error?: string;
  children: string[];
  children_error?: string;
  recipe?: Recipe;
}

/** One server's namespaces (the metrics port's /namespaces). */
export interface NamespacesStatus {
  id: number;
  applied_zxid: number;
  namespaces: NamespaceStatus[];
}

export interface NamespaceStatus {
  name: string; // "" for the default namespace
  root: string;
  level: "strong" | "weak";
  state: string;
  last_zxid: number;
  nodes: number;
  digest: string;
}

/** A lock, election, semaphore or queue recognized in a znode's children. */
export interface Recipe {
  kind: "lock" | "read-write lock" | "election" | "semaphore" | "queue";
  layout: string;
  holders: Contender[];
  waiting: Contender[];
}

export interface Contender {
  name: string;
  seq: number;
  session: string; // "0x0" when the node is not ephemeral
  mode?: "read" | "write";
}

export interface Event {
  t: number;
  server: number;
  kind: string;
  text: string;
}

export interface Who {
  admin: boolean;
  server: number;
}

/** An answer other than 2xx, with the server's message. */
export class HTTPError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

const TOKEN_KEY = "giraffe-admin-token";

/** The admin token the user signed in with, kept for this tab only. */
export function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(t: string | null): void {
  if (t) sessionStorage.setItem(TOKEN_KEY, t);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** Calls the console's API of the server that served the page. */
export async function call<T>(method: string, path: string, body?: unknown, timeoutMs = 5000): Promise<T> {
  const headers: Record<string, string> = {};
  const t = token();
  if (t) headers["Authorization"] = "Bearer " + t;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const resp = await fetch("api/" + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
    cache: "no-store",
  });
  if (!resp.ok) throw new HTTPError(resp.status, (await resp.text()).trim() || resp.statusText);
  return (await resp.json()) as T;
}

export const getEnsemble = () => call<Ensemble>("GET", "ensemble", undefined, 2000);
export const getLoads = () => call<Record<string, Sample[]>>("GET", "loads");
export const getTimeline = () => call<Record<string, Event[]>>("GET", "timeline");
export const getNamespaces = () => call<Record<string, NamespacesStatus>>("GET", "namespaces");
export const getWho = () => call<Who>("GET", "whoami");
export const getZnode = (path: string) => call<Znode>("GET", "znode?path=" + encodeURIComponent(path));
export const createZnode = (path: string, data: Uint8Array) =>
  call<Znode>("POST", "znode", { path, data: toBase64(data), version: -1 });
export const setZnode = (path: string, data: Uint8Array, version: number) =>
  call<Znode>("PUT", "znode", { path, data: toBase64(data), version });
export const deleteZnode = (path: string, version: number) =>
  call<Znode>("DELETE", `znode?path=${encodeURIComponent(path)}&version=${version}`);

export function toBase64(b: Uint8Array): string {
  let s = "";
  for (const x of b) s += String.fromCharCode(x);
  return btoa(s);
}

export function fromBase64(s: string | null): Uint8Array {
  if (!s) return new Uint8Array();
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}
