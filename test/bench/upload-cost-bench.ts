/**
 * `npm run bench:upload-cost`: what an ordinary exterior photo's upload costs, end to end, in one
 * service against another in the same run. Each tree named in BENCH_TREES (`name=dir,…`; by default
 * this one alone) runs as `npm start` does, with its shipped models (the parts model and the judge
 * check each exterior photo as it comes), in a child process of its own with its own data. Each
 * walkaround is a new inspection whose eight exterior angles get eight different 2 MP JPEGs (car
 * photos from the datasets stretched to 1632 × 1224, as a phone's), one after another, as one
 * customer sends them. Per tree and round: the upload's latency p50 and p95 (the client's, over
 * loopback) and the server's CPU an upload (all its threads, from /proc: libvips and onnxruntime
 * included). The trees take turns, in a rotated order each round, so that a busy machine's
 * moments fall on each alike; each round's figures are printed beside the first tree's.
 *
 * To measure what a change added, give it a worktree of the commit before it and one with the change
 * taken out (docs/benchmarks.md says how the figures there were made). Then, in this process and with
 * this tree's code, what each step that the same-vehicle and reused-photo checks added to an
 * exterior upload costs alone on the same photos: the fingerprint, the EXIF time, the paint (after
 * the parts model's run, which the angle check already made) and the index's writes (BENCH_STEPS=0
 * leaves it out). A benchmark: it prints, it asserts nothing.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { fingerprintOf, takenAt } from "../../capture/photos/fingerprint.ts";
import { ingestPhoto } from "../../capture/photos/ingest-photo.ts";
import { FsBlobStore } from "../../core/adapters/fs/fs-blob-store.ts";
import { PhotoIndex } from "../../core/operations/photo-index.ts";
import { loadConfig } from "../../core/runtime/config.ts";
import { letterboxes } from "../../inference/detection/letterbox.ts";
import { PART_THRESHOLD } from "../../inference/detection/load-models.ts";
import { OnnxDetector } from "../../inference/detection/onnx-detector.ts";
import { vehiclePaint } from "../../inference/quality/vehicle-paint.ts";
import { carPhotos } from "../helpers/photos.ts";
import { freePort, VALID_VIN } from "../helpers/service.ts";
import { percentile } from "./stats.ts";

const WALKAROUNDS = Number(process.env.BENCH_WALKAROUNDS ?? 6);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** The default inspection's eight exterior angles, written out: every tree compared must know them. */
const ANGLES = ["front", "front_left", "left", "rear_left", "rear", "rear_right", "right", "front_right"];
const root = join(import.meta.dirname, "../..");
const trees = (process.env.BENCH_TREES ?? `this tree=${root}`).split(",").map((t) => {
  const [name, dir] = t.split("=") as [string, string];
  if (!dir || !existsSync(join(dir, "bin/vehicle-inspection.ts")))
    throw new Error(`BENCH_TREES: ${t} is not name=<a checkout of this project>`);
  return { name, dir };
});

