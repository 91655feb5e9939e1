import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PDFDict, PDFDocument, PDFName, PDFRawStream } from "pdf-lib";
import type { Browser, BrowserContextOptions, Page } from "playwright-core";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUser } from "../../bin/commands/users.ts";
import { axeViolations, DASHBOARD_ARTIFACTS, DESKTOP, launch, PHONE, shot, watchedPage } from "../helpers/browser.ts";
import { DATASETS } from "../helpers/photos.ts";
import { startService, type TestService, VALID_VIN, withModels } from "../helpers/service.ts";
import { captureBase, confirmVin, photograph, submit } from "../helpers/walkaround.ts";
import { type Received, until, WebhookReceiver } from "../helpers/webhook-receiver.ts";

/**
 * The dashboard in Debian's Chromium against the whole service (damage models included) and a real
 * webhook receiver: a person signs in, makes a key and an inspection, reads its findings, resends a
 * webhook, rotates the signing secret, downloads the PDF and shares the report. Every page visited is
 * screenshotted into test-artifacts/dashboard/ and audited with axe-core under the page's own strict
 * CSP, at a laptop's width and then, on a shorter path, a phone's.
 */

const ACCOUNT = "acme";
const PASSWORD = "a long enough dashboard password";
// Two of damage-detection.test.ts's photos (car-damage/valid, never trained on) on which the shipped
// model finds a glass shatter and a flat tyre; the other angles are clean cars.
const DAMAGED: Record<string, string> = {
  front: "000314_jpg.rf.6514763b42e3ef194ced547bc7176592.jpg",
  rear_right: "001078_jpg.rf.e1f47a21d8b6ec3c11540eddd018192a.jpg",
};

let svc: TestService;
let receiver: WebhookReceiver;
let browser: Browser;
/** What the desktop run leaves for the phone run: its completed inspection, with findings. */
let completedId: string | undefined;

beforeAll(async () => {
  [svc, receiver, browser] = await Promise.all([startService(withModels), new WebhookReceiver().start(), launch("none")]);
}, 90_000);
afterAll(async () => {
  await browser?.close();
  await receiver?.close();
  await svc?.close();
});

/**
 * A fresh browser context at `options`, with a page that records what must not happen: a console
 * error, an uncaught exception, a CSP violation, or a dashboard response without the strict CSP.
 * Confirmation prompts (revoke, rotate) are accepted.
 */
async function openPage(options: BrowserContextOptions) {
  const { context, page, problems } = await watchedPage(browser, options);
  context.setDefaultTimeout(10_000);
  page.on("dialog", (d) => d.accept());
  let checked = 0;
  page.on("response", (r) => {
    const { pathname } = new URL(r.url());
    if (!pathname.startsWith("/dashboard") && !pathname.startsWith("/r/")) return;
    checked++;
    const csp = r.headers()["content-security-policy"] ?? "";
    if (!/(^|; )script-src 'self'(;|$)/.test(csp) || csp.includes("unsafe-inline") || !csp.includes("default-src 'none'"))
      problems.push(`${r.status()} ${pathname} without the strict CSP: ${csp || "none"}`);
  });
  return { context, page, problems, checked: () => checked };
}

/** A full-page screenshot as <viewport>-<name>.png, and no axe violation (a soft failure, so every page is audited). */
async function audit(page: Page, viewport: string, name: string) {
  await shot(page, `${viewport}-${name}`, DASHBOARD_ARTIFACTS);
  // Reflow (WCAG 1.4.10): nothing makes the page wider than the window, on a phone either.
  const widths = await page.evaluate(() => [(globalThis as any).document.documentElement.scrollWidth, (globalThis as any).innerWidth]);
  expect.soft(widths[0], `the ${viewport} ${name} page's width`).toBeLessThanOrEqual(widths[1]!);
  const violations = await axeViolations(page);
  expect.soft(violations, `axe on the ${viewport} ${name} page (${page.url()}):\n${violations.join("\n")}`).toEqual([]);
}

async function signIn(page: Page, viewport: string, email: string) {
  await createUser(svc.config, email, ACCOUNT, PASSWORD);
  await page.goto(`${svc.url}/dashboard/sign-in`);
  await audit(page, viewport, "sign-in");
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(`${svc.url}/dashboard/test/inspections`);
  // Chromium takes the __Host- cookie over http://127.0.0.1, which it counts as a secure origin.
  const cookie = (await page.context().cookies()).find((c) => c.name === "__Host-vi_session");
  expect(cookie).toMatchObject({ secure: true, httpOnly: true, sameSite: "Lax", path: "/" });
}

