/**
 * Builds the hosted capture page into capture/page/dist (run by `npm install` through `prepare`, and
 * by `npm run build:page`). The OCR engine and its English data are copied beside the bundle, so the
 * page fetches nothing from anywhere but the service.
 */
import { copyFileSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { build } from "esbuild";

const here = import.meta.dirname;
const dist = join(here, "dist");
const require = createRequire(import.meta.url);

rmSync(dist, { recursive: true, force: true });
await build({
  entryPoints: { main: join(here, "src/main.ts"), "main-style": join(here, "src/styles.css") },
  outdir: dist,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "browser",
  target: ["es2022", "safari16"],
  minify: true,
  sourcemap: false,
  legalComments: "none",
  // Module scripts are always read as UTF-8: the catalogues' letters go as they are, not as \u escapes.
  charset: "utf8",
  chunkNames: "chunk-[hash]",
  logLevel: "warning",
});
// One stylesheet name for the HTML to link.
copyFileSync(join(dist, "main-style.css"), join(dist, "main.css"));
rmSync(join(dist, "main-style.css"));
rmSync(join(dist, "main-style.js"), { force: true });

const ocr = join(dist, "ocr");
mkdirSync(join(ocr, "core"), { recursive: true });
mkdirSync(join(ocr, "lang"), { recursive: true });
copyFileSync(join(dirname(require.resolve("tesseract.js/package.json")), "dist/worker.min.js"), join(ocr, "worker.min.js"));
const core = dirname(require.resolve("tesseract.js-core/package.json"));
// tesseract.js picks the LSTM-only build that the browser supports (relaxed SIMD, SIMD or plain).
for (const file of readdirSync(core).filter((f) => /^tesseract-core(-simd|-relaxedsimd)?-lstm\.wasm\.js$/.test(f)))
  copyFileSync(join(core, file), join(ocr, "core", file));
copyFileSync(
  join(dirname(require.resolve("@tesseract.js-data/eng/package.json")), "4.0.0_best_int/eng.traineddata.gz"),
  join(ocr, "lang", "eng.traineddata.gz"),
);
