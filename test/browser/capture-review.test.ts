import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EXTERIOR_ANGLES } from "../../core/schemas/capture.ts";
import en from "../../capture/page/messages/en.json" with { type: "json" };
import { axeViolations, fitsPhone, launchShowing, PHONE, shot } from "../helpers/browser.ts";
import { carPhoto } from "../helpers/photos.ts";
import { startService, type TestService, VALID_VIN } from "../helpers/service.ts";
import { create } from "../helpers/walkaround.ts";

/**
 * Issue 33, "the customer on a phone", in Chromium at 390×844: each accepted photo is shown until
 * Next; the review screen lists every photo with its thumbnail and the verdict of its upload; Retake
 * from there replaces a photo and comes back; nothing scrolls sideways; axe-core finds no WCAG 2.1 A
 * or AA violation on the review; the send reaches the API. The review's screenshot goes to
 * docs/capture-review.png.
 */
const DOCS = join(import.meta.dirname, "../../docs");
const messages = en as Record<string, string>;
const name = (angle: string) => messages[`angle.${angle}`]!;
const heading = (page: Page) => page.locator("h1");
const TAKEN = [...EXTERIOR_ANGLES, "vin"];

let svc: TestService;
let key: string;
let browser: Browser;
const dir = mkdtempSync(join(tmpdir(), "vi-review-"));

beforeAll(async () => {
  svc = await startService();
  key = await svc.key("test");
  browser = await launchShowing(carPhoto(0));
});
afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

/** The server's verdict on a photo, as the review words it. */
function verdictOf(quality: { passed: boolean; problems: string[] }): string {
  if (quality.passed) return messages["review.passed"]!;
  return messages["review.problems"]!.replace("{problems}", quality.problems.map((p) => messages[`problem.${p}`]).join(", "));
}

/** The accepted view: the photo with its badge, the page still on its step, Next and Retake. */
async function expectAccepted(page: Page, angle: string, badge: string): Promise<void> {
  await expect.poll(() => page.locator(".viewfinder .badge").textContent(), { timeout: 15_000 }).toBe(badge);
  expect(await page.locator(".viewfinder canvas.still").count()).toBe(1);
  expect(await heading(page).textContent()).toBe(name(angle));
  expect(await page.getByRole("button", { name: "Retake" }).isVisible()).toBe(true);
}

async function next(page: Page, from: string): Promise<void> {
  await page.getByRole("button", { name: "Next", exact: true }).click();
  await expect.poll(() => heading(page).textContent(), { timeout: 15_000 }).not.toBe(from);
}

const rows = (page: Page) =>
  page.locator(".review-list li[data-photo]").evaluateAll((items) =>
    items.map((li) => ({
      photo: li.getAttribute("data-photo"),
      name: li.querySelector(".name")?.textContent,
      verdicts: [...li.querySelectorAll(".verdict")].map((v) => v.textContent),
      thumb: (li.querySelector("img.thumb") as any)?.src ?? null,
      loaded: ((li.querySelector("img.thumb") as any)?.naturalWidth ?? 0) > 0,
    })),
  );

