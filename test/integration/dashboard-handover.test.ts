import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_MODELS } from "../../core/runtime/config.ts";
import { DashboardClient } from "../helpers/dashboard-client.ts";
import { readPdf } from "../helpers/pdf-text.ts";
import { DAMAGE_VALID, DAMAGED_CASES } from "../helpers/photos.ts";
import { OTHER_VALID_VIN, startService, type TestService, VALID_VIN, withModels } from "../helpers/service.ts";
import { create, walkaround } from "../helpers/walkaround.ts";

/**
 * The rental handover in the dashboard (issue 32), over real HTTP with the models: a pick-up with a
 * shattered windscreen, a return with the same windscreen and a flat tyre since. The return's page
 * compares the two angle by angle and marks the tyre new and the windscreen there before; the
 * pick-up's page links to the return; the list finds the vehicle's inspections by VIN; the PDF and
 * the shared link say what is new since the pick-up.
 */
const photo = (i: number) => ({
  angle: DAMAGED_CASES[i]!.angle,
  bytes: readFileSync(join(DAMAGE_VALID, "images", DAMAGED_CASES[i]!.file)),
});
const words = (s: string) => s.replaceAll("_", " ");
/** A finding as the page and the PDF name it: "tire flat on the wheel, moderate". */
const named = (f: any) => `${words(f.type)}${f.part ? ` on the ${words(f.part)}` : ""}, ${f.severity}`;
/** A timestamp of the API as the dashboard writes it: "2026-11-27 04:15 UTC". */
const minutes = (at: string) => `${at.replace("T", " ").slice(0, 16)} UTC`;

