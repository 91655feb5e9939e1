import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUser } from "../../bin/commands/users.ts";
import { auditDashboardPage, DESKTOP, launch, PHONE, watchedPage } from "../helpers/browser.ts";
import { DAMAGE_VALID, DAMAGED_CASES } from "../helpers/photos.ts";
import { startService, type TestService, VALID_VIN, withModels } from "../helpers/service.ts";
import { create, walkaround } from "../helpers/walkaround.ts";
import { until, WebhookReceiver } from "../helpers/webhook-receiver.ts";

/**
 * The claims handler on a phone (issue 33, item 5), in Debian's Chromium against the whole service
 * with its damage models, at 390×844 and at 1280×800: the inspections list and the review queue are
 * cards on the phone (rows of a table at the laptop's width) with the grade and the status always in
 * sight; the inspection page leads with the findings and the photos, each photo with findings
 * outlined and counted; the findings are cards with their part and confidence in sight. Nothing is
 * wider than the window and nothing is clipped; the tables keep their semantics in Chromium's
 * accessibility tree; axe-core finds no WCAG 2.1 A or AA violation. The account's pages too: the API
 * keys and the team are cards on the phone, every column's value shown in each, and the webhooks page
 * (no table: its secret and its test event) fits. It writes docs/dashboard-phone.png (the phone's
 * list, findings and photos side by side), docs/dashboard-phone-account.png (the phone's keys and
 * team) and docs/dashboard-inspection.png (the laptop's inspection).
 */
const ACCOUNT = "acme";
const PASSWORD = "a long enough dashboard password";
/** A colleague with a long address: its card must wrap it, not widen the page. */
const LONG_EMAIL = "claims.handler.night-shift@rotterdam-harbour-insurance.example";
const DOCS = join(import.meta.dirname, "../../docs");

let svc: TestService;
let receiver: WebhookReceiver;
let browser: Browser;
let key: string;
/** The damaged inspection (completed, waiting for review: its VIN is not confirmed) and one not yet captured. */
let damaged: string;
let report: {
  grade: string;
  findings: { type: string; part: string | null; confidence: number; media_id: string | null; review: string }[];
  photos: { media_id: string; angle: string }[];
};

/** An inspection with the damaged photos at their angles, its VIN left unconfirmed (so it waits for a person), completed; its events go to the receiver. */
async function damagedInspection(reference: string): Promise<string> {
  const made = await create(svc, key, { reference, notify_url: receiver.url });
  const over = DAMAGED_CASES.map((d) => ({ angle: d.angle, bytes: readFileSync(join(DAMAGE_VALID, "images", d.file)) }));
  expect((await walkaround(svc, key, made, { over, confirmVin: false })).status).toBe("completed");
  return made.id;
}

beforeAll(async () => {
  [svc, receiver, browser] = await Promise.all([startService(withModels), new WebhookReceiver().start(), launch("none")]);
  key = await svc.key("test", ACCOUNT);
  await createUser(svc.config, LONG_EMAIL, ACCOUNT, PASSWORD);
  // One not captured yet, with a long reference: its card must wrap, not widen the page.
  const pending = { vehicle: { vin: VALID_VIN }, reference: "CLAIM-2026-11-27-ROTTERDAM-HARBOUR-0042" };
  expect((await svc.api(key, "/v1/inspections", { method: "POST", json: pending })).status).toBe(201);
  damaged = await damagedInspection("CLAIM-4711");
  report = await (await svc.api(key, `/v1/inspections/${damaged}/report`)).json();
  expect(report.findings.length).toBeGreaterThanOrEqual(2);
  // Its deliveries, whose attempts the inspection page lists.
  await until(
    "the completed event delivered",
    () => receiver.events().some((e) => e.type === "inspection.completed" && e.data.id === damaged),
    (delivered) => delivered,
  );
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await receiver?.close();
  await svc?.close();
});

/**
 * What is cut off: each element reaching past the window's left or right edge, and each element
 * whose content is wider than its box while its overflow hides or scrolls it. Visually hidden text
 * (clip-path, as .visually-hidden and a card's table headers) and the skip link are meant to be unseen.
 * A text field longer than its box scrolls its own value, as in every browser: only its box must fit.
 */
