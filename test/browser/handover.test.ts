import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Locator, Page } from "playwright-core";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUser } from "../../bin/commands/users.ts";
import { DASHBOARD_ARTIFACTS, DESKTOP, launch, PHONE, auditDashboardPage, watchedPage } from "../helpers/browser.ts";
import { DAMAGE_VALID, DAMAGED_CASES } from "../helpers/photos.ts";
import { startService, type TestService, VALID_VIN, withModels } from "../helpers/service.ts";
import { create, walkaround } from "../helpers/walkaround.ts";

/**
 * The rental handover's before/after page (issue 32) in Debian's Chromium, at a laptop's width and
 * on a 390×844 phone, against the whole service with its models: a damage desk signs in, finds the
 * vehicle's inspections by VIN, opens the return, sees each angle of the pick-up beside the
 * return's (side by side on the laptop, one above the other on the phone) with the new damage
 * marked, and follows the link to the pick-up, whose page links back. axe-core audits each page
 * under its real CSP; the laptop's comparison is kept as docs/handover.png.
 */
const ACCOUNT = "acme";
const PASSWORD = "a long enough dashboard password";
const DOCS = join(import.meta.dirname, "../../docs");
const photo = (i: number) => ({
  angle: DAMAGED_CASES[i]!.angle,
  bytes: readFileSync(join(DAMAGE_VALID, "images", DAMAGED_CASES[i]!.file)),
});

let svc: TestService;
let browser: Browser;
let pickUp: string;
let back: string;
let newCount: number;

beforeAll(async () => {
  [svc, browser] = await Promise.all([startService(withModels), launch("none")]);
  const key = await svc.key("test", ACCOUNT);
  // Pick-up: a shattered windscreen. Return: the same windscreen, and a flat tyre since.
  const p = await create(svc, key, { reference: "RA-1042 pick-up" });
  await walkaround(svc, key, p, { over: [photo(0)] });
  const r = await create(svc, key, { reference: "RA-1042 return", baseline_inspection: p.id });
  const done = await walkaround(svc, key, r, { over: [photo(0), photo(1)] });
  [pickUp, back, newCount] = [p.id, r.id, done.summary.new_findings];
  expect(newCount).toBeGreaterThan(0);
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

/** Every photo in `within` scrolled to (they load lazily), loaded and decoded. */
async function photosShown(within: Locator) {
  for (const img of await within.locator("img").all()) {
    await img.scrollIntoViewIfNeeded();
    await expect.poll(() => img.evaluate((i: any) => i.complete && i.naturalWidth > 0)).toBe(true);
  }
}

for (const [viewport, options] of [
  ["desktop", DESKTOP],
  ["phone", PHONE],
] as const) {
  describe(`the handover at ${viewport === "desktop" ? "a laptop's width (1280×800)" : "a phone's size (390×844)"}`, () => {
    let tab: Awaited<ReturnType<typeof watchedPage>>;
    let page: Page;
    beforeAll(async () => {
      tab = await watchedPage(browser, options);
      page = tab.page;
    });
    afterAll(() => tab?.context.close());

    it("signs in and finds the vehicle's inspections by VIN", async () => {
      const email = `${viewport}-desk@acme.test`;
      await createUser(svc.config, email, ACCOUNT, PASSWORD);
      await page.goto(`${svc.url}/dashboard/sign-in`);
      await page.getByLabel("Email").fill(email);
      await page.getByLabel("Password").fill(PASSWORD);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.waitForURL(`${svc.url}/dashboard/test/inspections`);
      await page.getByLabel("VIN").fill(VALID_VIN.toLowerCase());
      await page.getByRole("button", { name: "Filter" }).click();
      await page.waitForURL(/\?.*vin=/);
      await expect.poll(() => page.locator("table.inspections tbody tr").count()).toBe(2);
      await expect.poll(() => page.locator("table.inspections tbody").textContent()).toContain(`${newCount} new`);
      await auditDashboardPage(page, viewport, "inspections-by-vin");
    });

    it("opens the return: each angle of the pick-up beside the return's, the new damage marked", async () => {
      await page.getByRole("link", { name: "RA-1042 return" }).click();
      await page.waitForURL(`${svc.url}/dashboard/test/inspections/${back}`);
      const section = page.locator("section.handover");
      await expect.poll(() => section.getByRole("heading", { level: 2 }).textContent()).toMatch(/^Compared with RA-1042 pick-up of \d{4}-/);
      await expect.poll(() => section.locator(".handover-counts").textContent()).toContain(`${newCount} new damage`);
      await photosShown(section);
      const withNew = section.locator("li.pair.has-new");
      expect(await withNew.count()).toBeGreaterThan(0);
      await expect.poll(() => withNew.first().locator("figure.side-now").textContent()).toContain("New");
      // Side by side on the laptop; on the phone the pick-up's photo above the return's, both the pair's width.
      const [then, now] = await Promise.all(["then", "now"].map((w) => withNew.first().locator(`figure.side-${w} img`).boundingBox()));
      if (viewport === "desktop") {
        expect(Math.abs(then!.y - now!.y)).toBeLessThan(1);
        expect(now!.x).toBeGreaterThan(then!.x + then!.width);
      } else {
        expect(now!.y).toBeGreaterThanOrEqual(then!.y + then!.height);
        expect(Math.abs(then!.x - now!.x)).toBeLessThan(1);
        expect(then!.width).toBeGreaterThan(250);
      }
      await auditDashboardPage(page, viewport, "handover");
      // Kept in docs/ with a palette, as the other screenshots there are: a quarter of the bytes.
      if (viewport === "desktop")
        writeFileSync(
          join(DOCS, "handover.png"),
          await sharp(await section.screenshot())
            .png({ palette: true })
            .toBuffer(),
        );
      else await section.screenshot({ path: join(DASHBOARD_ARTIFACTS, "phone-handover-section.png") });
    });

    it("zooms into a photo of the pick-up", async () => {
      await page.locator("li.pair figure.side-then a[data-zoom]").first().click();
      const dialog = page.locator("dialog#zoom");
      await expect.poll(() => dialog.evaluate((d: any) => d.open)).toBe(true);
      await page.keyboard.press("Escape");
      await expect.poll(() => dialog.evaluate((d: any) => d.open)).toBe(false);
    });

    it("follows the link to the pick-up, whose page links back to the return", async () => {
      await page.locator("section.handover h2").getByRole("link", { name: "RA-1042 pick-up" }).click();
      await page.waitForURL(`${svc.url}/dashboard/test/inspections/${pickUp}`);
      const usedBy = page.locator("section", { has: page.getByRole("heading", { name: "Used as the baseline of" }) });
      await expect.poll(() => usedBy.textContent()).toContain(`${newCount} new`);
      await auditDashboardPage(page, viewport, "baseline");
      await usedBy.getByRole("link", { name: "RA-1042 return" }).click();
      await page.waitForURL(`${svc.url}/dashboard/test/inspections/${back}`);
      expect(tab.problems).toEqual([]);
    });
  });
}