it("shows each accepted photo, reviews every photo with its verdict, retakes from the review, and sends", async () => {
  const page = await (await browser.newContext(PHONE)).newPage();
  const { id, token } = await create(svc, key);
  const session = async () => (await fetch(`${svc.url}/capture/v1/${token}`)).json();
  await page.goto(`${svc.url}/c/${token}`);
  await expect.poll(() => heading(page).textContent()).toBe("Front");
  await expect.poll(() => page.getByRole("button", { name: "Take photo" }).count()).toBe(1);
  // The step indicator: "Step 1 of 10" and a bar, the list of steps folded away.
  expect(await page.locator(".progress .count").textContent()).toBe("Step 1 of 10");
  expect(await page.getByRole("progressbar").getAttribute("aria-valuetext")).toBe("0 of 9");
  await fitsPhone(page, "step");
  await page.getByText(/^All steps/).click();
  await fitsPhone(page, "step with all steps shown");
  await page.getByText(/^All steps/).click();

  // The front, too dark (a real photo darkened, from the file input), kept after two tries: accepted with its problem.
  const dark = join(dir, "dark.jpg");
  writeFileSync(dark, await sharp(carPhoto(1)).linear(0.1, 0).jpeg().toBuffer());
  await page.locator("#file").setInputFiles(dark);
  await expect.poll(() => page.getByRole("status").textContent()).toContain("Too dark");
  await page.getByRole("button", { name: "Retake" }).click();
  await page.locator("#file").setInputFiles(dark);
  await page.getByRole("button", { name: "Use this photo anyway" }).click();
  await expectAccepted(page, "front", messages["accepted.badge_flagged"]!);
  expect(await page.getByRole("status").textContent()).toContain("Too dark");
  await next(page, "Front");

  // The other corners and sides with the live camera: each shown as accepted until Next.
  for (const angle of EXTERIOR_ANGLES.slice(1)) {
    expect(await heading(page).textContent()).toBe(name(angle));
    await page.getByRole("button", { name: "Take photo" }).click();
    await expectAccepted(page, angle, messages["accepted.badge"]!);
    expect(await page.getByRole("status").textContent()).toBe(messages["accepted.good"]);
    if (angle === "left") {
      await fitsPhone(page, "accepted");
      await shot(page, "12-accepted");
    }
    await next(page, name(angle));
  }

  // The VIN: its confirmation screen shows the photo just taken.
  expect(await heading(page).textContent()).toBe("VIN");
  await page.getByRole("button", { name: "Take photo" }).click();
  const vin = page.getByLabel("VIN (17 characters)");
  await vin.waitFor();
  expect(await page.locator(".vin-photo canvas").count()).toBe(1);
  await expect.poll(() => page.locator(".status").textContent(), { timeout: 30_000 }).toMatch(/read|type/);
  await vin.fill(VALID_VIN);
  await fitsPhone(page, "VIN");
  await page.getByRole("button", { name: "Confirm VIN" }).click();
  await expect.poll(() => heading(page).textContent(), { timeout: 10_000 }).toBe("Any damage?");
  await fitsPhone(page, "close-ups");
  await page.getByRole("button", { name: "No damage: continue" }).click();
  await expect.poll(() => heading(page).textContent()).toBe("Check your photos");

  // The review: every photo taken, with its thumbnail and its upload's verdict; the optional odometer not taken.
  const before = await session();
  const listed = await rows(page);
  expect(listed.map((r) => r.photo)).toEqual([...TAKEN, "odometer"]);
  for (const angle of TAKEN) {
    const row = listed.find((r) => r.photo === angle)!;
    const step = before.steps.find((s: any) => s.angle === angle);
    expect(row.name).toBe(name(angle));
    expect(row.verdicts[0]).toBe(verdictOf(step.quality));
    expect(row.thumb).toMatch(/^data:image\/jpeg;base64,/);
    expect(row.loaded).toBe(true);
  }
  expect(listed.find((r) => r.photo === "front")!.verdicts[0]).toContain("Too dark");
  expect(listed.find((r) => r.photo === "vin")!.verdicts[1]).toBe(`VIN confirmed: ${VALID_VIN}`);
  expect(listed.find((r) => r.photo === "odometer")!.verdicts).toEqual(["Not taken (optional)"]);
  expect(await page.getByRole("progressbar").getAttribute("aria-valuetext")).toBe("9 of 9");
  await fitsPhone(page, "review");
  expect(await axeViolations(page)).toEqual([]);
  // The whole list at the phone's pixel density, in a palette to keep the file small.
  await sharp(await page.screenshot({ fullPage: true }))
    .png({ palette: true })
    .toFile(join(DOCS, "capture-review.png"));

  // Retake the front from the review: a new photo replaces the dark one, and the page comes back here.
  await page.getByRole("button", { name: "Retake: Front", exact: true }).click();
  await expect.poll(() => heading(page).textContent()).toBe("Front");
  const put = page.waitForResponse((r) => r.request().method() === "PUT" && new URL(r.url()).pathname.endsWith("/photos/front"));
  await page.getByRole("button", { name: "Take photo" }).click();
  expect((await put).status()).toBe(200);
  await expectAccepted(page, "front", messages["accepted.badge"]!);
  await next(page, "Front");
  expect(await heading(page).textContent()).toBe("Check your photos");
  const front = (await rows(page)).find((r) => r.photo === "front")!;
  expect(front.verdicts[0]).toBe("Passed");
  expect(front.thumb).not.toBe(listed.find((r) => r.photo === "front")!.thumb);
  expect((await session()).steps[0]).toMatchObject({ angle: "front", done: true, quality: { passed: true, problems: [] } });
  await fitsPhone(page, "review after the retake");
  await shot(page, "13-review");

  // Sent from the review, the only screen with the send button.
  await page.getByRole("button", { name: "Send photos" }).click();
  await expect.poll(() => heading(page).textContent()).toBe("Thank you");
  const { status } = await (await svc.api(key, `/v1/inspections/${id}`)).json();
  expect(["processing", "completed"]).toContain(status);
}, 120_000);