const clipped = (page: Page) =>
  page.evaluate(() => {
    const doc = (globalThis as any).document;
    const width = (globalThis as any).innerWidth as number;
    const found: string[] = [];
    const hidden = (el: any): boolean => {
      for (let e = el; e; e = e.parentElement) {
        const style = (globalThis as any).getComputedStyle(e);
        if (style.clipPath !== "none" || e.classList.contains("skip")) return true;
      }
      return false;
    };
    const name = (el: any) =>
      `<${el.tagName.toLowerCase()}${el.className && typeof el.className === "string" ? ` class="${el.className}"` : ""}> "${(el.textContent ?? "").trim().slice(0, 40)}"`;
    for (const el of doc.body.querySelectorAll("*")) {
      const box = el.getBoundingClientRect();
      if (box.width === 0 || box.height === 0 || hidden(el)) continue;
      if (box.right > width + 0.5 || box.left < -0.5) found.push(`${name(el)} spans ${Math.round(box.left)}–${Math.round(box.right)} px`);
      const overflow = (globalThis as any).getComputedStyle(el).overflowX;
      if (overflow !== "visible" && el.scrollWidth > el.clientWidth + 1 && !["INPUT", "TEXTAREA"].includes(el.tagName))
        found.push(`${name(el)} holds ${el.scrollWidth} px in ${el.clientWidth} px (overflow ${overflow})`);
    }
    return found;
  });

/** Nothing wider than the window, nothing clipped, no axe violation; a screenshot in test-artifacts/dashboard. */
async function fits(page: Page, viewport: string, name: string) {
  await auditDashboardPage(page, viewport, name);
  const widths = await page.evaluate(() => [(globalThis as any).document.documentElement.scrollWidth, (globalThis as any).innerWidth]);
  expect(widths[0], `the ${viewport} ${name} page's width`).toBeLessThanOrEqual(viewport === "phone" ? 390 : 1280);
  expect(await clipped(page), `clipped on the ${viewport} ${name} page`).toEqual([]);
  // On the phone, the sections' links above the page keep their own height on a short page: none stretched to fill the screen.
  if (viewport === "phone")
    for (const link of await page.getByRole("navigation", { name: "Sections" }).getByRole("link").all())
      expect
        .soft((await link.boundingBox())!.height, `the ${viewport} ${name} page's link ${await link.textContent()}`)
        .toBeLessThanOrEqual(48);
}

/** `locator`'s box lies within the window's width, and it is shown. */
async function inSight(page: Page, locator: ReturnType<Page["locator"]>, what: string) {
  expect.soft(await locator.isVisible(), `${what}: shown`).toBe(true);
  const box = await locator.boundingBox();
  const width = await page.evaluate(() => (globalThis as any).innerWidth as number);
  expect(box, what).not.toBeNull();
  expect.soft(box!.x, `${what}: left edge`).toBeGreaterThanOrEqual(0);
  expect.soft(box!.x + box!.width, `${what}: right edge`).toBeLessThanOrEqual(width + 0.5);
}

/**
 * Each row of `table` (but an empty table's line): a card on the phone (grid), a row on the laptop,
 * and every column's value in it shown and inside the window: each cell's text, less the card's
 * label, is in what the cell renders (innerText holds no hidden text), and each button in it is in
 * sight. On the phone, a label a cell carries is shown; it is aria-hidden everywhere.
 */
