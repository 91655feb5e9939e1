import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUser } from "../../bin/commands/users.ts";
import { DESKTOP, launch, PHONE, auditDashboardPage, watchedPage } from "../helpers/browser.ts";
import { readPdf } from "../helpers/pdf-text.ts";
import { DAMAGE_VALID, DAMAGED_CASES } from "../helpers/photos.ts";
import { startService, type TestService, withModels } from "../helpers/service.ts";
import { create, walkaround } from "../helpers/walkaround.ts";

/**
 * The review in the dashboard (issue 29, item 3) in Debian's Chromium, at a laptop's width and on a
 * 390×844 phone, against the whole service with its damage models: a claims handler signs in, opens
 * the review queue from the navigation, opens a report waiting there, rejects a finding (a key on
 * the laptop, a tap on the phone), draws a box over a photo to add one, and submits; the report over
 * the API then shows both, attributed to that user, and the PDF says who reviewed. axe-core audits
 * the queue and the review page; their screenshots are kept in docs/ for the README and docs/capture-and-dashboard.md.
 */
const ACCOUNT = "acme";
const PASSWORD = "a long enough dashboard password";
const DOCS = join(import.meta.dirname, "../../docs");

let svc: TestService;
let browser: Browser;
let key: string;
/** The inspection each viewport reviews, by its reference. */
const inspections = new Map<string, string>();

/** An inspection with the damaged photos at their angles, its VIN left unconfirmed (so it waits for a person), completed. */
async function damagedInspection(reference: string): Promise<string> {
  const made = await create(svc, key, { reference });
  const over = DAMAGED_CASES.map((d) => ({ angle: d.angle, bytes: readFileSync(join(DAMAGE_VALID, "images", d.file)) }));
  expect((await walkaround(svc, key, made, { over, confirmVin: false })).status).toBe("completed");
  return made.id;
}

