import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";

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
export async function phonePage(browser: Browser): Promise<Page> {
  const context = await browser.newContext({
    viewport: { width: 390, height: 844 },
    deviceScaleFactor: 2,
    isMobile: true,
    hasTouch: true,
    locale: "en-US",
  });
  return context.newPage();
}

export const shot = (page: Page, name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