async function everyValueInSight(page: Page, table: string, phone: boolean): Promise<number> {
  const rows = page.locator(`table.${table} tbody tr:not(.empty)`);
  const count = await rows.count();
  for (let i = 0; i < count; i++) {
    const row = rows.nth(i);
    await row.scrollIntoViewIfNeeded();
    expect(await row.evaluate((tr: any) => (globalThis as any).getComputedStyle(tr).display), `${table} row ${i}`).toBe(
      phone ? "grid" : "table-row",
    );
    const cells = row.locator("td");
    for (let j = 0; j < (await cells.count()); j++) {
      const cell = cells.nth(j);
      const { value, shown } = await cell.evaluate((td: any) => {
        const copy = td.cloneNode(true);
        for (const l of copy.querySelectorAll(".cell-label")) l.remove();
        const words = (t: string) => t.replace(/\s+/g, " ").trim();
        return { value: words(copy.textContent ?? ""), shown: words(td.innerText ?? "") };
      });
      const what = `${table} row ${i}, column ${j + 1} ("${value}")`;
      if (value) {
        await inSight(page, cell, what);
        expect.soft(shown, `${what}: its value shown`).toContain(value);
      }
      for (const button of await cell.getByRole("button").all()) await inSight(page, button, `${what}: ${await button.textContent()}`);
      const label = cell.locator(".cell-label");
      if ((await label.count()) > 0) {
        expect.soft(await label.isVisible(), `${what}: its label shown`).toBe(phone);
        expect(await label.getAttribute("aria-hidden")).toBe("true");
      }
    }
  }
  return count;
}

/** The roles Chromium gives the page (its accessibility tree, as a screen reader gets it), counted. */
async function axRoles(page: Page): Promise<Record<string, number>> {
  const cdp = await page.context().newCDPSession(page);
  try {
    const { nodes } = (await cdp.send("Accessibility.getFullAXTree")) as { nodes: { role?: { value: string }; ignored?: boolean }[] };
    const roles: Record<string, number> = {};
    for (const n of nodes) if (!n.ignored && n.role) roles[n.role.value] = (roles[n.role.value] ?? 0) + 1;
    return roles;
  } finally {
    await cdp.detach();
  }
}

/** Per photo, how many counted findings it shows (a rejected finding is not counted). */
const findingsOn = () => {
  const on = new Map<string, number>();
  for (const f of report.findings) if (f.media_id && f.review !== "rejected") on.set(f.media_id, (on.get(f.media_id) ?? 0) + 1);
  return on;
};

const shots: Record<string, Buffer> = {};

