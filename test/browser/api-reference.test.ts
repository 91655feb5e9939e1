import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { axeViolations, DESKTOP, launch, shot, watchedPage } from "../helpers/browser.ts";
import { startService, type TestService } from "../helpers/service.ts";

/**
 * The first hour's pages in Debian's Chromium: `/` leads to the dashboard, the favicon is there,
 * and /docs renders the OpenAPI document under its own policy, every byte from this origin.
 */
let svc: TestService;
let browser: Browser;

beforeAll(async () => {
  [svc, browser] = await Promise.all([startService(), launch("none")]);
}, 90_000);
afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

it("/docs renders every operation of the OpenAPI document from this origin alone, under its CSP", async () => {
  const { context, page, problems } = await watchedPage(browser, DESKTOP);
  const origins = new Set<string>();
  page.on("request", (r) => origins.add(new URL(r.url()).origin));
  const answer = await page.goto(`${svc.url}/docs`);
  expect(answer!.headers()["content-security-policy"]).toContain("script-src 'self'");
  type Operations = Record<string, Record<string, { summary: string }>>;
  const document = (await (await fetch(`${svc.url}/v1/openapi.json`)).json()) as { paths: Operations; webhooks: Operations };
  // Each operation and each webhook (the events a receiver gets) by its summary.
  const summaries = [document.paths, document.webhooks].flatMap((operations) =>
    Object.values(operations).flatMap((ops) => Object.values(ops).map((op) => op.summary)),
  );
  expect(summaries.length).toBeGreaterThan(25);
  await page.getByText(summaries[0]!, { exact: true }).first().waitFor();
  const shown = await page.locator(".opblock-summary-description").allTextContents();
  expect(shown.toSorted()).toEqual(summaries.toSorted());
  await shot(page, "api-reference");
  expect([...origins]).toEqual([svc.url]);
  expect(problems).toEqual([]);
  // Swagger UI's own markup is not ours to mend; what it leaves is listed, not hidden.
  const violations = await axeViolations(page);
  console.log(`axe on /docs: ${violations.length ? violations.join("\n") : "none"}`);
  await context.close();
});

it("/ leads to the dashboard's sign-in, and the favicon is an icon", async () => {
  const { context, page, problems } = await watchedPage(browser, DESKTOP);
  await page.goto(svc.url);
  expect(new URL(page.url()).pathname).toBe("/dashboard/sign-in");
  const icon = await fetch(`${svc.url}/favicon.ico`);
  expect(icon.headers.get("content-type")).toBe("image/x-icon");
  const bytes = Buffer.from(await icon.arrayBuffer());
  expect([bytes.readUInt16LE(2), bytes.readUInt16LE(4)]).toEqual([1, 1]);
  expect(bytes.subarray(22, 26).toString("latin1")).toBe("\x89PNG");
  expect(problems).toEqual([]);
  await context.close();
});
