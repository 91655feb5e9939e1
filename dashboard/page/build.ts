/**
 * Builds the dashboard's script and stylesheet into dashboard/page/dist (run by `npm install`
 * through `prepare`, and by `npm run build:page`). Pages are rendered on the server; this bundle
 * only adds copy buttons, confirmations and the photo zoom, and the review pages' own script and
 * stylesheet (`review`, loaded by those pages only) keys, boxes and the tally. Prints the sizes it made.
 */
import { readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";

const here = import.meta.dirname;
const dist = join(here, "dist");

rmSync(dist, { recursive: true, force: true });
await build({
  entryPoints: {
    main: join(here, "src/main.ts"),
    "main-style": join(here, "src/main.css"),
    review: join(here, "src/review.ts"),
    "review-style": join(here, "src/review.css"),
  },
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
// One name for each page's script and stylesheet (layout.eta links <name>.js and <name>.css).
for (const name of ["main", "review"]) {
  renameSync(join(dist, `${name}-style.css`), join(dist, `${name}.css`));
  rmSync(join(dist, `${name}-style.js`), { force: true });
}
for (const file of readdirSync(dist)) {
  const bytes = readFileSync(join(dist, file));
  console.log(`dashboard/page/dist/${file}: ${bytes.length} bytes, ${gzipSync(bytes).length} gzipped`);
}