for (const [viewport, options] of [
  ["phone", PHONE],
  ["desktop", DESKTOP],
] as const) {
  const phone = viewport === "phone";
  describe(`the claims handler's pages at ${phone ? "a phone's size (390×844)" : "a laptop's width (1280×800)"}`, () => {
    let tab: Awaited<ReturnType<typeof watchedPage>>;
    let page: Page;
    beforeAll(async () => {
      tab = await watchedPage(browser, options);
      page = tab.page;
      await createUser(svc.config, `${viewport}-handler@acme.test`, ACCOUNT, PASSWORD);
      await page.goto(`${svc.url}/dashboard/sign-in`);
      await page.getByLabel("Email").fill(`${viewport}-handler@acme.test`);
      await page.getByLabel("Password").fill(PASSWORD);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.waitForURL(`${svc.url}/dashboard/test/inspections`);
    }, 30_000);
    afterAll(() => tab?.context.close());

    it(`lists the inspections as ${phone ? "cards" : "rows"}, each with its status and grade in sight`, async () => {
      const rows = page.locator("table.inspections tbody tr");
      expect(await rows.count()).toBe(2);
      for (let i = 0; i < 2; i++) {
        const row = rows.nth(i);
        expect(await row.evaluate((tr: any) => (globalThis as any).getComputedStyle(tr).display)).toBe(phone ? "grid" : "table-row");
        await inSight(page, row.locator("td.status .badge"), `row ${i}'s status`);
        await inSight(page, row.locator("td.grade-cell"), `row ${i}'s grade`);
        await inSight(page, row.locator("td.ref a"), `row ${i}'s link`);
      }
      const card = rows.filter({ hasText: "CLAIM-4711" });
      expect(await card.locator("td.status").textContent()).toBe("completed");
      expect(await card.locator("td.grade-cell .grade").textContent()).toBe(report.grade);
      expect(await card.locator("td.grade-cell").textContent()).toContain(`${report.findings.length} findings`);
      expect(await rows.filter({ hasText: "ROTTERDAM" }).locator("td.status").textContent()).toBe("created");
      // The card's labels are shown on the phone only, and never read out: the column headers are.
      expect(await card.locator(".cell-label").first().isVisible()).toBe(phone);
      expect(await card.locator(".cell-label").first().getAttribute("aria-hidden")).toBe("true");
      // Still a table to a screen reader: Chromium keeps its rows, cells and column headers.
      const roles = await axRoles(page);
      expect(roles.columnheader, "column headers").toBe(5);
      expect(roles.row, "rows: the header's and two inspections'").toBe(3);
      expect(roles.cell, "cells").toBe(10);
      await fits(page, viewport, "inspections-cards");
      if (phone) shots.list = await page.screenshot();
    });

    it(`shows the review queue as ${phone ? "cards" : "rows"} with the grade in sight`, async () => {
      await page
        .getByRole("navigation", { name: "Sections" })
        .getByRole("link", { name: /^Review queue/ })
        .click();
      await page.waitForURL("**/dashboard/test/reviews");
      const row = page.locator("table.review-queue tbody tr");
      expect(await row.count()).toBe(1);
      expect(await row.evaluate((tr: any) => (globalThis as any).getComputedStyle(tr).display)).toBe(phone ? "grid" : "table-row");
      await inSight(page, row.locator("td.grade-cell"), "the grade");
      await inSight(page, row.locator("td.why"), "why");
      await inSight(page, row.getByRole("link", { name: "Review CLAIM-4711" }), "the review link");
      expect(await row.locator("td.grade-cell").textContent()).toContain(`${report.findings.length} findings`);
      await fits(page, viewport, "review-queue-cards");
    });

    it("opens the inspection on its findings and photos, the photos with findings outlined and counted", async () => {
      await page.getByRole("navigation", { name: "Sections" }).getByRole("link", { name: "Inspections", exact: true }).click();
      await page.getByRole("link", { name: "CLAIM-4711" }).click();
      await page.waitForURL(`**/dashboard/test/inspections/${damaged}`);

      // The order: the report's grade, findings and photos before the vehicle, the share form and the events.
      const top = async (selector: string) => (await page.locator(selector).first().boundingBox())!.y;
      const findings = await top("#findings-title");
      const photoGrid = await top("#photos-title");
      expect(await top("#summary-title")).toBeLessThan(findings);
      expect(findings).toBeLessThan(photoGrid);
      for (const later of ["#vin-title", "#vehicle-title", "#share-title", "#timeline-title", "#events-title"])
        expect(photoGrid, `the photos before ${later}`).toBeLessThan(await top(later));

      // Each finding: a card on the phone, with its type, part, severity and confidence in sight.
      const rows = page.locator("table.findings tbody tr");
      expect(await rows.count()).toBe(report.findings.length);
      for (const [i, f] of report.findings.entries()) {
        const row = rows.nth(i);
        expect(await row.evaluate((tr: any) => (globalThis as any).getComputedStyle(tr).display)).toBe(phone ? "grid" : "table-row");
        await row.scrollIntoViewIfNeeded();
        await inSight(page, row.locator("td.evidence img"), `finding ${i}'s evidence`);
        await inSight(page, row.locator("td.part"), `finding ${i}'s part`);
        await inSight(page, row.locator("td.confidence"), `finding ${i}'s confidence`);
        await inSight(page, row.locator("td.severity"), `finding ${i}'s severity`);
        expect(await row.locator("td.confidence").textContent()).toContain(`${Math.round(f.confidence * 100)}%`);
        expect(await row.locator("td").nth(1).textContent()).toBe(f.type.replaceAll("_", " "));
        await expect.poll(() => row.locator("td.evidence img").evaluate((img: any) => img.complete && img.naturalWidth)).toBeGreaterThan(0);
      }

      // The grid: each photo with findings outlined, its count on it and in its link's name.
      const on = findingsOn();
      const items = page.locator("ul.photos > li");
      expect(await items.count()).toBe(report.photos.length);
      expect(await page.locator("ul.photos > li.has-findings").count()).toBe(on.size);
      expect(on.size).toBeGreaterThanOrEqual(2);
      for (const [i, p] of report.photos.entries()) {
        const item = items.nth(i);
        const n = on.get(p.media_id) ?? 0;
        const link = item.locator("a[data-zoom]");
        await link.scrollIntoViewIfNeeded();
        await expect.poll(() => link.locator("img").evaluate((img: any) => img.complete && img.naturalWidth)).toBeGreaterThan(0);
        await inSight(page, item.locator("figcaption .badge"), `${p.angle}'s verdict`);
        if (n === 0) {
          expect(await item.locator(".photo-findings").count(), p.angle).toBe(0);
          continue;
        }
        const badge = item.locator(".photo-findings");
        await inSight(page, badge, `${p.angle}'s count of findings`);
        // "2 findings" on the photo; the link's name says "Front photo, with 2 findings".
        expect(await badge.textContent()).toBe(`, with ${n} finding${n === 1 ? "" : "s"}`);
        expect(await badge.locator(".visually-hidden").textContent()).toBe(", with ");
        // The count sits on the photo.
        const [b, img] = [(await badge.boundingBox())!, (await link.locator("img").boundingBox())!];
        expect(b.x >= img.x && b.y >= img.y && b.x + b.width <= img.x + img.width && b.y + b.height <= img.y + img.height).toBe(true);
        expect(await link.getAttribute("title")).toBe("Open full size");
      }
      // On the phone, two photos a row.
      if (phone) {
        const [a, b] = [(await items.nth(0).boundingBox())!, (await items.nth(1).boundingBox())!];
        expect(b.y).toBe(a.y);
        expect(b.x).toBeGreaterThan(a.x + a.width);
      }
      // Each webhook's delivery attempts: a line that wraps on the phone, its status code in sight.
      const attempts = page.locator("table.attempts tbody tr");
      expect(await attempts.count()).toBeGreaterThanOrEqual(4);
      await inSight(page, attempts.first().locator("td").nth(2), "an attempt's status code");
      expect(await attempts.first().locator("td").nth(2).textContent()).toMatch(/200$/);
      const roles = await axRoles(page);
      expect(roles.columnheader, "the findings' and the attempts' column headers").toBeGreaterThanOrEqual(10);
      expect(roles.cell, "the findings' cells").toBeGreaterThanOrEqual(report.findings.length * 5);
      await fits(page, viewport, "inspection-cards");
      // The laptop's page for docs/capture-and-dashboard.md: the report, its findings and photos first.
      if (!phone)
        await sharp(await page.screenshot({ fullPage: true, clip: { x: 0, y: 0, width: 1280, height: 1800 } }))
          .png({ palette: true })
          .toFile(join(DOCS, "dashboard-inspection.png"));
      if (phone) {
        await page.evaluate(() => (globalThis as any).scrollTo(0, 0));
        await page.locator("#findings-title").scrollIntoViewIfNeeded();
        shots.findings = await page.screenshot();
        await page.locator("#photos-title").evaluate((h: any) => h.scrollIntoView({ block: "start" }));
        shots.photos = await page.screenshot();
      }
      expect(tab.problems).toEqual([]);
    }, 60_000);

    it(`lists the API keys as ${phone ? "cards" : "rows"}, every column's value in sight`, async () => {
      await page.goto(`${svc.url}/dashboard/test/keys`);
      // A new key (its notice, shown once), then that key revoked: an active key that was used, and a revoked one.
      await page.getByRole("button", { name: "Create test key" }).click();
      const created = (await page.locator("#created-key").textContent())!;
      expect(created).toMatch(/^sk_test_/);
      await fits(page, viewport, "keys-created");
      page.once("dialog", (dialog) => dialog.accept());
      await page.getByRole("button", { name: `Revoke key ending ${created.slice(-4)}` }).click();
      await page.waitForURL("**/dashboard/test/keys");
      const rows = page.locator("table.keys tbody tr");
      const n = await everyValueInSight(page, "keys", phone);
      expect(n).toBeGreaterThanOrEqual(2);
      const revoked = rows.filter({ hasText: `…${created.slice(-4)}` });
      expect(await revoked.locator("td.status").textContent()).toMatch(/^revoked /);
      expect(await revoked.getByRole("button").count()).toBe(0);
      const used = rows.filter({ hasText: `…${key.slice(-4)}` });
      expect(await used.locator("td.used").textContent()).not.toContain("never");
      await inSight(page, used.getByRole("button", { name: `Roll key ending ${key.slice(-4)}` }), "Roll");
      await inSight(page, used.getByRole("button", { name: `Revoke key ending ${key.slice(-4)}` }), "Revoke");
      // Still a table to a screen reader, every cell kept, a revoked key's empty actions too.
      const roles = await axRoles(page);
      expect(roles.columnheader, "column headers").toBe(5);
      expect(roles.row, "rows: the header's and each key's").toBe(n + 1);
      expect(roles.cell, "cells").toBe(n * 5);
      await fits(page, viewport, "keys-cards");
      if (phone) {
        await page.evaluate(() => (globalThis as any).scrollTo(0, 0));
        shots.keys = await page.screenshot();
      }
    });

    it(`lists the team as ${phone ? "cards" : "rows"} and makes an invitation link that fits`, async () => {
      await page.getByRole("navigation", { name: "Sections" }).getByRole("link", { name: "Team" }).click();
      await page.waitForURL("**/dashboard/test/team");
      const n = await everyValueInSight(page, "team", phone);
      expect(n).toBeGreaterThanOrEqual(2);
      await inSight(page, page.locator("table.team td.email", { hasText: LONG_EMAIL }), "the long address");
      const roles = await axRoles(page);
      expect(roles.columnheader, "column headers").toBe(2);
      expect(roles.cell, "cells").toBe(n * 2);
      await page.getByLabel("Email").fill(`new.${viewport}.colleague@rotterdam-harbour-insurance.example`);
      await page.getByRole("button", { name: "Create invitation link" }).click();
      await inSight(page, page.locator("#invite-link"), "the invitation link");
      await fits(page, viewport, "team-cards");
      if (phone) shots.team = await page.screenshot();
    });

    it("shows the webhook signing secret and a test event's answer within the window", async () => {
      await page.getByRole("navigation", { name: "Sections" }).getByRole("link", { name: "Webhooks" }).click();
      await page.waitForURL("**/dashboard/test/webhooks");
      await page.getByRole("button", { name: "Reveal" }).click();
      await inSight(page, page.locator("#signing-secret"), "the signing secret");
      await page.getByLabel("Endpoint URL").fill(`${receiver.url}/a-long-path/of-the-team-s-own-receiver/on-their-machine`);
      await page.getByRole("button", { name: "Send test event" }).click();
      const answer = page.getByRole("status").filter({ hasText: "Event" });
      await inSight(page, answer.locator(".badge"), "the test event's verdict");
      expect(await answer.locator(".badge").textContent()).toBe("delivered");
      await fits(page, viewport, "webhooks");
      expect(tab.problems).toEqual([]);
    });
  });
}

describe("docs/dashboard-phone-account.png", () => {
  it("puts the phone's keys and team side by side", async () => {
    await sideBySide([shots.keys, shots.team], "dashboard-phone-account.png");
  });
});

/** Phone screenshots side by side, at half the phone's pixel density in a palette, to keep the file small; nothing if the phone's tests failed (they say why). */
async function sideBySide(parts: (Buffer | undefined)[], file: string) {
  if (parts.some((p) => !p)) return;
  const gap = 24;
  const meta = await sharp(parts[0]!).metadata();
  const [w, h] = [meta.width!, meta.height!];
  const width = w * parts.length + gap * (parts.length - 1);
  const side = await sharp({ create: { width, height: h, channels: 3, background: "#d8dee8" } })
    .composite(parts.map((input, i) => ({ input: input!, left: i * (w + gap), top: 0 })))
    .png()
    .toBuffer();
  await sharp(side)
    .resize({ width: Math.round(width / 2) })
    .png({ palette: true })
    .toFile(join(DOCS, file));
}

describe("docs/dashboard-phone.png", () => {
  it("puts the phone's list, findings and photos side by side", async () => {
    await sideBySide([shots.list, shots.findings, shots.photos], "dashboard-phone.png");
  });
});
