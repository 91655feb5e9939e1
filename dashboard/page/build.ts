/**
 * Builds the dashboard's script and stylesheet into dashboard/page/dist (run by `npm install`
 * through `prepare`, and by `npm run build:page`). Pages are rendered on the server; this bundle
 * only adds copy buttons, confirmations and the photo zoom. Prints the sizes it made.
 */
import { readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";

const here = import.meta.dirname;
const dist = join(here, "dist");

rmSync(dist, { recursive: true, force: true });
await build({
  entryPoints: { main: join(here, "src/main.ts"), "main-style": join(here, "src/styles.css") },
  outdir: dist,
  bundle: true,
  format: "esm",
  platform: "browser",
  target: ["es2022", "safari16"],
  minify: true,
  legalComments: "none",
  logLevel: "warning",
  entryNames: "[name]",
});
// One stylesheet name for the pages to link.
renameSync(join(dist, "main-style.css"), join(dist, "main.css"));
rmSync(join(dist, "main-style.js"), { force: true });
for (const file of readdirSync(dist)) {
  const bytes = readFileSync(join(dist, file));
  console.log(`dashboard/page/dist/${file}: ${bytes.length} bytes, ${gzipSync(bytes).length} gzipped`);
}
