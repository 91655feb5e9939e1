import { createHmac } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUser } from "../../bin/commands/users.ts";
import { DEFAULT_MODELS } from "../../core/runtime/config.ts";
import { createShareToken } from "../../dashboard/auth/share-links.ts";
import { DATASETS } from "../helpers/photos.ts";
import { startService, type TestService, VALID_VIN, withModels } from "../helpers/service.ts";
import { create, photograph, walkaround } from "../helpers/walkaround.ts";
import { until, WebhookReceiver } from "../helpers/webhook-receiver.ts";

/**
 * The inspection page of the dashboard (GET /dashboard/:env/inspections/:id with its photos, PDF,
 * resend and share forms) and the shared report (/r/<token>), over real HTTP as a browser without
 * scripts would use them: cookies kept by hand, forms posted with their CSRF field.
 */

// Photos from car-damage/valid (never trained on) on which the shipped model finds a glass shatter
// and a flat tyre, as in damage-detection.test.ts; the other angles are clean cars.
const DAMAGED: Record<string, string> = {
  front: "000314_jpg.rf.6514763b42e3ef194ced547bc7176592.jpg",
  rear_right: "001078_jpg.rf.e1f47a21d8b6ec3c11540eddd018192a.jpg",
};
const PASSWORD = "correct horse battery staple";

/** A signed-in person: the cookies a browser would send, and a way to read a form's CSRF token. */
type Person = { get(path: string): Promise<Response>; post(path: string, form: Record<string, string>): Promise<Response> };

async function signIn(svc: TestService, email: string, account: string): Promise<Person> {
  await createUser(svc.config, email, account, PASSWORD);
  const cookies = new Map<string, string>();
  const keep = (res: Response) => {
    for (const line of res.headers.getSetCookie()) {
      const [name, value] = line.split(";")[0]!.split(/=(.*)/) as [string, string];
      cookies.set(name, value);
    }
    return res;
  };
  const cookie = () => [...cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  const get = async (path: string) => keep(await fetch(svc.url + path, { headers: { cookie: cookie() }, redirect: "manual" }));
  const post = async (path: string, form: Record<string, string>) =>
    keep(
      await fetch(svc.url + path, { method: "POST", body: new URLSearchParams(form), headers: { cookie: cookie() }, redirect: "manual" }),
    );
  const signInPage = await (await get("/dashboard/sign-in")).text();
  expect(cookies.has("__Host-vi_csrf")).toBe(true);
  const signedIn = await post("/dashboard/sign-in", { email, password: PASSWORD, _csrf: csrfOf(signInPage) });
  expect(signedIn.status).toBe(303);
  expect(cookies.has("__Host-vi_session")).toBe(true);
  return { get, post };
}

const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)![1]!;

/** Every <img> with a src: its src and alt. */
const imagesOf = (html: string) =>
  [...html.matchAll(/<img\b[^>]*>/g)]
    .map(([tag]) => ({ src: /\ssrc="([^"]*)"/.exec(tag)?.[1], alt: /\salt="([^"]*)"/.exec(tag)?.[1] }))
    .filter((img): img is { src: string; alt: string | undefined } => img.src !== undefined);

/** The page without the labels a table's cards show on a phone (aria-hidden; a laptop has the column headers). */
const unlabelled = (html: string) => html.replaceAll(/<span class="cell-label" aria-hidden="true">[^<]*<\/span>/g, "");

/** The media id of a finding's evidence photo, from its evidence_url. */
const evidenceId = (f: { evidence_url: string }) => new URL(f.evidence_url).pathname.split("/")[3]!;

async function expectJpeg(res: Response, what: string) {
  expect(res.status, what).toBe(200);
  expect(res.headers.get("content-type"), what).toBe("image/jpeg");
  expect(
    Buffer.from(await res.arrayBuffer())
      .subarray(0, 3)
      .toString("hex"),
    what,
  ).toBe("ffd8ff");
}

/** An inspection with a notify_url, captured through the capture API (VIN confirmed), completed. */
async function completedInspection(svc: TestService, key: string, notifyUrl: string): Promise<string> {
  const made = await create(svc, key, { notify_url: notifyUrl });
  const over = Object.entries(DAMAGED).map(([angle, file]) => ({
    angle,
    bytes: readFileSync(join(DATASETS, "car-damage/valid/images", file)),
  }));
  const done = await walkaround(svc, key, made, { open: true, over });
  expect(done.status).toBe("completed");
  return made.id;
}

