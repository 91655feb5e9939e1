/**
 * `npm run bench:uploads`: one customer's photo uploads while another capture link sends hostile
 * ones. Customer A uploads an ordinary 2 MP JPEG, one after another; its latency p50 and p99 are
 * taken alone, then while customer B, on a few connections at once, sends SVGs (nested entities, a
 * large canvas under a blur), GIF, TIFF and PDF labelled image/jpeg or image/png, PNG labelled
 * image/jpeg, and legitimate but heavy 40 MP PNGs; and once more without the 40 MP PNGs, which the
 * service must take, to tell what the refusals cost from what decoding heavy photos does. B sends at most what one link may (the capture
 * rate limit's default), so its requests are answered, not turned away at 429. The service runs in a
 * child process as `npm start` does, without the detection models. A benchmark: it prints, it
 * asserts nothing.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import sharp from "sharp";
import { createKey } from "../../bin/commands/keys.ts";
import { loadConfig } from "../../core/runtime/config.ts";
import { EXTERIOR_ANGLES } from "../../core/schemas/capture.ts";
import { heavyPng, hostilePhotos } from "../helpers/hostile-photos.ts";
import { carPhoto } from "../helpers/photos.ts";
import { apiAt, freePort } from "../helpers/service.ts";
import { create } from "../helpers/walkaround.ts";
import { percentile } from "./stats.ts";

const UPLOADS = Number(process.env.BENCH_UPLOADS ?? 100);
const HOSTILE_CONNECTIONS = Number(process.env.BENCH_HOSTILE_CONNECTIONS ?? 4);
/** The default RATE_LIMIT_CAPTURE_PER_SECOND: what one capture link may send. */
const HOSTILE_PER_SECOND = 20;
const root = join(import.meta.dirname, "../..");

function startChild(args: string[], env: Record<string, string>, ready: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve) => child.stdout!.on("data", (d) => String(d).includes(ready) && resolve(child)));
}

const source = carPhoto(0);
const ordinary = await sharp(source).resize(1632, 1224, { fit: "fill" }).jpeg({ quality: 85 }).toBuffer();
const h = await hostilePhotos(source);
const hostile: [string, Buffer, string][] = [
  ["billion-laughs SVG as JPEG", h["billion-laughs svg"]!, "image/jpeg"],
  ["large SVG as PNG", h["large svg"]!, "image/png"],
  ["SVG as JPEG", h.svg!, "image/jpeg"],
  ["GIF as JPEG", h.gif!, "image/jpeg"],
  ["TIFF as JPEG", h.tiff!, "image/jpeg"],
  ["PDF as PNG", h.pdf!, "image/png"],
  ["PNG as JPEG", await sharp(source).png().toBuffer(), "image/jpeg"],
  ["40 MP PNG", await heavyPng(source), "image/png"],
];

const dataDir = mkdtempSync(join(tmpdir(), "vi-bench-uploads-"));
const port = await freePort();
const url = `http://127.0.0.1:${port}`;
const env = {
  DATA_DIR: dataDir,
  PORT: String(port),
  HOST: "127.0.0.1",
  PUBLIC_URL: url,
  LOG_LEVEL: "info",
  DAMAGE_MODEL: "none",
  PARTS_MODEL: "none",
  // A's sequential uploads run faster than a person takes photos; B paces itself to the default instead.
  RATE_LIMIT_CAPTURE_PER_SECOND: "100000",
};
const key = await createKey(loadConfig(env), "test", "bench");
const svc = await startChild(["bin/vehicle-inspection.ts", "start"], env, "vehicle inspection service started");
// Whatever ends this process, the service goes with it.
process.on("exit", () => svc.kill("SIGTERM"));

const put = async (token: string, angle: string, body: Buffer, type: string): Promise<number> => {
  const res = await fetch(`${url}/capture/v1/${token}/photos/${angle}`, { method: "PUT", body, headers: { "content-type": type } });
  await res.arrayBuffer();
  return res.status;
};

