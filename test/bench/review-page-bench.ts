/**
 * `npm run bench:review-page`: the review page as a claims handler meets it. Starts the service as
 * its own process (with the shipped models), makes a completed inspection with findings from real
 * damaged-car photos, and in Debian's Chromium at a laptop's size, each run in a fresh browser
 * context (nothing cached), signs in, opens the review page, decides a finding and submits. Prints
 * the median and range over the runs of, from the page's own Navigation and Element Timing:
 * - opening the review page → its first byte, its DOM ready, its first photo shown (painted);
 * - clicking Submit review → the review saved (the POST answered with its redirect), the
 *   inspection page ready.
 * A benchmark, not a test: it asserts nothing. BENCH_RUNS sets the runs (default 5).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { createKey } from "../../bin/commands/keys.ts";
import { createUser } from "../../bin/commands/users.ts";
import { loadConfig } from "../../core/runtime/config.ts";
import { DESKTOP, launch } from "../helpers/browser.ts";
import { carPhotos, DAMAGE_VALID, DAMAGED_CASES } from "../helpers/photos.ts";
import { startServiceProcess } from "../helpers/service-process.ts";
import { apiAt, freePort } from "../helpers/service.ts";
import { create, walkaround } from "../helpers/walkaround.ts";
import { median } from "./stats.ts";

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const EMAIL = "bench@acme.test";
const PASSWORD = "a long enough bench password";

const dataDir = mkdtempSync(join(tmpdir(), "vi-bench-review-"));
const port = await freePort();
const url = `http://127.0.0.1:${port}`;
const env = { DATA_DIR: dataDir, PORT: String(port), HOST: "127.0.0.1", PUBLIC_URL: url, CONTROLLER_POLL_MS: "100" };
const service = await startServiceProcess(env);
const browser = await launch("none");
try {
  const config = loadConfig(env);
  const key = await createKey(config, "test", "acme");
  await createUser(config, EMAIL, "acme", PASSWORD);
  const id = await completedInspection(key);
  const report = await (await fetch(`${url}/v1/inspections/${id}/report`, { headers: { authorization: `Bearer ${key}` } })).json();
  console.log(`inspection ${id}: ${report.photos.length} photos, ${report.findings.length} findings (review ${report.review.status})`);

  const open: Record<string, number>[] = [];
  const submit: Record<string, number>[] = [];
  for (let run = 0; run < RUNS; run++) {
    const context = await browser.newContext(DESKTOP);
    const page = await context.newPage();
    await signIn(page);
    await page.goto(`${url}/dashboard/test/inspections/${id}/review`);
    open.push(await openTimes(page));
    const finding = page.locator("fieldset[data-finding]").first();
    await finding.getByRole("radio", { name: run % 2 === 0 ? "Reject" : "Confirm" }).click();
    await page.getByRole("button", { name: "Submit review" }).click();
    await page.waitForURL(`${url}/dashboard/test/inspections/${id}#review-title`, { waitUntil: "load" });
    submit.push(await submitTimes(page));
    await context.close();
  }
  console.log(`\nreview page, median (min–max) over ${RUNS} runs, each with nothing cached, Chromium at 1280×800 on loopback:`);
  for (const [label, name] of [
    ["open → first byte", "firstByte"],
    ["open → DOM ready", "domReady"],
    ["open → first photo shown", "firstPhoto"],
  ] as const)
    console.log(`  ${label.padEnd(38)} ${summary(open.map((t) => t[name]!))}`);
  for (const [label, name] of [
    ["Submit review → review saved", "saved"],
    ["Submit review → inspection page ready", "pageReady"],
  ] as const)
    console.log(`  ${label.padEnd(38)} ${summary(submit.map((t) => t[name]!))}`);
} finally {
  await browser.close();
  await service.stop();
  rmSync(dataDir, { recursive: true, force: true });
}

/** An inspection with the damaged photos at their angles and the VIN left unconfirmed (so it waits for review), completed. */
async function completedInspection(key: string): Promise<string> {
  const api = apiAt(url);
  const made = await create(api, key, { reference: "bench-review" });
  const photos = carPhotos(9);
  const damaged = (angle: string, i: number) => {
    const file = DAMAGED_CASES.find((d) => d.angle === angle)?.file;
    return file ? readFileSync(join(DAMAGE_VALID, "images", file)) : photos[i]!;
  };
  const done = await walkaround(api, key, made, { photos: damaged, confirmVin: false });
  if (done.status !== "completed") throw new Error(`the inspection is ${done.status}`);
  return made.id;
}

async function signIn(page: Page) {
  await page.goto(`${url}/dashboard/sign-in`);
  await page.getByLabel("Email").fill(EMAIL);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(`${url}/dashboard/test/inspections`);
}

/** From the review page's navigation start (ms): its first byte, its DOM ready, and its first photo painted (Element Timing). */
function openTimes(page: Page): Promise<Record<string, number>> {
  return page.evaluate(async () => {
    const g = globalThis as any;
    const painted: number = await new Promise((resolve) => {
      new g.PerformanceObserver((list: any) => {
        const entry = list.getEntries().find((e: any) => e.identifier === "first-photo");
        if (entry) resolve(entry.renderTime || entry.loadTime);
      }).observe({ type: "element", buffered: true });
    });
    const nav = g.performance.getEntriesByType("navigation")[0];
    return { firstByte: nav.responseStart, domReady: nav.domContentLoadedEventEnd, firstPhoto: painted };
  });
}

/**
 * From the form's submission (the navigation's start: the POST, its 303, then the inspection page),
 * in ms: the review saved (the redirect received) and the inspection page's DOM ready.
 */
function submitTimes(page: Page): Promise<Record<string, number>> {
  return page.evaluate(() => {
    const nav = (globalThis as any).performance.getEntriesByType("navigation")[0];
    return { saved: nav.redirectEnd || nav.fetchStart, pageReady: nav.domContentLoadedEventEnd };
  });
}

function summary(values: number[]): string {
  return `${median(values).toFixed(0)} ms (${Math.min(...values).toFixed(0)}–${Math.max(...values).toFixed(0)})`;
}
