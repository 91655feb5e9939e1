import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_MODELS } from "../../core/runtime/config.ts";
import type { ReviewReason } from "../../core/schemas/report.ts";
import { REVIEW_REASON_WORDS } from "../../core/views/review-words.ts";
import { DashboardClient } from "../helpers/dashboard-client.ts";
import { readPdf } from "../helpers/pdf-text.ts";
import { DAMAGE_VALID, DAMAGED_CASES } from "../helpers/photos.ts";
import { startService, type TestService, withModels } from "../helpers/service.ts";
import { create, walkaround } from "../helpers/walkaround.ts";

/**
 * The review as people read it (issue 29, "Honest pages"): the dashboard's inspection page, the
 * shared report (/r/<token>) and the PDF say "Needs review" and why while a person should look,
 * and once one has, who and when, with each finding marked as the review decided it.
 */
/** The angles the customer photographed a damaged car at, and the photos. */
type Damaged = { angle: string; file: string }[];

/** An inspection of the test environment, walked through the capture API with the VIN left unconfirmed, completed. */
async function completedInspection(svc: TestService, key: string, damaged: Damaged, extra: Record<string, unknown> = {}) {
  const made = await create(svc, key, extra);
  const over = damaged.map((d) => ({ angle: d.angle, bytes: readFileSync(join(DAMAGE_VALID, "images", d.file)) }));
  expect((await walkaround(svc, key, made, { over, confirmVin: false })).status).toBe("completed");
  return made.id;
}

/** A share link made with the inspection page's form: its token. */
async function shareToken(staff: DashboardClient, id: string): Promise<string> {
  const page = `/dashboard/test/inspections/${id}`;
  const res = await staff.post(`${page}/share`, { days: "7" }, page);
  expect(res.status).toBe(200);
  return /<code id="share-link" class="secret">[^<]*\/r\/([A-Za-z0-9_-]+)<\/code>/.exec(await res.text())![1]!;
}

/** What a person reads of a page: no tags, entities decoded, runs of white space one space. */
const textOf = (html: string) =>
  html
    .replace(/<[^>]+>/g, " ")
    .replaceAll("&quot;", '"')
    .replaceAll("&#39;", "'")
    .replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">")
    .replaceAll("&amp;", "&")
    .replace(/\s+/g, " ");

/** The rows of the findings table, in the report's order. */
const findingRows = (html: string) => {
  const table = html.slice(html.indexOf('<table class="findings">'), html.indexOf("</table>", html.indexOf('<table class="findings">')));
  return [...table.slice(table.indexOf("<tbody>")).matchAll(/<tr[^>]*>[\s\S]*?<\/tr>/g)].map(([row]) => row);
};

/** The dashboard's `when`: minutes, UTC. */
const minutes = (timestamp: string) => `${timestamp.replace("T", " ").slice(0, 16)} UTC`;