describe.skipIf(!existsSync(DEFAULT_MODELS.damage))("an inspection's dashboard page and its shared report", () => {
  let svc: TestService;
  let receiver: WebhookReceiver;
  let key: string;
  let staff: Person;
  let id: string;
  let report: any;
  const page = (path = "") => staff.get(`/dashboard/test/inspections/${id}${path}`);

  beforeAll(async () => {
    svc = await startService(withModels);
    receiver = await new WebhookReceiver().start();
    key = await svc.key("test", "acme");
    staff = await signIn(svc, "claims@acme.test", "acme");
    id = await completedInspection(svc, key, receiver.url);
    report = await (await svc.api(key, `/v1/inspections/${id}/report`)).json();
    expect(report.findings.length).toBeGreaterThan(0);
  }, 180_000);
  afterAll(async () => {
    await svc?.close();
    await receiver?.close();
  });

  it("shows the grade, the VIN check, each finding with its evidence photo, and every photo, each served", async () => {
    const res = await page();
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain(`<span class="grade ${report.grade}">${report.grade}</span>`);
    expect(html).toContain(`<dt>Findings</dt><dd>${report.findings.length}</dd>`);
    expect(html).toContain(`<dt>VIN observed</dt><dd class="mono">${VALID_VIN}</dd>`);
    expect(html).toMatch(/<dt>Match<\/dt><dd><span class="badge completed">yes<\/span>/);
    const images = imagesOf(html);
    for (const f of report.findings) {
      const src = `/dashboard/test/media/${evidenceId(f)}.jpg`;
      const img = images.find((i) => i.src === src);
      expect(img, `the evidence of ${f.type}`).toBeDefined();
      expect(img!.alt).toBe(`${f.type.replaceAll("_", " ")}${f.part ? ` on ${f.part.replaceAll("_", " ")}` : ""}, ${f.severity}`);
      expect(html).toContain(`<a data-zoom href="${src}"`);
      expect(html).toContain(`<td>${f.type.replaceAll("_", " ")}</td>`);
    }
    for (const p of report.photos) {
      const name = p.angle === "vin" ? "VIN" : p.angle.replaceAll("_", " ");
      expect(images.find((i) => i.src === `/dashboard/test/media/${p.media_id}.jpg`)?.alt).toBe(`${name} photo`);
    }
    expect(images).toHaveLength(report.findings.length + report.photos.length);
    for (const img of images) await expectJpeg(await staff.get(img.src), img.src);
    // The evidence served is the evidence of the API, boxes drawn, byte for byte.
    const f = report.findings[0];
    const fromApi = Buffer.from(await (await svc.api(key, new URL(f.evidence_url).pathname)).arrayBuffer());
    const fromPage = Buffer.from(await (await staff.get(`/dashboard/test/media/${evidenceId(f)}.jpg`)).arrayBuffer());
    expect(fromPage.equals(fromApi)).toBe(true);
    expect(html).toContain('<dialog id="zoom"');
    expect(html).toContain(`&quot;inspection_id&quot;: &quot;${id}&quot;`);
    // Completed: nothing to cancel, no capture link to show.
    expect(html).not.toContain(`/inspections/${id}/cancel`);
    expect(html).not.toContain('id="capture-link"');
    // Photos need the session: without it, the sign-in.
    expect((await fetch(`${svc.url}${images[0]!.src}`, { redirect: "manual" })).status).toBe(303);
  });

  it("downloads the report as a PDF", async () => {
    expect(await (await page()).text()).toContain(`href="/dashboard/test/inspections/${id}/report.pdf"`);
    const res = await page("/report.pdf");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/pdf");
    expect(res.headers.get("content-disposition")).toBe(`attachment; filename="${id}.pdf"`);
    expect(
      Buffer.from(await res.arrayBuffer())
        .subarray(0, 5)
        .toString("latin1"),
    ).toBe("%PDF-");
  });

  it("shows an open inspection's capture link with a QR code and a cancel button; refuses to share it; cancels it", async () => {
    const made = await (await svc.api(key, "/v1/inspections", { method: "POST", json: { vehicle: { vin: VALID_VIN } } })).json();
    const res = await staff.get(`/dashboard/test/inspections/${made.id}`);
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain(`<code id="capture-link" class="secret">${made.capture_url}</code>`);
    expect(html).toContain('data-copy="capture-link"');
    expect(html).toMatch(/<figure class="qr" role="img" aria-label="[^"]+"><svg [^>]*viewBox="[^"]+"[^>]*>.*<\/svg>\s*<\/figure>/s);
    expect(html).toMatch(new RegExp(`<form method="post" action="/dashboard/test/inspections/${made.id}/cancel" data-confirm="[^"]+">`));
    expect(html).toContain('<span class="badge created">created</span>');
    // Not completed: no report, so nothing to share.
    const share = await staff.post(`/dashboard/test/inspections/${made.id}/share`, { days: "7", _csrf: csrfOf(html) });
    expect(share.status).toBe(409);
    expect(await share.text()).not.toContain("/r/");

    // Canceled through its button: no capture link any more, and why there is no report.
    const canceled = await staff.post(`/dashboard/test/inspections/${made.id}/cancel`, { _csrf: csrfOf(html) });
    expect(canceled.status).toBe(303);
    const after = await (await staff.get(`/dashboard/test/inspections/${made.id}`)).text();
    expect(after).toContain('<span class="badge canceled">canceled</span>');
    expect(after).toMatch(/<h2 id="ended-title">No report<\/h2>\s*<p>Canceled \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC\.<\/p>/);
    expect(after).not.toContain('id="capture-link"');
    expect(after).not.toContain("<svg");
    expect(after).not.toContain(`/inspections/${made.id}/cancel`);
  });

  it("is no page for another account, nor in the other environment", async () => {
    const globex = await signIn(svc, "claims@globex.test", "globex");
    const theirs = await globex.get(`/dashboard/test/inspections/${id}`);
    expect(theirs.status).toBe(404);
    expect(await theirs.text()).not.toContain(VALID_VIN);
    expect((await globex.get(`/dashboard/test/inspections/${id}/report.pdf`)).status).toBe(404);
    expect((await globex.get(`/dashboard/test/media/${report.photos[0].media_id}.jpg`)).status).toBe(404);
    expect((await staff.get(`/dashboard/live/inspections/${id}`)).status).toBe(404);
    expect((await staff.get(`/dashboard/live/media/${report.photos[0].media_id}.jpg`)).status).toBe(404);
    // Their session's form, posted with their own valid CSRF token, resends nothing of ours.
    const [event] = await until(
      "a delivery",
      () => receiver.events(),
      (e) => e.length > 0,
    );
    const theirCsrf = csrfOf(await (await globex.get("/dashboard/test/inspections")).text());
    expect((await globex.post(`/dashboard/test/events/${event!.id}/resend`, { _csrf: theirCsrf })).status).toBe(404);
  });

  it("lists each event with its delivery attempts, and resends one to the receiver", async () => {
    const delivered = await until(
      "five deliveries",
      () => receiver.events(),
      (e) => e.length >= 5,
    );
    const html = await (await page()).text();
    for (const type of ["created", "in_progress", "processing", "completed"]) {
      const e = delivered.find((d) => d.type === `inspection.${type}`)!;
      const article = html.slice(html.indexOf(`<article class="card event" id="${e.id}"`));
      const block = article.slice(0, article.indexOf("</article>"));
      expect(block, e.type).toContain(`<span class="mono">inspection.${type}</span>`);
      expect(block, e.type).toContain('<span class="badge succeeded">succeeded</span>');
      expect(unlabelled(block), e.type).toMatch(/<tr><td>1<\/td><td>[^<]+ UTC<\/td><td>200<\/td><td>\d+ ms<\/td><td>—<\/td><\/tr>/);
      expect(block, e.type).toContain(`action="/dashboard/test/events/${e.id}/resend"`);
    }
    // The timeline: the events oldest first.
    const timeline = html.slice(html.indexOf('<ol class="timeline">'), html.indexOf("</ol>"));
    expect([...timeline.matchAll(/<span class="mono">(inspection\.\w+)<\/span>/g)].map((m) => m[1])).toEqual([
      "inspection.created",
      "inspection.in_progress",
      "inspection.processing",
      "inspection.completed",
      "inspection.review_required",
    ]);

    const completed = delivered.find((d) => d.type === "inspection.completed")!;
    const before = receiver.received.length;
    // Without the form's CSRF token the post is refused and nothing is sent.
    expect((await staff.post(`/dashboard/test/events/${completed.id}/resend`, {})).status).toBe(403);
    const resent = await staff.post(`/dashboard/test/events/${completed.id}/resend`, { _csrf: csrfOf(html) });
    expect(resent.status).toBe(303);
    expect(resent.headers.get("location")).toBe(`/dashboard/test/inspections/${id}#${completed.id}`);
    const again = await until(
      "the resent delivery",
      () => receiver.received.slice(before),
      (r) => r.length > 0,
    );
    expect(again.map((r) => r.headers["webhook-id"])).toEqual([completed.id]);
    const after = await until(
      "the second attempt on the page",
      async () => (await page()).text(),
      (h) => unlabelled(h).includes("<tr><td>2</td>"),
    );
    expect(unlabelled(after.slice(after.indexOf(`id="${completed.id}"`)))).toMatch(/^[\s\S]*?<tr><td>2<\/td><td>[^<]+<\/td><td>200<\/td>/);
  });

  it("shares the report by a link that works without a session, for that inspection's photos only", async () => {
    const html = await (await page()).text();
    expect(html).toMatch(
      /<select name="days">\s*<option value="1">1 day<\/option><option value="7" selected>7 days<\/option><option value="30">30 days<\/option>/,
    );
    const res = await staff.post(`/dashboard/test/inspections/${id}/share`, { days: "1", _csrf: csrfOf(html) });
    expect(res.status).toBe(200);
    const shown = await res.text();
    const url = new RegExp(`<code id="share-link" class="secret">(${svc.url}/r/([A-Za-z0-9_-]+))</code>`).exec(shown);
    expect(url).not.toBeNull();
    const [, link, token] = url! as unknown as [string, string, string];
    expect(shown).toContain('data-copy="share-link"');
    // Not kept anywhere to be shown again.
    expect(await (await page()).text()).not.toContain(token);

    const shared = await fetch(link);
    expect(shared.status).toBe(200);
    expect(shared.headers.get("referrer-policy")).toBe("no-referrer");
    expect(shared.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(shared.headers.get("x-frame-options")).toBe("DENY");
    expect(shared.headers.getSetCookie()).toEqual([]);
    const sharedHtml = await shared.text();
    expect(sharedHtml).toContain(`<span class="grade ${report.grade}">${report.grade}</span>`);
    for (const f of report.findings) expect(sharedHtml).toContain(`<td>${f.type.replaceAll("_", " ")}</td>`);
    expect(sharedHtml).not.toContain("_csrf");
    const images = imagesOf(sharedHtml);
    expect(images).toHaveLength(report.findings.length + report.photos.length);
    for (const f of report.findings) expect(images.map((i) => i.src)).toContain(`/r/${token}/media/${evidenceId(f)}.jpg`);
    for (const img of images) await expectJpeg(await fetch(svc.url + img.src), img.src);
    const pdf = await fetch(`${link}/report.pdf`);
    expect([pdf.status, pdf.headers.get("content-type")]).toEqual([200, "application/pdf"]);

    // Tampered: one character of the inspection id's part changed.
    const tampered = token.slice(0, 10) + (token[10] === "A" ? "B" : "A") + token.slice(11);
    const refused = await fetch(`${svc.url}/r/${tampered}`);
    expect(refused.status).toBe(404);
    const refusedHtml = await refused.text();
    expect(refusedHtml).toContain("There is no such report");
    expect(refusedHtml).not.toMatch(/at .*\.ts:\d+/);
    expect((await fetch(`${svc.url}/r/${tampered}/media/${report.photos[0].media_id}.jpg`)).status).toBe(404);

    // A photo of another inspection of the same account, real (the dashboard serves it), is not the link's.
    const other = await create(svc, key);
    const { front } = await photograph(other, { open: true, angles: ["front"] });
    const otherMedia = front.media_id;
    await expectJpeg(await staff.get(`/dashboard/test/media/${otherMedia}.jpg`), "the other inspection's photo");
    expect((await fetch(`${svc.url}/r/${token}/media/${otherMedia}.jpg`)).status).toBe(404);
  });

  it("answers an expired link with 410", async () => {
    // Signed as the service signs (bin/embedded-services.ts derives the key from the data directory's secret).
    const secret = readFileSync(join(svc.dataDir, "capture-link.key"));
    const signingKey = createHmac("sha256", secret).update("shared-report-links").digest();
    const fresh = createShareToken(signingKey, id, Date.now(), 1).token;
    expect((await fetch(`${svc.url}/r/${fresh}`)).status).toBe(200);
    const stale = createShareToken(signingKey, id, Date.now() - 2 * 24 * 3600_000, 1).token;
    const res = await fetch(`${svc.url}/r/${stale}`);
    expect(res.status).toBe(410);
    expect(await res.text()).toContain("This report link has expired");
    expect((await fetch(`${svc.url}/r/${stale}/report.pdf`)).status).toBe(410);
  });
});