beforeAll(async () => {
  [svc, browser] = await Promise.all([startService(withModels), launch("none")]);
  key = await svc.key("test", ACCOUNT);
  const [desktop, phone] = await Promise.all([damagedInspection("claim-desk-1"), damagedInspection("claim-phone-1")]);
  inspections.set("desktop", desktop);
  inspections.set("phone", phone);
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

/** The first photo of the review page has loaded and is decoded. */
const firstPhotoShown = (page: Page) =>
  page.waitForFunction(() => {
    const img = (globalThis as any).document.querySelector("img[elementtiming=first-photo]");
    return img?.complete && img.naturalWidth > 0;
  });

for (const [viewport, options] of [
  ["desktop", DESKTOP],
  ["phone", PHONE],
] as const) {
  describe(`reviewing a report at ${viewport === "desktop" ? "a laptop's width (1280×800)" : "a phone's size (390×844)"}`, () => {
    let tab: Awaited<ReturnType<typeof watchedPage>>;
    let page: Page;
    let id: string;
    let model: any;
    const email = `${viewport}-reviewer@acme.test`;
    beforeAll(async () => {
      tab = await watchedPage(browser, options);
      page = tab.page;
      id = inspections.get(viewport)!;
      model = await (await svc.api(key, `/v1/inspections/${id}/report`)).json();
      expect(model.findings.filter((f: any) => f.bbox).length).toBeGreaterThanOrEqual(2);
    });
    afterAll(() => tab?.context.close());

    it("signs in and opens the review queue from the navigation, with the count of reports waiting", async () => {
      await createUser(svc.config, email, ACCOUNT, PASSWORD);
      await page.goto(`${svc.url}/dashboard/sign-in`);
      await page.getByLabel("Email").fill(email);
      await page.getByLabel("Password").fill(PASSWORD);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.waitForURL(`${svc.url}/dashboard/test/inspections`);
      const waiting = viewport === "desktop" ? "2" : "1";
      const link = page.getByRole("navigation", { name: "Sections" }).getByRole("link", { name: `Review queue ${waiting} waiting` });
      await link.click();
      await page.waitForURL(`${svc.url}/dashboard/test/reviews`);
      await expect.poll(() => page.locator("table.review-queue tbody tr").count()).toBe(Number(waiting));
      await auditDashboardPage(page, viewport, "review-queue");
      if (viewport === "desktop") await page.screenshot({ path: join(DOCS, "review-queue.png") });
    });

    it("opens the report's review page: each photo with its findings' boxes", async () => {
      const reference = viewport === "desktop" ? "claim-desk-1" : "claim-phone-1";
      await page.getByRole("link", { name: `Review ${reference}` }).click();
      await page.waitForURL(`${svc.url}/dashboard/test/inspections/${id}/review`);
      await firstPhotoShown(page);
      const boxes = page.locator("g.box[data-for^=finding-]");
      expect(await boxes.count()).toBe(model.findings.filter((f: any) => f.bbox && f.media_id).length);
      await expect.poll(() => page.locator("#review-tally").textContent()).toContain(`${model.findings.length} not decided`);
      await auditDashboardPage(page, viewport, "review-page");
    });

    it(`rejects a finding with ${viewport === "desktop" ? "the R key, then confirms the next with C" : "one tap"}`, async () => {
      const [first, second] = model.findings;
      const fieldset = page.locator(`#finding-${first.id}`);
      if (viewport === "desktop") {
        await fieldset.getByRole("radio", { name: "Not decided" }).focus();
        await page.keyboard.press("r");
        // The focus moved on to the next finding, visibly.
        const next = page.locator(`#finding-${second.id}`).getByRole("radio", { name: "Not decided" });
        await expect.poll(() => next.evaluate((el) => el === (globalThis as any).document.activeElement)).toBe(true);
        const ring = await next.evaluate((el: any) => (globalThis as any).getComputedStyle(el.closest("label")).outlineStyle);
        expect(ring).toBe("solid");
        await page.keyboard.press("c");
        await expect.poll(() => page.locator(`#finding-${second.id}`).getAttribute("class")).toContain("confirmed");
      } else {
        await fieldset.getByRole("radio", { name: "Reject" }).tap();
      }
      await expect.poll(() => fieldset.getAttribute("class")).toContain("rejected");
      await expect.poll(() => page.locator(`g.box[data-for="finding-${first.id}"]`).getAttribute("class")).toContain("rejected");
    });

    it("draws a box over a photo with the pointer to add a finding, and names it", async () => {
      // A photo the models found nothing on: the box is all the reviewer's.
      const area = page.locator(".review-photo", { hasText: "nothing found by the models" }).first().locator(".draw-area");
      await area.scrollIntoViewIfNeeded();
      const r = (await area.boundingBox())!;
      await page.mouse.move(r.x + r.width * 0.2, r.y + r.height * 0.3);
      await page.mouse.down();
      await page.mouse.move(r.x + r.width * 0.35, r.y + r.height * 0.4, { steps: 4 });
      await page.mouse.move(r.x + r.width * 0.5, r.y + r.height * 0.5, { steps: 4 });
      await page.mouse.up();
      const added = page.locator("fieldset[data-added]");
      await expect.poll(() => added.count()).toBe(1);
      // The new finding's type has the focus, ready to be chosen.
      const select = (name: string) => added.getByRole("combobox", { name: new RegExp(`^${name}`) });
      expect(await select("Type").evaluate((el) => el === (globalThis as any).document.activeElement)).toBe(true);
      await select("Type").selectOption("scratch");
      await select("Part").selectOption("front_left_door");
      await select("Severity").selectOption("moderate");
      const box = (await added.locator("input[data-field=bbox]").inputValue()).split(",").map(Number);
      expect(box[0]).toBeCloseTo(0.2, 1);
      expect(box[1]).toBeCloseTo(0.3, 1);
      expect(box[2]).toBeCloseTo(0.3, 1);
      expect(box[3]).toBeCloseTo(0.2, 1);
      await expect.poll(() => page.locator("g.box.added").count()).toBe(1);

      const tools = area.locator("xpath=following-sibling::div[contains(@class, 'draw-tools')]");
      const second = page.locator("fieldset[data-added]").nth(1);
      if (viewport === "desktop") {
        // Without a pointer: a box placed in the middle, moved with the arrow keys.
        await tools.getByRole("button", { name: "Place a box" }).focus();
        await page.keyboard.press("Enter");
        await second.getByRole("button", { name: "Move box" }).focus();
        await page.keyboard.press("ArrowRight");
        await page.keyboard.press("ArrowRight");
        await page.keyboard.press("Shift+ArrowDown");
        expect(await second.locator("input[data-field=bbox]").inputValue()).toBe("0.42,0.4,0.2,0.21");
      } else {
        // A finger draws once Draw a box is pressed (the photo then stops scrolling the page).
        await tools.getByRole("button", { name: "Draw a box" }).tap();
        expect(await area.evaluate((el) => (globalThis as any).getComputedStyle(el).touchAction)).toBe("none");
        const cdp = await page.context().newCDPSession(page);
        const at = (fx: number, fy: number) => [{ x: r.x + r.width * fx, y: r.y + r.height * fy }];
        await cdp.send("Input.dispatchTouchEvent", { type: "touchStart", touchPoints: at(0.6, 0.6) });
        for (const f of [0.65, 0.7, 0.75, 0.8]) await cdp.send("Input.dispatchTouchEvent", { type: "touchMove", touchPoints: at(f, f) });
        await cdp.send("Input.dispatchTouchEvent", { type: "touchEnd", touchPoints: [] });
        await expect.poll(() => second.count()).toBe(1);
        const drawn = (await second.locator("input[data-field=bbox]").inputValue()).split(",").map(Number);
        expect(drawn[0]).toBeCloseTo(0.6, 1);
        expect(drawn[2]).toBeCloseTo(0.2, 1);
        // Drawing mode ends with the box: the photo scrolls the page again.
        expect(await tools.getByRole("button", { name: "Draw a box" }).getAttribute("aria-pressed")).toBe("false");
      }
      await expect.poll(() => page.locator("g.box.added").count()).toBe(2);
      await second.getByRole("button", { name: "Remove" }).click();
      await expect.poll(() => page.locator("fieldset[data-added]").count()).toBe(1);
      await expect.poll(() => page.locator("g.box.added").count()).toBe(1);

      await page.getByLabel(/For whoever reads the report/).fill(`Checked on the ${viewport}.`);
      await auditDashboardPage(page, viewport, "review-page-decided");
      // The screenshot for docs/capture-and-dashboard.md: the first photo with its findings decided.
      if (viewport === "desktop") {
        // A taller window for the docs' picture: the heading, why, and the first photo whole.
        await page.setViewportSize({ width: 1280, height: 1180 });
        await page.locator(".crumbs").evaluate((el: any) => el.scrollIntoView({ block: "start" }));
        await page.screenshot({ path: join(DOCS, "review-page.png") });
        await page.setViewportSize(DESKTOP.viewport!);
      } else {
        await area.evaluate((el: any) => el.closest(".review-photo").scrollIntoView({ block: "start" }));
        await page.screenshot({ path: join(DOCS, "review-phone.png") });
      }
    });

    it("submits the whole review once, lands on the inspection page, and the report over the API shows it", async () => {
      await page.getByRole("button", { name: "Submit review" }).click();
      await page.waitForURL(`${svc.url}/dashboard/test/inspections/${id}#review-title`);
      await expect.poll(() => page.locator("#review-title").textContent()).toBe("Reviewed");
      const reviewed = await (await svc.api(key, `/v1/inspections/${id}/report`)).json();
      expect(reviewed.review).toMatchObject({ status: "completed", reviewed_by: email, note: `Checked on the ${viewport}.` });
      expect(reviewed.findings[0]).toMatchObject({ id: model.findings[0].id, review: "rejected", source: "model" });
      if (viewport === "desktop") expect(reviewed.findings[1]).toMatchObject({ review: "confirmed" });
      const added = reviewed.findings.at(-1);
      expect(added).toMatchObject({ source: "reviewer", type: "scratch", part: "front_left_door", severity: "moderate", review: null });
      expect(added.bbox[0]).toBeCloseTo(0.2, 1);
      const pdf = await svc.api(key, `/v1/inspections/${id}/report.pdf`);
      expect((await readPdf(Buffer.from(await pdf.arrayBuffer()))).text.join("\n")).toContain(`Reviewed by ${email}`);
      expect(tab.problems).toEqual([]);
    });
  });
}