const [{ token: tokenA }, { token: tokenB }] = [await create(apiAt(url), key), await create(apiAt(url), key)];
await fetch(`${url}/capture/v1/${tokenA}`);
await fetch(`${url}/capture/v1/${tokenB}`);

/** A's uploads, one after another, each to the next exterior angle (a retake replaces the earlier one). */
async function customerA(count: number): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    const status = await put(tokenA, EXTERIOR_ANGLES[i % EXTERIOR_ANGLES.length]!, ordinary, "image/jpeg");
    ms.push(performance.now() - t0);
    if (status !== 200) throw new Error(`customer A's upload answered ${status}`);
  }
  return ms;
}

/** B's connections, each sending the hostile kinds in turn, together no faster than one link may. */
function customerB(kinds: typeof hostile, stop: AbortSignal): { done: Promise<void>; answers: Map<string, Map<number, number[]>> } {
  const answers = new Map<string, Map<number, number[]>>();
  const interval = (1000 * HOSTILE_CONNECTIONS) / HOSTILE_PER_SECOND;
  const connection = async (c: number) => {
    for (let i = c; !stop.aborted; i++) {
      const [label, body, type] = kinds[i % kinds.length]!;
      const t0 = performance.now();
      const status = await put(tokenB, "front", body, type).catch(() => 0);
      const took = performance.now() - t0;
      const byStatus = answers.get(label) ?? new Map<number, number[]>();
      answers.set(label, byStatus.set(status, [...(byStatus.get(status) ?? []), took]));
      await sleep(Math.max(0, interval - took));
    }
  };
  return { done: Promise.all(Array.from({ length: HOSTILE_CONNECTIONS }, (_, c) => connection(c))).then(() => {}), answers };
}

try {
  await customerA(10); // warm-up: the first sharp calls and the first blob directory
  const alone = await customerA(UPLOADS);
  const whileB = async (kinds: typeof hostile) => {
    const stop = new AbortController();
    const b = customerB(kinds, stop.signal);
    await sleep(1000); // B's first heavy requests in flight
    const ms = await customerA(UPLOADS);
    stop.abort();
    await b.done;
    return { ms, answers: b.answers };
  };
  const attacked = await whileB(hostile);
  const refusedOnly = await whileB(hostile.filter(([label]) => label !== "40 MP PNG"));

  const f = (v: number) => v.toFixed(0).padStart(6);
  console.log(
    `customer A: ${UPLOADS} sequential uploads of a ${(ordinary.length / 1024).toFixed(0)} KB 1632 × 1224 JPEG; customer B: ${HOSTILE_CONNECTIONS} connections, at most ${HOSTILE_PER_SECOND} requests/s; Node ${process.version}`,
  );
  const row = (label: string, ms: number[]) =>
    console.log(
      `| ${label} | ${f(percentile(ms, 50))} | ${f(percentile(ms, 99))} | ${(percentile(ms, 50) / percentile(alone, 50)).toFixed(2)} | ${(percentile(ms, 99) / percentile(alone, 99)).toFixed(2)} |`,
    );
  console.log("| customer A's upload | p50 ms | p99 ms | p50 / alone | p99 / alone |\n|---|---:|---:|---:|---:|");
  row("alone", alone);
  row("while B sends hostile uploads", attacked.ms);
  row("while B sends them without the 40 MP PNGs", refusedOnly.ms);
  console.log("\n| customer B's request | answers | p50 ms | max ms |\n|---|---|---:|---:|");
  for (const [label] of hostile) {
    for (const [status, ms] of attacked.answers.get(label) ?? [])
      console.log(`| ${label} | ${ms.length} × ${status || "no answer"} | ${f(percentile(ms, 50))} | ${f(Math.max(...ms))} |`);
  }
} finally {
  svc.kill("SIGTERM");
  await new Promise((r) => svc.once("exit", r));
  rmSync(dataDir, { recursive: true, force: true });
}