describe.skipIf(!existsSync(DEFAULT_MODELS.damage))("a handover in the dashboard: pick-up and return compared", () => {
  let svc: TestService;
  let key: string;
  let desk: DashboardClient;
  let pickUp: string;
  let back: string;
  let other: string;
  let before: any;
  let after: any;
  /** When the pick-up was completed, as the marks say it. */
  let then: string;
  const page = async (path: string) => {
    const res = await desk.get(path);
    expect(res.status, path).toBe(200);
    return res.text();
  };

  beforeAll(async () => {
    svc = await startService(withModels);
    key = await svc.key("test", "acme");
    desk = await DashboardClient.signedIn(svc, "desk@acme.test", "acme");
    const p = await create(svc, key, { reference: "rental-pickup" });
    const done = await walkaround(svc, key, p, { over: [photo(0)] });
    pickUp = p.id;
    then = minutes(done.completed_at);
    const r = await create(svc, key, { reference: "rental-return", baseline_inspection: pickUp });
    await walkaround(svc, key, r, { over: [photo(0), photo(1)] });
    back = r.id;
    other = (await create(svc, key, { reference: "other-car", vehicle: { vin: OTHER_VALID_VIN } })).id;
    before = await (await svc.api(key, `/v1/inspections/${pickUp}/report`)).json();
    after = await (await svc.api(key, `/v1/inspections/${back}/report`)).json();
    expect(after.comparison.new.length).toBeGreaterThan(0);
    expect(after.comparison.preexisting.length).toBeGreaterThan(0);
  }, 240_000);
  afterAll(() => svc?.close());

  it("shows the return compared with the pick-up: a link to it, the counts, each finding marked new or there before", async () => {
    const html = await page(`/dashboard/test/inspections/${back}`);
    expect(html).toContain(`Compared with <a href="/dashboard/test/inspections/${pickUp}">rental-pickup</a> of ${then}</h2>`);
    const news = after.comparison.new.length;
    expect(html).toContain(`<span class="badge since-new">${news} new damage${news === 1 ? "" : "s"}</span>`);
    expect(html).toContain(`<h3 id="new-since-title">New since ${then}</h3>`);
    const byId = new Map(after.findings.map((f: any) => [f.id, f]));
    const newSince = html.slice(html.indexOf('id="new-since-title"'), html.indexOf("Angle by angle"));
    for (const id of after.comparison.new) {
      const worse = after.comparison.worsened.some((w: any) => w.finding === id);
      const mark = worse ? `Worse than at ${then}` : "New";
      expect(newSince).toContain(
        `<strong>${named(byId.get(id))}</strong> <span class="badge since-${worse ? "worsened" : "new"}">${mark}</span>`,
      );
    }
    const tyres = after.findings.filter((f: any) => f.type === "tire_flat");
    expect(tyres.length).toBeGreaterThan(0);
    for (const t of tyres) expect(after.comparison.new).toContain(t.id);
    const pre = after.comparison.preexisting.length;
    expect(newSince).toContain(`${pre} finding${pre === 1 ? " was" : "s were"} there at ${then} already`);
    // The findings table marks every finding against the pick-up too.
    const table = html.slice(html.indexOf('<table class="findings">'), html.indexOf("</table>", html.indexOf('<table class="findings">')));
    expect(table).toContain('<th scope="col">Before and after</th>');
    expect(table.match(/class="badge since-preexisting">Was there at [^<]+</g)).toHaveLength(pre);
    expect(table.match(/class="badge since-(new|worsened)">/g)).toHaveLength(news);
  });

  it("puts each angle of the pick-up beside the return's, the angle with the new tyre outlined, every photo served", async () => {
    const html = await page(`/dashboard/test/inspections/${back}`);
    const pairs = [...html.matchAll(/<li class="pair( has-new)?">\s*<h4>([^<]+)/g)].map(([, isNew, name]) => ({
      name: name!.trim(),
      isNew: !!isNew,
    }));
    expect(pairs.map((p) => p.name)).toEqual(["Front", "Front left", "Left", "Rear left", "Rear", "Rear right", "Right", "Front right"]);
    expect(pairs.find((p) => p.name === "Rear right")!.isNew).toBe(true);
    expect(pairs.find((p) => p.name === "Front")!.isNew).toBe(false);
    for (const side of [before, after]) {
      for (const p of side.photos.filter((x: any) => x.angle !== "vin")) {
        const src = `/dashboard/test/media/${p.media_id}.jpg`;
        expect(html, `${p.angle} of ${side.inspection_id}`).toContain(`<img class="thumb pair-thumb" src="${src}"`);
      }
    }
    const front = before.photos.find((p: any) => p.angle === "front");
    expect(html).toContain(`alt="Front, at ${then}"`);
    const served = await desk.get(`/dashboard/test/media/${front.media_id}.jpg`);
    expect([served.status, served.headers.get("content-type")]).toEqual([200, "image/jpeg"]);
    // Under the pick-up's front photo, its windscreen; under the return's, the same marked as there before.
    const at = html.indexOf("<h4>Front</h4>");
    const frontPair = html.slice(at, html.indexOf('<li class="pair', at));
    const shatter = before.findings.find((f: any) => f.type === "glass_shatter");
    expect(frontPair).toContain(named(shatter));
    expect(frontPair).toContain(`<span class="badge since-preexisting">Was there at ${then}</span>`);
  });

  it("links the pick-up to the return that uses it as its baseline, and both to the vehicle's history", async () => {
    const html = await page(`/dashboard/test/inspections/${pickUp}`);
    expect(html).toContain('<h2 id="compared-by-title">Used as the baseline of</h2>');
    expect(html).toContain(`<a href="/dashboard/test/inspections/${back}">rental-return</a>`);
    expect(html).toContain(`<span class="badge since-new">${after.comparison.new.length} new</span>`);
    // The pick-up itself has no baseline: no comparison on its page.
    expect(html).not.toContain("Compared with");
    expect(html).not.toContain("Before and after");
    for (const id of [pickUp, back])
      expect(await page(`/dashboard/test/inspections/${id}`)).toContain(`/dashboard/test/inspections?vin=${VALID_VIN}"`);
  });

  it("narrows the list to one vehicle by its VIN, typed in lower case with spaces too", async () => {
    const ids = (html: string) => [...html.matchAll(/<a href="\/dashboard\/test\/inspections\/(insp_[^"]+)">/g)].map((m) => m[1]);
    const all = ids(await page("/dashboard/test/inspections"));
    expect(all).toEqual(expect.arrayContaining([pickUp, back, other]));
    const vehicle = await page(`/dashboard/test/inspections?vin=${VALID_VIN}`);
    expect(ids(vehicle)).toEqual([back, pickUp]);
    expect(vehicle).toContain(`<input name="vin" value="${VALID_VIN}"`);
    expect(vehicle).toContain(`${after.comparison.new.length} new</span> since its baseline`);
    expect(ids(await page(`/dashboard/test/inspections?vin=${encodeURIComponent(` ${VALID_VIN.toLowerCase()} `)}`))).toEqual([
      back,
      pickUp,
    ]);
    expect(ids(await page(`/dashboard/test/inspections?vin=${OTHER_VALID_VIN}`))).toEqual([other]);
    expect(await page("/dashboard/test/inspections?vin=WVWZZZ1JZXW000001")).toContain("No inspections match.");
  });

  it("prints a New since section in the PDF: the new findings by number, the worse ones with what they were, the pre-existing count", async () => {
    const res = await desk.get(`/dashboard/test/inspections/${back}/report.pdf`);
    expect(res.status).toBe(200);
    const text = (await readPdf(Buffer.from(await res.arrayBuffer()))).text.join("\n");
    expect(text).toContain(`New since ${then}`);
    expect(text).toContain(`Compared with inspection ${pickUp} (rental-pickup) of ${then}.`);
    const news = after.comparison.new.length;
    expect(text).toContain(`${news} new finding${news === 1 ? "" : "s"}:`);
    for (const [i, f] of after.findings.entries()) {
      if (after.comparison.new.includes(f.id)) expect(text).toContain(`Finding ${i + 1}: ${named(f)}`);
    }
    for (const w of after.comparison.worsened) {
      expect(text).toContain(`Then: ${named(before.findings.find((f: any) => f.id === w.baseline_finding))}`);
    }
    const pre = after.comparison.preexisting.length;
    expect(text).toContain(`${pre} finding${pre === 1 ? " was" : "s were"} there at ${then} already (pre-existing).`);
    // The pick-up's PDF has nothing to compare.
    const first = await desk.get(`/dashboard/test/inspections/${pickUp}/report.pdf`);
    expect((await readPdf(Buffer.from(await first.arrayBuffer()))).text.join("\n")).not.toContain("New since");
  });

  it("says the same on a shared link, without opening the pick-up's photos to it", async () => {
    const shared = await desk.post(`/dashboard/test/inspections/${back}/share`, { days: "1" }, `/dashboard/test/inspections/${back}`);
    expect(shared.status).toBe(200);
    const link = /<code id="share-link" class="secret">([^<]+)<\/code>/.exec(await shared.text())![1]!;
    const html = await (await fetch(link)).text();
    expect(html).toContain(`<h2 id="new-since-title">New since ${then}</h2>`);
    expect(html).toContain(`Compared with the inspection <span class="mono">${pickUp}</span> (rental-pickup) of ${then}.`);
    for (const id of after.comparison.new)
      expect(html).toContain(`<strong>${named(after.findings.find((f: any) => f.id === id))}</strong>`);
    // Told in words only: no link to the pick-up, and the link opens none of its photos.
    expect(html).not.toContain(`/inspections/${pickUp}`);
    const token = new URL(link).pathname.split("/")[2];
    expect((await fetch(`${svc.url}/r/${token}/media/${before.photos[0].media_id}.jpg`)).status).toBe(404);
  });

  it("says a return not yet processed will be compared; after a review rejects the new damage, nothing new is left", async () => {
    const pending = await create(svc, key, { reference: "rental-return-2", baseline_inspection: pickUp });
    const html = await page(`/dashboard/test/inspections/${pending.id}`);
    expect(html).toContain(`Compared with <a href="/dashboard/test/inspections/${pickUp}">rental-pickup</a> of ${then}</h2>`);
    expect(html).toContain("once its photos are processed");

    const reviewed = await svc.api(key, `/v1/inspections/${back}/review`, {
      method: "POST",
      json: { decisions: after.comparison.new.map((id: string) => ({ finding: id, action: "reject" })) },
    });
    expect(reviewed.status).toBe(200);
    const now = await page(`/dashboard/test/inspections/${back}`);
    expect(now).toContain('<span class="badge since-none">No new damage</span>');
    expect(now).not.toContain('<li class="pair has-new">');
  });
});
