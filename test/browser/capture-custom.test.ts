import { readFileSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import de from "../../capture/page/messages/de.json" with { type: "json" };
import { axeViolations, fitsPhone, launchShowing, PHONE, shot } from "../helpers/browser.ts";
import { SUGGESTS_CLOSEUPS } from "../helpers/photos.ts";
import { startService, type TestService, VALID_VIN, withModels } from "../helpers/service.ts";

/**
 * Issue 33, item 1, on a phone (Chromium at 390×844, the browser set to English): an inspection made
 * with capture { locale "de", custom steps (a corner, the dashboard, a wheel, the front seats
 * optional), close-ups guided }. The page speaks German from the first screen, asks for exactly
 * those steps with their own prompts and outlines, asks for the close-ups the corner's upload
 * suggested right after that photo, reviews and sends; axe-core finds no WCAG 2.1 A or AA violation.
 * The camera shows a damaged car (car-damage-severity 0423, a whole car the judgement model calls
 * damaged, seen from its rear left) so the upload suggests close-ups. Writes docs/capture-custom.png.
 */
const DOCS = join(import.meta.dirname, "../../docs");
const m = de as Record<string, string>;
const heading = (page: Page) => page.locator("h1");
const STEPS = [
  { angle: "rear_left", required: true },
  { angle: "dashboard", required: true },
  { angle: "wheel_rear_left", required: true },
  { angle: "interior_front", required: false },
];

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

/** Takes the photo in view, waits for its upload's answer, and goes on from the accepted photo with Next (Weiter). */
async function takePhoto(page: Page, path: RegExp): Promise<any> {
  const answer = page.waitForResponse((r) => r.request().method() === "PUT" && path.test(new URL(r.url()).pathname));
  await page.getByRole("button", { name: m["camera.shutter"], exact: true }).click();
  const response = await answer;
  expect(response.status()).toBe(200);
  await page.getByRole("button", { name: m["step.next"], exact: true }).click();
  return { url: response.url(), body: await response.json() };
}

/** A step as the page shows it: its heading, prompt and outline (the outline's shapes), in German. */
async function expectStep(page: Page, angle: string, n: number): Promise<void> {
  await expect.poll(() => heading(page).textContent(), { timeout: 15_000 }).toBe(m[`angle.${angle}`]);
  await expect.poll(() => page.getByRole("button", { name: m["camera.shutter"], exact: true }).count()).toBe(1);
  expect(await page.getByText(m[`prompt.${angle}`]!).isVisible()).toBe(true);
  expect(await page.locator(".progress .count").textContent()).toBe(`Schritt ${n} von ${STEPS.length}`);
  expect(await page.locator("svg.overlay g > *").count()).toBeGreaterThan(2);
}

it("speaks German, asks for the custom steps and the suggested close-ups at once, reviews and sends", async () => {
  const made = await (
    await svc.api(key, "/v1/inspections", {
      method: "POST",
      json: { vehicle: { vin: VALID_VIN }, capture: { steps: STEPS, closeups: "guided", locale: "de" } },
    })
  ).json();
  const page = await (await browser.newContext(PHONE)).newPage();
  await page.goto(`${svc.url}/c/${made.capture_token}`);

  // German from the first screen, though the browser prefers English; the custom steps, in order.
  await expectStep(page, "rear_left", 1);
  expect(await page.evaluate(() => (globalThis as any).document.documentElement.lang)).toBe("de");
  await page.getByText(/^Alle Schritte/).click();
  expect(await page.locator(".all-steps li").allTextContents()).toEqual([
    ...STEPS.map((s, i) => `${i + 1}. ${m[`angle.${s.angle}`]}: ${m["step.todo"]}`),
    `${m["closeups.title"]}: ${m["closeups.nav"]!.replace("{n}", "0")}`,
  ]);
  await page.getByText(/^Alle Schritte/).click();
  const corner = await page.screenshot();

  // The corner's upload suggests close-ups; guided, the page asks for them now, before the next step.
  const photo = await takePhoto(page, /\/photos\/rear_left$/);
  const suggested: { part: string }[] = photo.body.suggested_closeups;
  expect(suggested.length).toBeGreaterThan(0);
  await expect.poll(() => heading(page).textContent(), { timeout: 10_000 }).toBe(m["closeups.title"]);
  const first = suggested[0]!.part;
  const label = m[`part.${first}`]!;
  expect(await page.locator(".suggestion").textContent()).toBe(
    m["closeups.suggested"]!.replace("{part_in_sentence}", label), // German nouns keep their capital
  );
  await fitsPhone(page, "guided close-up");
  expect(await axeViolations(page)).toEqual([]);
  const guided = await page.screenshot();
  await page.getByRole("button", { name: m["closeups.take"], exact: true }).click();
  await expect.poll(() => heading(page).textContent()).toBe(m["closeup.heading"]!.replace("{part}", label));
  const closeup = await takePhoto(page, /\/closeups\/1$/);
  expect(new URL(closeup.url).searchParams.get("part")).toBe(first);
  // The other suggestions of that photo, skipped; then on to the next step.
  for (const { part } of suggested.slice(1)) {
    if (part === first) continue;
    await expect.poll(() => page.locator(".suggestion").textContent()).toContain(m[`part.${part}`]);
    await page.getByRole("button", { name: m["closeups.skip"], exact: true }).click();
  }

  // The dashboard and the wheel, each with its own prompt and outline.
  await expectStep(page, "dashboard", 2);
  await fitsPhone(page, "dashboard");
  expect(await axeViolations(page)).toEqual([]);
  const dashboard = await page.screenshot();
  expect((await takePhoto(page, /\/photos\/dashboard$/)).body.suggested_closeups).toEqual([]);
  await expectStep(page, "wheel_rear_left", 3);
  await takePhoto(page, /\/photos\/wheel_rear_left$/);

  // No VIN step was asked for: after the last required step, the close-ups step, then the review.
  await expect.poll(() => heading(page).textContent(), { timeout: 10_000 }).toBe(m["closeups.title"]);
  await page.getByRole("button", { name: m["closeups.continue"], exact: true }).click();
  await expect.poll(() => heading(page).textContent()).toBe(m["review.title"]);
  const rows = await page
    .locator(".review-list li[data-photo]")
    .evaluateAll((items) => items.map((li) => [li.getAttribute("data-photo"), li.querySelector(".name")?.textContent]));
  expect(rows).toEqual([
    ...STEPS.map((s) => [s.angle, m[`angle.${s.angle}`]]),
    ["closeup-1", m["closeups.item"]!.replace("{n}", "1").replace("{part}", label)],
  ]);
  expect(await page.locator('[data-photo="interior_front"] .verdict').textContent()).toBe(m["review.not_taken"]);
  await fitsPhone(page, "review");
  expect(await axeViolations(page)).toEqual([]);
  await shot(page, "14-custom-review");
  const review = await page.screenshot();

  const views = [corner, guided, dashboard, review];
  await sharp({ create: { width: 15 + views.length * 405, height: 884, channels: 3, background: "#d1d5db" } })
    .composite(
      await Promise.all(
        views.map(async (png, i) => ({ input: await sharp(png).resize(390, 844).toBuffer(), left: 15 + i * 405, top: 20 })),
      ),
    )
    .png({ palette: true })
    .toFile(join(DOCS, "capture-custom.png"));

  await page.getByRole("button", { name: m["submit.button"], exact: true }).click();
  await expect.poll(() => heading(page).textContent(), { timeout: 15_000 }).toBe(m["end.submitted.title"]);
  const session = await (await fetch(`${svc.url}/capture/v1/${made.capture_token}`)).json().catch(() => null);
  expect(session?.error?.code).toBe("capture_link_inactive");
  const after = await (await svc.api(key, `/v1/inspections/${made.id}`)).json();
  expect(["processing", "completed"]).toContain(after.status);
}, 180_000);

it("with close-ups off, goes from the last step straight to the review, which shows no close-ups", async () => {
  const made = await (
    await svc.api(key, "/v1/inspections", {
      method: "POST",
      json: { vehicle: { vin: VALID_VIN }, capture: { steps: [{ angle: "rear_left" }], closeups: "off", locale: "de-AT" } },
    })
  ).json();
  const page = await (await browser.newContext(PHONE)).newPage();
  await page.goto(`${svc.url}/c/${made.capture_token}`);
  await expect.poll(() => heading(page).textContent(), { timeout: 15_000 }).toBe(m["angle.rear_left"]);
  await page.getByText(/^Alle Schritte/).click();
  expect(await page.locator(".all-steps li").allTextContents()).toEqual([`1. ${m["angle.rear_left"]}: ${m["step.todo"]}`]);
  // The upload suggests no close-up (closeups off), so Next leads straight to the review.
  expect((await takePhoto(page, /\/photos\/rear_left$/)).body.suggested_closeups).toEqual([]);
  await expect.poll(() => heading(page).textContent(), { timeout: 10_000 }).toBe(m["review.title"]);
  expect(await page.getByText(m["review.closeups"]!).count()).toBe(0);
  expect(await page.getByRole("button", { name: m["review.change_closeups"] }).count()).toBe(0);
  expect(await axeViolations(page)).toEqual([]);
  await page.getByRole("button", { name: m["submit.button"], exact: true }).click();
  await expect.poll(() => heading(page).textContent(), { timeout: 15_000 }).toBe(m["end.submitted.title"]);
}, 60_000);