describe.skipIf(!existsSync(DEFAULT_MODELS.damage))("the review on the inspection page, the shared report and the PDF", () => {
  let svc: TestService;
  let key: string;
  let staff: DashboardClient;
  let id: string;
  let token: string;
  let modelReport: any;
  /** The inspection page, the shared report, and the PDF's text, as they are now. */
  const surfaces = async () => {
    const page = await (await staff.get(`/dashboard/test/inspections/${id}`)).text();
    const shared = await (await fetch(`${svc.url}/r/${token}`)).text();
    const pdf = await staff.get(`/dashboard/test/inspections/${id}/report.pdf`);
    expect(pdf.status).toBe(200);
    return { page, shared, pdf: (await readPdf(Buffer.from(await pdf.arrayBuffer()))).text.join("\n") };
  };

  beforeAll(async () => {
    svc = await startService(withModels);
    key = await svc.key("test", "acme");
    staff = await DashboardClient.signedIn(svc, "claims@acme.test", "acme");
    id = await completedInspection(svc, key, [...DAMAGED_CASES], { review: "always" });
    modelReport = await (await svc.api(key, `/v1/inspections/${id}/report`)).json();
    expect(modelReport.findings.length).toBeGreaterThanOrEqual(2);
    token = await shareToken(staff, id);
  }, 180_000);
  afterAll(() => svc?.close());

  it("while review is required, each says Needs review and names the reasons in plain words", async () => {
    expect(modelReport.review).toMatchObject({ status: "required", reasons: expect.arrayContaining(["vin_unconfirmed", "policy"]) });
    const { page, shared, pdf } = await surfaces();
    for (const [where, html] of [
      ["page", page],
      ["shared", shared],
    ] as const) {
      expect(html, where).toContain('<span class="badge review-required">Needs review</span>');
      expect(html, where).toContain(
        `<span class="grade ${modelReport.grade}">${modelReport.grade}</span> <span class="badge review-required">Needs review</span>`,
      );
      const text = textOf(html);
      expect(text, where).toContain("The VIN was not confirmed on the vehicle");
      expect(text, where).toContain("Your account or this inspection asks for review of every report");
      expect(text, where).not.toContain("No damage found");
      expect(text, where).not.toContain("Reviewed by");
      // Nothing decided yet: no finding carries a mark, and the table has no column for one.
      expect(html, where).not.toContain('<th scope="col">Review</th>');
    }
    expect(page).toMatch(/<h1>[^\n]*<span class="badge review-required">Needs review<\/span><\/h1>/);
    expect(pdf).toContain("Review\nNeeds review\n");
    expect(pdf).toContain("Needs review before acting on this grade:");
    expect(pdf).toContain("The VIN was not confirmed on the vehicle");
    expect(pdf).toContain("Your account or this inspection asks for review of every report");
    expect(pdf).not.toContain("Reviewed by");
    expect(pdf).not.toContain("No damage found");
  });

  it("once reviewed, each says who reviewed and when, with the note and the reviewed grade; rejected, changed and added findings marked", async () => {
    const [rejected, changed] = modelReport.findings;
    const clean = modelReport.photos.find((p: any) => p.angle === "right");
    const note = "Windscreen checked on site; the tyre is flat.";
    const res = await svc.api(key, `/v1/inspections/${id}/review`, {
      method: "POST",
      json: {
        decisions: [
          { finding: rejected.id, action: "reject" },
          { finding: changed.id, action: "change", severity: "moderate" },
        ],
        added: [{ media_id: clean.media_id, type: "scratch", part: "front_left_door", severity: "moderate", bbox: [0.2, 0.3, 0.25, 0.1] }],
        note,
      },
    });
    expect(res.status).toBe(200);
    const reviewed = await res.json();
    const { reviewed_by: by, reviewed_at: at } = reviewed.review;
    expect(by).toMatch(/^key_/);
    const added = reviewed.findings.at(-1);
    const counted = reviewed.findings.length - 1;
    const reasons = reviewed.review.reasons.map((r: ReviewReason) => REVIEW_REASON_WORDS[r]);
    expect(reasons).toContain("Your account or this inspection asks for review of every report");
    expect(reviewed.summary.findings).toBe(counted);

    const { page, shared, pdf } = await surfaces();
    for (const [where, html, media] of [
      ["page", page, "/dashboard/test/media/"],
      ["shared", shared, `/r/${token}/media/`],
    ] as const) {
      expect(html, where).toContain(`Reviewed by <strong>${by}</strong> on ${minutes(at)}.`);
      expect(html, where).toContain(`<q class="review-note">${note}</q>`);
      expect(html, where).toContain(
        `<span class="grade ${reviewed.grade}">${reviewed.grade}</span> <small class="muted">after review</small>`,
      );
      expect(html, where).toContain(
        `<dt>Findings</dt><dd>${counted} <small class="muted">and 1 rejected by reviewer, not counted</small></dd>`,
      );
      expect(textOf(html), where).not.toContain("Needs review");
      // Why it went to a person, still said, each reason an item of a list.
      expect(textOf(html), where).toContain(`Sent for review because: ${reasons.join(" ")} `);
      const rows = findingRows(html);
      expect(rows, where).toHaveLength(reviewed.findings.length);
      expect(rows[0], where).toMatch(/^<tr class="finding-rejected">/);
      expect(rows[0], where).toContain(`<s>${rejected.type.replaceAll("_", " ")}</s>`);
      expect(rows[0], where).toContain('<span class="badge finding-rejected">Rejected by reviewer</span>');
      expect(rows[1], where).toContain('<span class="badge finding-changed">Changed by reviewer</span>');
      expect(rows[1], where).toContain('<span class="grade moderate">moderate</span>');
      for (const row of rows.slice(2, -1)) expect(row, where).toContain('<span class="muted">not decided</span>');
      const last = rows.at(-1)!;
      expect(last, where).toContain('<span class="badge finding-added">Added by reviewer</span>');
      expect(last, where).toContain("<td>scratch</td>");
      // The reviewer's box is drawn over the photo it was added on.
      expect(last, where).toContain(`<span class="boxed"><img class="thumb" src="${media}${clean.media_id}.jpg"`);
      expect(last, where).toContain('<rect x="0.2" y="0.3" width="0.25" height="0.1"');
    }
    expect(page).toMatch(/<h1>[^\n]*<span class="badge completed">Reviewed<\/span><\/h1>/);

    // The PDF: who and when (to the second), the note, the grade and count the review left.
    expect(pdf).toContain(`Review\nReviewed by ${by} on ${at.replace("T", " ").replace("Z", " UTC")}\n`);
    expect(pdf).toContain(`\nReviewed by ${by} on `);
    expect(pdf).toContain(`Note: "${note}"\nSent for review because:\n`);
    for (const reason of reasons) expect(pdf).toContain(`• ${reason}\n`);
    expect(pdf).toContain(`Grade\n${reviewed.grade}\nFindings\n${counted}, and 1 rejected by the reviewer (not counted)\n`);
    for (const mark of ["Rejected by reviewer", "Changed by reviewer", "Added by reviewer"]) expect(pdf).toContain(`\n${mark}\n`);
    expect(pdf).toContain(`Finding 1: ${rejected.type.replaceAll("_", " ")}`);
    expect(pdf).toMatch(/Finding 1: [^\n]*\. Rejected by reviewer: not counted\.\n/);
    expect(pdf).toContain(`Finding ${reviewed.findings.length}: scratch on the front left door, moderate. Added by reviewer.\n`);
    expect(pdf).not.toContain("Needs review");
    expect(added).toMatchObject({ source: "reviewer", type: "scratch" });
  });
});

