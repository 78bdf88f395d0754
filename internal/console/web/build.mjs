// Builds the console into dist/: one script and one style sheet bundled by
// esbuild (uPlot included, no CDN), and the page. `make ui` runs it after
// the type check; the Go binary embeds dist/.
import { build } from "esbuild";
import { copyFile, mkdir, readdir, rm } from "node:fs/promises";

const out = new URL("./dist/", import.meta.url);
for (const f of await readdir(out).catch(() => [])) {
  if (f !== ".gitkeep") await rm(new URL(f, out), { recursive: true });
}
await mkdir(out, { recursive: true });
await build({
  entryPoints: ["src/main.ts"],
  bundle: true,
  minify: true,
  format: "esm",
  target: "es2022",
  outfile: "dist/app.js",
  logLevel: "warning",
});
await copyFile(new URL("./src/index.html", import.meta.url), new URL("index.html", out));