/** The kernel's clock ticks a second, the unit of /proc CPU times. */
const CLOCK_TICKS = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }));
/** CPU seconds the process has used, all its threads (utime and stime, fields 14 and 15 of /proc/<pid>/stat). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

const photos = await Promise.all(
  carPhotos(ANGLES.length).map((p) => sharp(p).resize(1632, 1224, { fit: "fill" }).jpeg({ quality: 85 }).toBuffer()),
);

type Service = { name: string; url: string; key: string; child: ChildProcess; dataDir: string };

async function start(name: string, dir: string): Promise<Service> {
  const dataDir = mkdtempSync(join(tmpdir(), "vi-bench-upload-cost-"));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: "127.0.0.1",
    PUBLIC_URL: url,
    LOG_LEVEL: "warn",
    // One customer's uploads, sent faster than a person takes photos.
    RATE_LIMIT_CAPTURE_PER_SECOND: "100000",
  };
  // The tree's own command makes its key, in its own store's format.
  const key = execFileSync(process.execPath, ["bin/vehicle-inspection.ts", "keys", "create", "--env", "test", "--account", "bench"], {
    cwd: dir,
    env,
    encoding: "utf8",
  }).trim();
  // BENCH_PROFILE_DIR: each service writes a V8 CPU profile of its main thread into <dir>/<tree> as it exits.
  const profile = process.env.BENCH_PROFILE_DIR ? ["--cpu-prof", `--cpu-prof-dir=${join(process.env.BENCH_PROFILE_DIR, name)}`] : [];
  const child = spawn(process.execPath, [...profile, "bin/vehicle-inspection.ts", "start"], {
    cwd: dir,
    env: { ...env, LOG_LEVEL: "info" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on("data", (d) => String(d).includes("vehicle inspection service started") && resolve());
    child.once("exit", (code) => reject(new Error(`${name}'s service exited (${code}) before it started`)));
  });
  child.stdout!.resume();
  return { name, url, key, child, dataDir };
}

/** One walkaround: a new inspection, its eight exterior photos one after another; each upload's latency and the server's CPU for it. */
async function walkaround(s: Service): Promise<{ ms: number[]; cpuMs: number[] }> {
  const created = await fetch(`${s.url}/v1/inspections`, {
    method: "POST",
    headers: { authorization: `Bearer ${s.key}`, "content-type": "application/json" },
    body: JSON.stringify({ vehicle: { vin: VALID_VIN } }),
  });
  const token = ((await created.json()) as { capture_url: string }).capture_url.split("/c/")[1]!;
  await (await fetch(`${s.url}/capture/v1/${token}`)).arrayBuffer();
  const ms: number[] = [];
  const cpuMs: number[] = [];
  for (const [i, angle] of ANGLES.entries()) {
    const [t0, c0] = [performance.now(), cpuSeconds(s.child.pid!)];
    const res = await fetch(`${s.url}/capture/v1/${token}/photos/${angle}`, {
      method: "PUT",
      body: photos[i]!,
      headers: { "content-type": "image/jpeg" },
    });
    await res.arrayBuffer();
    ms.push(performance.now() - t0);
    cpuMs.push((cpuSeconds(s.child.pid!) - c0) * 1000);
    if (res.status !== 200) throw new Error(`${s.name}: the ${angle} upload answered ${res.status}`);
  }
  return { ms, cpuMs };
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;

const services: Service[] = [];
process.on("exit", () => {
  for (const s of services) s.child.kill("SIGTERM");
});
try {
  for (const t of trees) services.push(await start(t.name, t.dir));
  // Warm-up: the models' sessions, sharp's first calls, each store's first directories.
  for (const s of services) await walkaround(s);
  type Figures = { p50: number; p95: number; cpu: number };
  const figures = new Map(services.map((s) => [s.name, [] as Figures[]]));
  console.log(
    `${WALKAROUNDS} walkarounds (${WALKAROUNDS * ANGLES.length} uploads of 2 MP JPEGs, ${(mean(photos.map((p) => p.length)) / 1024).toFixed(0)} KB on average) a tree a round, ${ROUNDS} rounds; Node ${process.version}\n`,
  );
  for (let round = 1; round <= ROUNDS; round++) {
    const order = services.map((_, i) => services[(i + round - 1) % services.length]!);
    const measured = new Map<string, { ms: number[]; cpuMs: number[] }>();
    for (let w = 0; w < WALKAROUNDS; w++)
      for (const s of order) {
        const { ms, cpuMs } = await walkaround(s);
        const m = measured.get(s.name) ?? { ms: [], cpuMs: [] };
        measured.set(s.name, { ms: [...m.ms, ...ms], cpuMs: [...m.cpuMs, ...cpuMs] });
      }
    for (const s of services) {
      const m = measured.get(s.name)!;
      figures.get(s.name)!.push({ p50: percentile(m.ms, 50), p95: percentile(m.ms, 95), cpu: mean(m.cpuMs) });
    }
  }
  const first = figures.get(services[0]!.name)!;
  const f = (v: number) => v.toFixed(1);
  console.log(
    `| tree | round | upload p50 ms | p95 ms | server CPU ms an upload | p50 / ${services[0]!.name} | CPU / ${services[0]!.name} |`,
  );
  console.log("|---|---:|---:|---:|---:|---:|---:|");
  for (const s of services)
    for (const [r, x] of figures.get(s.name)!.entries())
      console.log(
        `| ${s.name} | ${r + 1} | ${f(x.p50)} | ${f(x.p95)} | ${f(x.cpu)} | ${(x.p50 / first[r]!.p50).toFixed(2)} | ${(x.cpu / first[r]!.cpu).toFixed(2)} |`,
      );
  if (process.env.BENCH_STEPS !== "0") await steps();
} finally {
  for (const s of services) {
    s.child.kill("SIGTERM");
    await new Promise((r) => (s.child.exitCode === null ? s.child.once("exit", r) : r(null)));
    rmSync(s.dataDir, { recursive: true, force: true });
  }
}

/** Each added step alone, one photo at a time as uploads come: wall time p50 and the process's CPU (all threads) a photo. */
async function steps() {
  const REPEATS = 10;
  const stored = await Promise.all(photos.map(async (p) => (await ingestPhoto(p, "image/jpeg")).jpeg));
  const parts = await OnnxDetector.load(loadConfig().models.partsModel!, { fallback: PART_THRESHOLD });
  const squares = await Promise.all(stored.map(async (jpeg) => (await letterboxes(jpeg, [parts.size]))[0]!));
  const found = await Promise.all(squares.map(async (square) => (await parts.detect([square]))[0]!));
  const indexDir = mkdtempSync(join(tmpdir(), "vi-bench-upload-cost-index-"));
  const index = new PhotoIndex(new FsBlobStore(indexDir));
  const scope = { accountId: "acct_bench", livemode: false };
  const fingerprints = await Promise.all(stored.map((jpeg) => fingerprintOf(jpeg)));
  let n = 0;
  const measured: [string, (i: number) => Promise<unknown>][] = [
    ["fingerprint (fingerprintOf, of the stored JPEG)", (i) => fingerprintOf(stored[i]!)],
    ["EXIF time (takenAt, of the upload)", (i) => takenAt(photos[i]!)],
    ["paint (vehiclePaint, after the parts model)", async (i) => vehiclePaint(squares[i]!, parts.size, found[i]!)],
    [
      "index writes (PhotoIndex.add, files)",
      (i) =>
        index.add(scope, {
          ...fingerprints[i]!,
          mediaId: `med_${n++}`,
          inspectionId: "insp_bench",
          takenAt: null,
          at: Date.now(),
          paint: null,
        }),
    ],
  ];
  console.log("\n| each step alone, this process | p50 ms | CPU ms a photo |\n|---|---:|---:|");
  try {
    for (const [label, step] of measured) {
      for (let i = 0; i < photos.length; i++) await step(i); // warm-up
      const ms: number[] = [];
      const cpu0 = process.cpuUsage();
      for (let r = 0; r < REPEATS; r++)
        for (let i = 0; i < photos.length; i++) {
          const t0 = performance.now();
          await step(i);
          ms.push(performance.now() - t0);
        }
      const { user, system } = process.cpuUsage(cpu0);
      console.log(`| ${label} | ${percentile(ms, 50).toFixed(2)} | ${((user + system) / 1000 / ms.length).toFixed(2)} |`);
    }
  } finally {
    await parts.close();
    rmSync(indexDir, { recursive: true, force: true });
  }
}
