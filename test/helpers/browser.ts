import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { chromium, type Browser, type BrowserContextOptions, type Page } from "playwright-core";

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
