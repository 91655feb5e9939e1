import { readFileSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { REQUIRED_ANGLES } from "../../core/schemas/capture.ts";
import en from "../../capture/page/messages/en.json" with { type: "json" };
import { launchShowing, phonePage, shot } from "../helpers/browser.ts";
import { carPhotos, SUGGESTS_CLOSEUPS } from "../helpers/photos.ts";
import { startService, type TestService, withModels } from "../helpers/service.ts";
import { confirmVin, create, photograph } from "../helpers/walkaround.ts";

/**
 * The capture page's "Any damage?" step on a phone, with the models on: the camera shows a damaged
 * car (car-damage-severity 0423, a whole car the judgement model calls damaged), so the walkaround
 * photo's upload suggests close-ups; the page asks for those first, then lets the customer add one
 * of a part they pick. The screenshot for docs/capture-and-dashboard.md is written to docs/capture-closeups.png.
 */
const DOCS = join(import.meta.dirname, "../../docs");
const label = (part: string) => (en as Record<string, string>)[`part.${part}`]!;
const heading = (page: Page) => page.locator("h1");

let svc: TestService;
let key: string;
let browser: Browser;

beforeAll(async () => {
  svc = await startService(withModels);
  key = await svc.key("test");
  browser = await launchShowing(readFileSync(SUGGESTS_CLOSEUPS));
});
afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

/** Takes the photo in view, waits for its upload's answer, and goes on from the accepted photo with Next. */
async function takePhoto(page: Page, path: RegExp): Promise<{ url: string; body: any }> {
  const answer = page.waitForResponse((r) => r.request().method() === "PUT" && path.test(new URL(r.url()).pathname));
  await page.getByRole("button", { name: "Take photo" }).click();
  const response = await answer;
  expect(response.status()).toBe(200);
  await page.getByRole("button", { name: "Next", exact: true }).click();
  return { url: response.url(), body: await response.json() };
}

it("asks for the close-ups the upload suggested, each skippable, then one of a part the customer picks; none blocks submit", async () => {
  const page = await phonePage(browser);
  const { id, token, base } = await create(svc, key);
  // The walkaround is done but for the rear left corner, which the page then opens at.
  const clean = carPhotos(REQUIRED_ANGLES.length);
  const angles = REQUIRED_ANGLES.filter((a) => a !== "rear_left");
  await photograph({ base }, { angles, photos: angles.map((a) => clean[REQUIRED_ANGLES.indexOf(a)]!) });
  // Its VIN confirmed too (else the page asks for it once the steps are done).
  await confirmVin({ base });
  await page.goto(`${svc.url}/c/${token}`);
  await expect.poll(() => heading(page).textContent()).toBe("Rear left corner");
  await expect.poll(() => page.getByRole("button", { name: "Take photo" }).count()).toBe(1);

  const photo = await takePhoto(page, /\/photos\/rear_left$/);
  const suggested: { part: string }[] = photo.body.suggested_closeups;
  expect(suggested.length).toBeGreaterThan(0);
  expect(photo.body.quality.problems).toEqual([]);

  // Guided: the first suggestion, in words.
  await expect.poll(() => heading(page).textContent(), { timeout: 10_000 }).toBe("Any damage?");
  const first = suggested[0]!.part;
  await expect
    .poll(() => page.locator(".suggestion").textContent())
    .toBe(`We may have spotted damage on the ${label(first).toLowerCase()} — take a close-up?`);
  const guided = await page.screenshot();

  await page.getByRole("button", { name: "Take a close-up" }).click();
  await expect.poll(() => heading(page).textContent()).toBe(`Close-up: ${label(first)}`);
  await expect.poll(() => page.locator("video.live").evaluate((v: any) => !v.paused && v.isConnected)).toBe(true);
  const camera = await page.screenshot();
  const closeup = await takePhoto(page, /\/closeups\/1$/);
  expect(new URL(closeup.url).searchParams.get("part")).toBe(first);
  expect(closeup.body).toMatchObject({ angle: "closeup", part: first });

  // The next suggestion, skipped; then the list, and a close-up of a part picked from it.
  await expect.poll(() => page.getByRole("status").textContent()).toBe("Close-up saved.");
  for (const { part } of suggested.slice(1)) {
    if (part === first) continue;
    await expect.poll(() => page.locator(".suggestion").textContent()).toContain(label(part).toLowerCase());
    await page.getByRole("button", { name: "Skip" }).click();
  }
  await expect.poll(() => page.locator(".closeup-list li .name").allTextContents()).toEqual([`1. ${label(first)}`]);
  await page.getByRole("button", { name: "Add a close-up" }).click();
  await expect.poll(() => page.getByRole("status").textContent()).toBe("Choose where the damage is first.");
  await page.getByLabel("Where is the damage?").selectOption("left_mirror");
  await page.getByRole("button", { name: "Add a close-up" }).click();
  await expect.poll(() => heading(page).textContent()).toBe("Close-up: Left mirror");
  const picked = await takePhoto(page, /\/closeups\/2$/);
  expect(new URL(picked.url).searchParams.get("part")).toBe("left_mirror");
  await expect
    .poll(() => page.locator(".closeup-list li .name").allTextContents())
    .toEqual([`1. ${label(first)}`, `2. ${label("left_mirror")}`]);
  const listed = await page.screenshot();
  await shot(page, "11-closeups");

  const session = await (await fetch(base)).json();
  expect(session.closeups.map((c: any) => [c.n, c.part])).toEqual([
    [1, first],
    [2, "left_mirror"],
  ]);

  // The suggestion, the close-up's camera and the list, side by side at the phone's size, for the docs.
  const views = [guided, camera, listed];
  await sharp({ create: { width: 15 + views.length * 405, height: 884, channels: 3, background: "#d1d5db" } })
    .composite(
      await Promise.all(
        views.map(async (png, i) => ({ input: await sharp(png).resize(390, 844).toBuffer(), left: 15 + i * 405, top: 20 })),
      ),
    )
    .png()
    .toFile(join(DOCS, "capture-closeups.png"));

  await page.getByRole("button", { name: "Continue" }).click();
  await expect.poll(() => heading(page).textContent()).toBe("Check your photos");
  await page.getByRole("button", { name: "Send photos" }).click();
  await expect.poll(() => heading(page).textContent()).toBe("Thank you");
  expect(["processing", "completed"]).toContain((await (await svc.api(key, `/v1/inspections/${id}`)).json()).status);
}, 120_000);