describe("a report on which the models placed no damage, while a person should look", () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService();
  });
  afterAll(() => svc?.close());

  it("says Needs review on the page and the shared report, never a grade of none nor No damage found", async () => {
    const key = await svc.key("test", "acme");
    const staff = await DashboardClient.signedIn(svc, "claims@acme.test", "acme");
    const id = await completedInspection(svc, key, []);
    const report = await (await svc.api(key, `/v1/inspections/${id}/report`)).json();
    expect(report).toMatchObject({ grade: "none", findings: [], review: { status: "required", reasons: ["vin_unconfirmed"] } });
    const token = await shareToken(staff, id);
    const page = await (await staff.get(`/dashboard/test/inspections/${id}`)).text();
    const shared = await (await fetch(`${svc.url}/r/${token}`)).text();
    for (const [where, html] of [
      ["page", page],
      ["shared", shared],
    ] as const) {
      expect(html, where).toContain('<dt>Grade</dt><dd><span class="grade review-required">Needs review</span>');
      expect(html, where).not.toContain('class="grade none"');
      const text = textOf(html);
      expect(text, where).toContain("The VIN was not confirmed on the vehicle");
      expect(text, where).toContain("Needs review The models placed no damage on the photos");
      expect(text, where).not.toContain("No damage found");
    }
    // The list says so too, rather than a green none.
    const list = await (await staff.get("/dashboard/test/inspections")).text();
    const row = list.slice(list.indexOf(id));
    expect(row.slice(0, row.indexOf("</tr>"))).toContain('<span class="badge review-required">Needs review</span>');
    expect(row.slice(0, row.indexOf("</tr>"))).not.toContain('class="grade none"');
  });
});
