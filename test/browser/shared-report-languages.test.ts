import sharp from "sharp";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditDashboardPage, DESKTOP, launch, PHONE, watchedPage } from "../helpers/browser.ts";
import { DashboardClient } from "../helpers/dashboard-client.ts";
import { startService, type TestService } from "../helpers/service.ts";
import { create, walkaround } from "../helpers/walkaround.ts";

/**
 * A shared report in the customer's language and the account's branding (issue 33, items 2 and 3),
 * in Chromium at 390×844 and 1280×800 with a German browser: the page in the inspection's Polish,
 * the accent colour applied from the <style> the CSP allows by its hash (no violation), the logo
 * loaded, axe-core clean and nothing wider than the window; then German by its language link.
 */
const ACCENT = "#7c2d12";

describe("a shared report in Chromium, in Polish, branded", () => {
  let svc: TestService;
  let browser: Browser;
  let link: string;

  beforeAll(async () => {
    [svc, browser] = await Promise.all([startService(), launch("none")]);
    const staff = await DashboardClient.signedIn(svc, "share@acme.test", "acme");
    const form = new FormData();
    form.set("display_name", "Żółć Ubezpieczenia");
    form.set("accent_color", ACCENT);
    const logo = await sharp({ create: { width: 800, height: 200, channels: 3, background: ACCENT } })
      .png()
      .toBuffer();
    form.set("logo", new File([new Uint8Array(logo)], "logo.png", { type: "image/png" }));
    expect((await staff.postMultipart("/dashboard/test/settings/branding", form, "/dashboard/test/settings")).status).toBe(303);
    const key = await svc.key("test", "acme");
    const made = await create(svc, key, { capture: { locale: "pl" } });
    expect((await walkaround(svc, key, made)).status).toBe("completed");
    const page = `/dashboard/test/inspections/${made.id}`;
    const shared = await (await staff.post(`${page}/share`, { days: "7" }, page)).text();
    link = /<code id="share-link" class="secret">([^<]+)<\/code>/.exec(shared)![1]!;
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await svc?.close();
  });

  for (const [viewport, options] of [
    ["phone", PHONE],
    ["desktop", DESKTOP],
  ] as const)
    it(`shows it in Polish with the account's logo and colour, axe clean, on the ${viewport}; German by its link`, async () => {
      const { context, page, problems } = await watchedPage(browser, { ...options, locale: "de-DE" });
      try {
        expect((await page.goto(link))!.status()).toBe(200);
        expect(await page.locator("html").getAttribute("lang")).toBe("pl");
        expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Raport stanu pojazdu");
        const download = page.getByRole("link", { name: "Pobierz PDF" });
        expect(await download.evaluate((a) => (globalThis as any).getComputedStyle(a).backgroundColor)).toBe("rgb(124, 45, 18)");
        const logo = page.locator("img.brand-logo");
        expect(await logo.getAttribute("alt")).toBe("Żółć Ubezpieczenia");
        expect(await logo.evaluate((img: any) => img.complete && img.naturalWidth)).toBe(480);
        await auditDashboardPage(page, viewport, "shared-report-pl");

        await page.getByRole("navigation", { name: "Język" }).getByRole("link", { name: "Deutsch" }).click();
        await page.waitForURL(/\?lang=de$/);
        expect(await page.locator("html").getAttribute("lang")).toBe("de");
        expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Zustandsbericht");
        await auditDashboardPage(page, viewport, "shared-report-de");
        expect(problems).toEqual([]);
      } finally {
        await context.close();
      }
    }, 60_000);
});
