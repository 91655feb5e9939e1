import { mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { chromium, type Browser, type BrowserContextOptions, type Page } from "playwright-core";
import { writeY4m } from "./y4m.ts";

/** Debian's Chromium, as ../shared/toolchain.md says; never a downloaded browser. */
const BASE_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export const ARTIFACTS = join(import.meta.dirname, "../../test-artifacts/capture");
mkdirSync(ARTIFACTS, { recursive: true });
/** The dashboard's screenshots, apart from the capture page's. */
export const DASHBOARD_ARTIFACTS = join(import.meta.dirname, "../../test-artifacts/dashboard");
mkdirSync(DASHBOARD_ARTIFACTS, { recursive: true });

/**
 * camera: a Y4M file played as the camera (permission granted), "refused" (a camera exists but the
 * customer says no), or "none" (no camera at all).
 */
export function launch(camera: string | "refused" | "none"): Promise<Browser> {
  const args = [...BASE_ARGS];
  if (camera === "refused") args.push("--use-fake-device-for-media-stream", "--deny-permission-prompts");
  else if (camera !== "none")
    args.push("--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream", `--use-file-for-fake-video-capture=${camera}`);
  return chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium", args });
}

/** Chromium whose camera shows `photo`, played from a Y4M file of it. */
export async function launchShowing(photo: Buffer): Promise<Browser> {
  const camera = join(mkdtempSync(join(tmpdir(), "vi-camera-")), "camera.y4m");
  await writeY4m(photo, camera);
  return launch(camera);
}

/** The page is never wider than the phone: nothing to scroll sideways, nothing cut off at the right. */
export async function fitsPhone(page: Page, view: string): Promise<void> {
  const width = await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth as number);
  expect(width, view).toBeLessThanOrEqual(PHONE.viewport!.width);
}

/** A phone: portrait, touch, a small screen. */
export const PHONE: BrowserContextOptions = {
  viewport: { width: 390, height: 844 },
  deviceScaleFactor: 2,
  isMobile: true,
  hasTouch: true,
  locale: "en-US",
};
/** A laptop's browser window. */
export const DESKTOP: BrowserContextOptions = { viewport: { width: 1280, height: 800 }, locale: "en-US" };

export async function phonePage(browser: Browser): Promise<Page> {
  return (await browser.newContext(PHONE)).newPage();
}

export async function desktopPage(browser: Browser): Promise<Page> {
  return (await browser.newContext(DESKTOP)).newPage();
}

export const shot = (page: Page, name: string, dir = ARTIFACTS) => page.screenshot({ path: join(dir, `${name}.png`), fullPage: true });

const AXE_PATH = createRequire(import.meta.url).resolve("axe-core/axe.min.js");

/**
 * axe-core's WCAG 2.0 and 2.1 A and AA rules on the page as it is now, one line a violated rule with
 * the elements it names. axe goes in through the DevTools protocol, which a page's CSP does not
 * govern, so the page is audited under its own strict policy.
 */
export async function axeViolations(page: Page): Promise<string[]> {
  const loaded = await page.evaluate(() => "axe" in globalThis);
  if (!loaded) await page.evaluate(readFileSync(AXE_PATH, "utf8"));
  const result = await page.evaluate(async () =>
    (globalThis as any).axe.run({ runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] } }),
  );
  return result.violations.map(
    (v: any) =>
      `${v.id} (${v.impact}): ${v.help}\n` +
      v.nodes.map((n: any) => `    ${n.target.join(" ")}: ${n.failureSummary.replaceAll("\n", " ")}`).join("\n"),
  );
}

/**
 * A fresh context at `options` on `browser`, whose page records what must not happen: a console
 * error, an uncaught exception, a CSP violation.
 */
export async function watchedPage(browser: Browser, options: BrowserContextOptions) {
  const context = await browser.newContext(options);
  await context.addInitScript(() =>
    (globalThis as any).document.addEventListener("securitypolicyviolation", (e: any) =>
      console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`),
    ),
  );
  context.setDefaultTimeout(15_000);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console error on ${page.url()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`uncaught on ${page.url()}: ${e.message}`));
  return { context, page, problems };
}

/** No axe violation (soft, so each page is audited), nothing wider than the window, and a screenshot in the dashboard's test-artifacts. */
export async function auditDashboardPage(page: Page, viewport: string, name: string) {
  await shot(page, `${viewport}-${name}`, DASHBOARD_ARTIFACTS);
  const widths = await page.evaluate(() => [(globalThis as any).document.documentElement.scrollWidth, (globalThis as any).innerWidth]);
  expect.soft(widths[0], `the ${viewport} ${name} page's width`).toBeLessThanOrEqual(widths[1]!);
  const violations = await axeViolations(page);
  expect.soft(violations, `axe on the ${viewport} ${name} page (${page.url()}):\n${violations.join("\n")}`).toEqual([]);
}
