import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DashboardClient } from "../helpers/dashboard-client.ts";
import { freshPhotos } from "../helpers/photos.ts";
import { startService, type TestService } from "../helpers/service.ts";
import { create, walkaround } from "../helpers/walkaround.ts";

/**
 * The review in the dashboard (issue 29, item 3) over HTTP as a browser without scripts uses it:
 * the queue of reports waiting (oldest first, counted in the navigation), the review page's form
 * posted as plain fields and made into the API's review under the user's email, its mistakes
 * answered on the page, the account's policy set, and nothing of it open to another account or
 * without the form's CSRF token. Without the damage models: a VIN left unconfirmed sends a report
 * to a person, and the findings are the reviewer's.
 */
/** An inspection walked through the capture API and completed with photos of its own (freshPhotos); its VIN confirmed only when told. */
async function completed(svc: TestService, key: string, o: { confirmVin?: boolean; reference?: string } = {}): Promise<string> {
  const made = await create(svc, key, { reference: o.reference });
  expect((await walkaround(svc, key, made, { photos: await freshPhotos(), confirmVin: o.confirmVin === true })).status).toBe("completed");
  return made.id;
}

/** The navigation's count of reports waiting, or null where it shows none. */
const badge = (html: string) =>
  /Review queue <span class="badge review-required">(\d+)<span class="visually-hidden"> waiting<\/span><\/span>/.exec(html)?.[1] ?? null;

/** The inspections the queue lists, in its order. */
const queued = (html: string) => [...html.matchAll(/href="\/dashboard\/test\/inspections\/(insp_[a-z0-9]+)\/review"/g)].map((m) => m[1]);

const errorsOf = (html: string) => {
  const box = /<section class="card review-errors"[\s\S]*?<\/section>/.exec(html)?.[0] ?? "";
  return [...box.matchAll(/<li>([^<]*)<\/li>/g)].map((m) => m[1]!.replaceAll("&#39;", "'"));
};