/** Follows a link of the side navigation. */
async function section(page: Page, name: string) {
  await page.getByRole("navigation", { name: "Sections" }).getByRole("link", { name, exact: true }).click();
  await page.waitForURL((url) => url.pathname.startsWith(`/dashboard/test/${name === "API keys" ? "keys" : name.toLowerCase()}`));
}

/** Creates a test key on the keys page; the key is shown once, with its copy button. */
async function createKey(page: Page, viewport: string): Promise<string> {
  await section(page, "API keys");
  await page.getByRole("button", { name: "Create test key" }).click();
  const key = (await page.locator("#created-key").textContent())!.trim();
  expect(key).toMatch(/^sk_test_/);
  expect(await page.locator('button[data-copy="created-key"]').count()).toBe(1);
  await audit(page, viewport, "keys");
  return key;
}

const api = (key: string, path: string, init?: RequestInit & { json?: unknown }) => svc.api(key, path, init);

/** The customer's walkaround through the capture API: two damaged angles, the VIN confirmed, sent. */
async function capture(captureUrl: string) {
  const m = captureBase(captureUrl);
  const over = Object.entries(DAMAGED).map(([angle, file]) => ({
    angle,
    bytes: readFileSync(join(DATASETS, "car-damage/valid/images", file)),
  }));
  await photograph(m, { open: true, over });
  await confirmVin(m);
  await submit(m);
}

/** Every image in `selector` is scrolled to and has loaded (lazy ones included). */
async function expectImagesLoaded(page: Page, selector: string) {
  const images = page.locator(selector);
  const count = await images.count();
  for (let i = 0; i < count; i++) {
    await images.nth(i).scrollIntoViewIfNeeded();
    await expect
      .poll(() => images.nth(i).evaluate((img: any) => img.complete && img.naturalWidth), {
        message: `image ${i} of ${selector}`,
      })
      .toBeGreaterThan(0);
  }
  return count;
}

/** The deliveries the receiver got with this webhook-id. */
const deliveriesOf = (eventId: string): Received[] => receiver.received.filter((r) => r.headers["webhook-id"] === eventId);

const verify = (secret: string, r: Received) =>
  new Webhook(secret).verify(r.body, {
    "webhook-id": r.headers["webhook-id"] as string,
    "webhook-timestamp": r.headers["webhook-timestamp"] as string,
    "webhook-signature": r.headers["webhook-signature"] as string,
  }) as { id: string; type: string; data: { id: string } };

/** Counts the image XObjects on each page of a PDF. */
async function pdfImages(bytes: Buffer) {
  const pdf = await PDFDocument.load(bytes);
  let images = 0;
  for (const page of pdf.getPages()) {
    const xobjects = page.node.Resources()?.lookupMaybe(PDFName.of("XObject"), PDFDict);
    for (const [, ref] of xobjects?.entries() ?? []) {
      const stream = pdf.context.lookup(ref);
      if (stream instanceof PDFRawStream && stream.dict.get(PDFName.of("Subtype")) === PDFName.of("Image")) images++;
    }
  }
  return { pages: pdf.getPageCount(), images };
}