describe("reviewing in the dashboard", () => {
  let svc: TestService;
  let key: string;
  let staff: DashboardClient;
  let stranger: DashboardClient;
  /** Completed in this order: first and third wait for review, the second does not. */
  let first: string;
  let clean: string;
  let third: string;

  beforeAll(async () => {
    svc = await startService();
    key = await svc.key("test", "acme");
    [staff, stranger] = await Promise.all([
      DashboardClient.signedIn(svc, "claims@acme.test", "acme"),
      DashboardClient.signedIn(svc, "snoop@globex.test", "globex"),
    ]);
    first = await completed(svc, key, { reference: "claim-1" });
    clean = await completed(svc, key, { confirmVin: true, reference: "claim-2" });
    third = await completed(svc, key, { reference: "claim-3" });
  }, 120_000);
  afterAll(() => svc?.close());

  it("lists the reports waiting for review, the longest waiting first, with their count in the navigation", async () => {
    const res = await staff.get("/dashboard/test/reviews");
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(queued(html)).toEqual([first, third]);
    expect(badge(html)).toBe("2");
    expect(html).toContain("2 reports wait for review");
    expect(html).toContain("<li>The VIN was not confirmed on the vehicle</li>");
    expect(html).toContain('<a href="/dashboard/test/reviews" aria-current="page">Review queue');
    // Every page of the environment carries the count; the live environment has nothing waiting.
    expect(badge(await (await staff.get("/dashboard/test/inspections")).text())).toBe("2");
    const live = await (await staff.get("/dashboard/live/reviews")).text();
    expect(badge(live)).toBeNull();
    expect(live).toContain("Nothing waits for review.");
    expect(queued(html)).not.toContain(clean);
  });

  it("shows the review page with each photo and the review form", async () => {
    const res = await staff.get(`/dashboard/test/inspections/${first}/review`);
    expect(res.status).toBe(200);
    const html = await res.text();
    const report = await (await svc.api(key, `/v1/inspections/${first}/report`)).json();
    expect(html).toContain(`<form method="post" action="/dashboard/test/inspections/${first}/review"`);
    for (const p of report.photos) expect(html).toContain(`src="/dashboard/test/media/${p.media_id}.jpg"`);
    expect(html).toContain("<li>The VIN was not confirmed on the vehicle</li>");
    expect(html).toContain('<link rel="stylesheet" href="/dashboard/assets/review.css">');
    expect(html).toContain('<script type="module" src="/dashboard/assets/review.js"></script>');
  });

  it("answers a bad form with the page and what to put right, as the reviewer left it, and saves nothing", async () => {
    const page = `/dashboard/test/inspections/${first}/review`;
    const report = await (await svc.api(key, `/v1/inspections/${first}/report`)).json();
    const otherPhoto = (await (await svc.api(key, `/v1/inspections/${clean}/report`)).json()).photos[0].media_id;
    const media = report.photos[0].media_id;
    const drawn = { "a.0.media": media, "a.0.bbox": "0.2,0.3,0.25,0.1", "a.0.type": "dent", "a.0.part": "", "a.0.severity": "minor" };
    const cases: [Record<string, string>, string][] = [
      [{ ...drawn, "a.0.bbox": "no box" }, "New finding 1: its box must be on the photo and have a size: draw it again"],
      [{ ...drawn, "a.0.type": "" }, "New finding 1: choose a type of damage from the list"],
      [{ ...drawn, "a.0.severity": "catastrophic" }, "New finding 1: choose a severity"],
      [{ ...drawn, "a.0.media": otherPhoto }, "New finding 1: its photo is not one of this report's"],
      [{ note: "x".repeat(2001) }, "The note is too long."],
    ];
    for (const [fields, error] of cases) {
      const res = await staff.post(page, { ...fields }, page);
      expect(res.status, error).toBe(400);
      const html = await res.text();
      expect(errorsOf(html), error).toEqual([error]);
      // The form comes back as it was sent.
      if (fields["a.0.media"]) expect(html).toContain(`name="a.0.media" value="${fields["a.0.media"]}"`);
    }
    const kept = await staff.post(page, { note: "Looked at it" }, page);
    expect(kept.status).toBe(303);
    // That one was saved; the page starts from it, and the next submit replaces it.
    expect((await (await svc.api(key, `/v1/inspections/${first}/report`)).json()).review.note).toBe("Looked at it");
    const again = await (await staff.get(page)).text();
    expect(again).toContain('<textarea id="review-note" name="note" rows="3" maxlength="2000">Looked at it</textarea>');
    expect(again).toContain("Reviewed by <strong>claims@acme.test</strong>");
  });

  it("makes the API's review from the form: a finding drawn on a photo and a note, under the user's email; the queue shrinks", async () => {
    const page = `/dashboard/test/inspections/${third}/review`;
    const before = await (await svc.api(key, `/v1/inspections/${third}/report`)).json();
    const photo = before.photos.find((p: { angle: string }) => p.angle === "front_left");
    const res = await staff.post(
      page,
      {
        "a.3.media": photo.media_id,
        "a.3.bbox": "0.2,0.3,0.25,0.1",
        "a.3.type": "scratch",
        "a.3.part": "front_left_door",
        "a.3.severity": "moderate",
        note: "Long scratch on the door, seen on site.",
      },
      page,
    );
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe(`/dashboard/test/inspections/${third}#review-title`);
    const after = await (await svc.api(key, `/v1/inspections/${third}/report`)).json();
    expect(after.review).toMatchObject({
      status: "completed",
      reviewed_by: "claims@acme.test",
      note: "Long scratch on the door, seen on site.",
    });
    expect(after.findings).toEqual([
      expect.objectContaining({
        source: "reviewer",
        type: "scratch",
        part: "front_left_door",
        severity: "moderate",
        media_id: photo.media_id,
        bbox: [0.2, 0.3, 0.25, 0.1],
      }),
    ]);
    expect(after.grade).toBe("moderate");
    const inspectionPage = await (await staff.get(`/dashboard/test/inspections/${third}`)).text();
    expect(inspectionPage).toContain(`<a class="button" href="/dashboard/test/inspections/${third}/review">Review again</a>`);
    const inspection = await (await svc.api(key, `/v1/inspections/${third}`)).json();
    expect(inspection.summary.needs_review).toBe(false);
    // Reviewed: out of the queue; the review page shows the finding drawn, on its photo.
    const queue = await (await staff.get("/dashboard/test/reviews")).text();
    expect(queued(queue)).toEqual([]);
    expect(badge(queue)).toBeNull();
    const again = await (await staff.get(page)).text();
    expect(again).toMatch(/<option value="scratch" selected>scratch<\/option>/);
    expect(again).toContain(`<g class="box added" data-for="added-0">`);
  });

  it("is not there for another account's user, nor in another environment", async () => {
    const page = `/dashboard/test/inspections/${clean}/review`;
    expect((await stranger.get(page)).status).toBe(404);
    const posted = await stranger.post(page, { note: "mine now" }, "/dashboard/test/reviews");
    expect(posted.status).toBe(404);
    const theirs = await (await stranger.get("/dashboard/test/reviews")).text();
    expect(queued(theirs)).toEqual([]);
    expect(badge(theirs)).toBeNull();
    expect((await staff.get(`/dashboard/live/inspections/${clean}/review`)).status).toBe(404);
    expect((await (await svc.api(key, `/v1/inspections/${clean}/report`)).json()).review.status).toBe("not_required");
  });

  it("refuses a review or a policy posted without the form's CSRF token", async () => {
    const page = `/dashboard/test/inspections/${clean}/review`;
    const without = await staff.post(page, { _csrf: "", note: "forged" });
    expect(without.status).toBe(403);
    const foreign = await staff.post(page, { _csrf: await stranger.csrfToken("/dashboard/test/reviews"), note: "forged" });
    expect(foreign.status).toBe(403);
    expect((await (await svc.api(key, `/v1/inspections/${clean}/report`)).json()).review.status).toBe("not_required");
    expect((await staff.post("/dashboard/test/reviews/policy", { _csrf: "", policy: "off" })).status).toBe(403);
    expect(await (await staff.get("/dashboard/test/reviews")).text()).toMatch(/value="when_unsure" checked/);
  });

  it("refuses to review an inspection before it is completed", async () => {
    const made = await create(svc, key);
    const page = `/dashboard/test/inspections/${made.id}/review`;
    const res = await staff.get(page);
    expect(res.status).toBe(409);
    expect(await res.text()).toContain("it is ready once the inspection is completed");
    expect((await staff.post(page, { note: "too early" }, "/dashboard/test/reviews")).status).toBe(409);
  });

  it("sets the account's review policy for the environment, which the next reports follow", async () => {
    const boss = await DashboardClient.signedIn(svc, "boss@initech.test", "initech");
    const initech = await svc.key("test", "initech");
    const queue = "/dashboard/test/reviews";
    expect(await (await boss.get(queue)).text()).toMatch(/value="when_unsure" checked/);

    const always = await boss.post(`${queue}/policy`, { policy: "always" }, queue);
    expect(always.status).toBe(303);
    expect(always.headers.get("location")).toBe(`${queue}?saved=1`);
    const saved = await (await boss.get(`${queue}?saved=1`)).text();
    expect(saved).toMatch(/value="always" checked/);
    expect(saved).toContain("Saved.");
    // Even a report the models are sure of, VIN confirmed, now waits for a person; live is untouched.
    const sure = await completed(svc, initech, { confirmVin: true });
    expect((await (await svc.api(initech, `/v1/inspections/${sure}/report`)).json()).review).toMatchObject({
      status: "required",
      reasons: ["policy"],
    });
    expect(await (await boss.get("/dashboard/live/reviews")).text()).toMatch(/value="when_unsure" checked/);

    expect((await boss.post(`${queue}/policy`, { policy: "off" }, queue)).status).toBe(303);
    const unsure = await completed(svc, initech);
    const report = await (await svc.api(initech, `/v1/inspections/${unsure}/report`)).json();
    expect(report.review).toMatchObject({ status: "not_required", reasons: ["vin_unconfirmed"] });

    const bad = await boss.post(`${queue}/policy`, { policy: "sometimes" }, queue);
    expect(bad.status).toBe(400);
    const html = await bad.text();
    expect(html).toContain("Choose when reports go to a person: never, when unsure or always.");
    expect(html).toMatch(/value="off" checked/);
  });
});