describe("the dashboard at a laptop's width (1280×800)", () => {
  const viewport = "desktop";
  let tab: Awaited<ReturnType<typeof openPage>>;
  let page: Page;
  let key: string;
  let id: string;
  let report: { grade: string; findings: { type: string }[] };
  beforeAll(async () => {
    tab = await openPage(DESKTOP);
    page = tab.page;
  });
  afterAll(() => tab?.context.close());

  it("signs in to the test inspections, with the session in a __Host- cookie", async () => {
    await signIn(page, viewport, "desk@example.com");
    await audit(page, viewport, "inspections");
  });

  it("creates a test key, shown once with a copy button, that works over the API", async () => {
    key = await createKey(page, viewport);
    expect((await api(key, "/v1/inspections")).status).toBe(200);
  });

  it("creates an inspection from the form and shows its capture link and QR code", async () => {
    await section(page, "Inspections");
    await page.getByRole("link", { name: "New inspection" }).click();
    await page.waitForURL("**/dashboard/test/inspections/new");
    await audit(page, viewport, "inspection-new");
    await page.getByLabel(/^Reference/).fill("CLAIM-2041");
    await page.getByLabel("VIN", { exact: true }).fill(VALID_VIN);
    await page.getByLabel(/^Notify URL/).fill(receiver.url);
    await page.getByRole("button", { name: "Create inspection" }).click();
    await page.waitForURL(/\/dashboard\/test\/inspections\/insp_[A-Za-z0-9]+$/);
    id = new URL(page.url()).pathname.split("/").pop()!;
    const made = await (await api(key, `/v1/inspections/${id}`)).json();
    expect(made).toMatchObject({ reference: "CLAIM-2041", notify_url: receiver.url, status: "created" });
    expect(await page.locator("main").textContent()).toContain(made.capture_url);
    expect(await page.locator("main svg").count()).toBeGreaterThan(0);
    await shot(page, `${viewport}-inspection-created`, DASHBOARD_ARTIFACTS);

    // The customer's photos go in through the capture API; processing finds the damage.
    await capture(made.capture_url);
    const done = await until(
      "completed",
      async () => (await api(key, `/v1/inspections/${id}`)).json(),
      (i: any) => i.status !== "processing" && i.status !== "in_progress",
      90_000,
    );
    expect(done.status).toBe("completed");
    report = await (await api(key, `/v1/inspections/${id}/report`)).json();
    expect(report.findings.length).toBeGreaterThan(0);
    completedId = id;
  }, 120_000);

  it("shows the completed inspection's grade and findings, each evidence photo loaded; a photo zooms", async () => {
    // Reloaded once the completed event is delivered, so its delivery shows too.
    await until(
      "the completed event delivered",
      () => receiver.events().some((e) => e.type === "inspection.completed" && e.data.id === id),
      (delivered) => delivered,
    );
    await page.reload();
    const text = await page.locator("main").textContent();
    expect(text).toContain(report.grade);
    for (const f of report.findings) expect(text).toContain(f.type.replaceAll("_", " "));
    // Each finding's evidence photo, and the photos, all load.
    expect(await expectImagesLoaded(page, "table.findings a[data-zoom] img")).toBe(report.findings.length);
    expect(await expectImagesLoaded(page, "a[data-zoom] img")).toBeGreaterThan(report.findings.length);
    const zoom = page.locator("dialog#zoom");
    await page.locator("table.findings a[data-zoom]").first().click();
    await expect.poll(() => zoom.evaluate((d: any) => d.open)).toBe(true);
    await expect.poll(() => zoom.locator("img").evaluate((img: any) => img.naturalWidth)).toBeGreaterThan(0);
    await shot(page, `${viewport}-inspection-zoom`, DASHBOARD_ARTIFACTS);
    await page.keyboard.press("Escape");
    await expect.poll(() => zoom.evaluate((d: any) => d.open)).toBe(false);
    await audit(page, viewport, "inspection");
  });

  it("resends the completed event: the receiver gets the same webhook-id again", async () => {
    const completed = receiver.events().find((e) => e.type === "inspection.completed" && e.data.id === id)!;
    expect(deliveriesOf(completed.id)).toHaveLength(1);
    await page.getByRole("button", { name: "Resend inspection.completed" }).click();
    await page.waitForURL(`**/dashboard/test/inspections/${id}#${completed.id}`);
    await until(
      "the resent delivery",
      () => deliveriesOf(completed.id).length,
      (n) => n >= 2,
    );
  });

  it("downloads the report as a PDF with every finding's photo in it", async () => {
    await page.goto(`${svc.url}/dashboard/test/inspections/${id}`);
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name: /Download PDF/ }).click()]);
    const pdf = readFileSync((await download.path())!);
    writeFileSync(join(DASHBOARD_ARTIFACTS, "report.pdf"), pdf);
    const { pages, images } = await pdfImages(pdf);
    expect(pages).toBeGreaterThanOrEqual(1);
    expect(images).toBeGreaterThanOrEqual(report.findings.length);
  });

  it("makes a share link that opens the report in a browser that never signed in", async () => {
    await page.goto(`${svc.url}/dashboard/test/inspections/${id}`);
    await page.getByRole("button", { name: "Create share link" }).click();
    const shareUrl = (await page.locator("#share-link").textContent())!.trim();
    expect(shareUrl).toMatch(new RegExp(`^${svc.url}/r/[A-Za-z0-9_.-]+$`));
    const stranger = await openPage(DESKTOP);
    try {
      expect(await stranger.context.cookies()).toEqual([]);
      const shared = await stranger.page.goto(shareUrl!);
      expect(shared!.status(), (await stranger.page.locator("main").textContent()) ?? "").toBe(200);
      const text = await stranger.page.locator("main").textContent();
      expect(text).toContain(report.grade);
      for (const f of report.findings) expect(text).toContain(f.type.replaceAll("_", " "));
      expect(await expectImagesLoaded(stranger.page, "table.findings img")).toBe(report.findings.length);
      await audit(stranger.page, viewport, "shared-report");
      expect(stranger.problems).toEqual([]);
    } finally {
      await stranger.context.close();
    }
  });

  it("reveals and rotates the signing secret: the next delivery verifies with the new one only; a test event is delivered", async () => {
    await page.goto(`${svc.url}/dashboard/test/webhooks`);
    await page.getByRole("button", { name: "Reveal" }).click();
    const oldSecret = (await page.locator("#signing-secret").textContent())!.trim();
    expect(oldSecret).toBe(await svc.secret("test", ACCOUNT));
    await page.getByLabel("Keep the old secret signing for").selectOption({ label: "no time: stop it now" });
    await page.getByRole("button", { name: "Rotate secret" }).click();
    await expect.poll(() => page.getByRole("status").first().textContent()).toContain("A new secret is in use");
    const newSecret = (await page.locator("#signing-secret").textContent())!.trim();
    expect(newSecret).toMatch(/^whsec_/);
    expect(newSecret).not.toBe(oldSecret);

    const another = await (
      await api(key, "/v1/inspections", { method: "POST", json: { vehicle: { vin: VALID_VIN }, notify_url: receiver.url } })
    ).json();
    const created = await until(
      "the next inspection's created event",
      () => receiver.received.find((r) => JSON.parse(r.body).data?.id === another.id),
      (r) => r !== undefined,
    );
    expect(verify(newSecret, created!)).toMatchObject({ type: "inspection.created", data: { id: another.id } });
    expect(() => verify(oldSecret, created!)).toThrow();

    await page.getByLabel("Endpoint URL").fill(receiver.url);
    await page.getByRole("button", { name: "Send test event" }).click();
    await expect.poll(() => page.locator("main [role=status] .badge").textContent()).toBe("delivered");
    const test = receiver.received.find((r) => JSON.parse(r.body).type === "webhook.test");
    expect(verify(newSecret, test!).type).toBe("webhook.test");
    await audit(page, viewport, "webhooks");
  });

  it("shows the team, and the list with the graded inspection", async () => {
    await page.goto(`${svc.url}/dashboard/test/team`);
    await audit(page, viewport, "team");
    await section(page, "Inspections");
    if (report) await expect.poll(() => page.locator("table.inspections").textContent()).toContain(report.grade);
    await audit(page, viewport, "inspections");
  });

  it("sent the strict CSP with every dashboard response, and logged no console error or CSP violation", () => {
    expect(tab.checked()).toBeGreaterThan(10);
    expect(tab.problems).toEqual([]);
  });
});

describe("the dashboard on a phone (390×844)", () => {
  const viewport = "phone";

  it("signs in and shows the list, an inspection with its findings, keys and webhooks", async () => {
    const { context, page, problems } = await openPage(PHONE);
    try {
      await signIn(page, viewport, "phone@example.com");
      await audit(page, viewport, "inspections");
      await createKey(page, viewport);
      await section(page, "Webhooks");
      await page.getByRole("button", { name: "Reveal" }).click();
      expect((await page.locator("#signing-secret").textContent())!.trim()).toMatch(/^whsec_/);
      await audit(page, viewport, "webhooks");
      // The desktop run's inspection, opened from the list.
      expect(completedId, "the desktop run's completed inspection").toBeDefined();
      await section(page, "Inspections");
      await page.getByRole("link", { name: "CLAIM-2041" }).click();
      await page.waitForURL(`**/dashboard/test/inspections/${completedId}`);
      expect(await expectImagesLoaded(page, "a[data-zoom] img")).toBeGreaterThan(0);
      await audit(page, viewport, "inspection");
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  }, 90_000);
});
