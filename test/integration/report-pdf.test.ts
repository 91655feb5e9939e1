import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_MODELS } from "../../core/runtime/config.ts";
import { readPdf } from "../helpers/pdf-text.ts";
import { carPhotos, DATASETS, freshPhotos } from "../helpers/photos.ts";
import { startService, type TestService, VALID_VIN, withModels } from "../helpers/service.ts";
import { create, walkaround } from "../helpers/walkaround.ts";

/**
 * GET /v1/inspections/:id/report.pdf: the condition report as a PDF, read back with pdf-lib and PDF.js (pages,
 * embedded photos, the text on the pages), and refused as the JSON report is.
 */

// Two of damage-detection.test.ts's photos (car-damage/valid, never trained on) on which the shipped
// model finds a glass shatter and a flat tyre.
const DAMAGED: Record<string, string> = {
  front: "000314_jpg.rf.6514763b42e3ef194ced547bc7176592.jpg",
  rear_right: "001078_jpg.rf.e1f47a21d8b6ec3c11540eddd018192a.jpg",
};

/** An inspection walked through the capture API with these photos and the VIN confirmed (unless told), completed. */
async function completedInspection(
  svc: TestService,
  key: string,
  photoOf: (angle: string, i: number) => Buffer,
  o: { confirmVin?: boolean } = {},
): Promise<string> {
  const made = await create(svc, key);
  const done = await walkaround(svc, key, made, { open: true, photos: photoOf, confirmVin: o.confirmVin });
  expect(done.status).toBe("completed");
  return made.id;
}

async function getPdf(svc: TestService, key: string, id: string) {
  const started = performance.now();
  const res = await svc.api(key, `/v1/inspections/${id}/report.pdf`);
  const bytes = Buffer.from(await res.arrayBuffer());
  return { res, bytes, ms: performance.now() - started };
}

describe.skipIf(!existsSync(DEFAULT_MODELS.damage))("the condition report as PDF, with findings", () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService(withModels);
  }, 60_000);
  afterAll(() => svc.close());

  it("embeds each finding's evidence and every photo, with the VIN, the grade and page numbers in its text", async () => {
    const key = await svc.key();
    const fill = carPhotos(9);
    // The damage photos are 640 px; enlarged to a phone's 2048 so their evidence is larger than the
    // report embeds (the model sees them at its own input size either way).
    const damaged = Object.fromEntries(
      await Promise.all(
        Object.entries(DAMAGED).map(async ([angle, file]) => [
          angle,
          await sharp(readFileSync(join(DATASETS, "car-damage/valid/images", file)))
            .resize(2048)
            .jpeg({ quality: 90 })
            .toBuffer(),
        ]),
      ),
    );
    const id = await completedInspection(svc, key, (angle, i) => damaged[angle] ?? fill[i]!);
    const report = await (await svc.api(key, `/v1/inspections/${id}/report`)).json();
    expect(report.findings.length).toBeGreaterThan(0);

    const { res, bytes, ms } = await getPdf(svc, key, id);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/pdf");
    expect(res.headers.get("content-disposition")).toBe(`attachment; filename="${id}.pdf"`);
    expect(res.headers.get("cache-control")).toBe("private");
    expect(bytes.subarray(0, 5).toString("latin1")).toBe("%PDF-");
    console.log(
      `report.pdf of ${id}: ${bytes.length} bytes, ${report.findings.length} findings, ${report.photos.length} photos, GET ${ms.toFixed(0)} ms`,
    );

    const pdf = await readPdf(bytes);
    expect(pdf.pages).toBeGreaterThanOrEqual(1);
    const withPhoto = report.findings.filter((f: any) => f.evidence_url || f.media_id).length;
    expect(pdf.images.length).toBe(withPhoto + report.photos.length);
    // Scaled down before embedding: evidence to 1200 px on its long side, thumbnails to 480.
    const longSides = pdf.images.map((i) => Math.max(i.width, i.height));
    expect(longSides.filter((side) => side === 1200).length).toBe(withPhoto);
    expect(longSides.filter((side) => side <= 480).length).toBe(report.photos.length);

    const text = pdf.text.join("\n");
    for (const expected of [
      "Condition report",
      id,
      VALID_VIN,
      "TEST MODE",
      "Honda",
      "Accord",
      "2003",
      "Yes: the VIN observed is the VIN on file",
    ])
      expect(text).toContain(expected);
    expect(text).toMatch(new RegExp(`Grade\\n${report.grade}\\nFindings\\n${report.findings.length}\\n`));
    for (const [i, f] of report.findings.entries()) {
      expect(text).toContain(`Finding ${i + 1}: ${f.type.replaceAll("_", " ")}`);
      if (f.confidence !== null) expect(text).toContain(`${Math.round(f.confidence * 100)}%`);
    }
    expect(text).not.toContain("No damage found");
    // Not reviewed yet: no finding carries a review's mark, and the table has no column for one.
    expect(text).not.toContain("by reviewer");
    if (report.review.status === "required") expect(text).toContain("Review\nNeeds review\n");
    for (const [i, page] of pdf.text.entries()) expect(page).toContain(`Page ${i + 1} of ${pdf.pages}`);
    expect(pdf.title).toBe(`Condition report ${id}`);
    expect(pdf.subject).toBe(`VIN ${VALID_VIN}, grade ${report.grade}, ${report.findings.length} findings`);
  }, 120_000);
});

describe("the condition report as PDF, without findings, and refused", () => {
  let svc: TestService;
  let key: string;
  beforeAll(async () => {
    svc = await startService();
    key = await svc.key();
  });
  afterAll(() => svc.close());

  it("says plainly that no damage was found, and still shows every photo", async () => {
    const photos = await freshPhotos();
    const id = await completedInspection(svc, key, (_angle, i) => photos[i]!);
    const { res, bytes } = await getPdf(svc, key, id);
    expect(res.status).toBe(200);
    const pdf = await readPdf(bytes);
    expect(pdf.images.length).toBe(9);
    const text = pdf.text.join("\n");
    expect(text).toContain("No damage found.");
    expect(text).toMatch(/Grade\nnone\nFindings\n0\nReview\nNot needed\n/);
    expect(text).not.toContain("Evidence");
  }, 60_000);

  it("says Needs review, never a grade of none, while the models found nothing but a person should look", async () => {
    const photos = await freshPhotos();
    const id = await completedInspection(svc, key, (_angle, i) => photos[i]!, { confirmVin: false });
    expect((await (await svc.api(key, `/v1/inspections/${id}/report`)).json()).review).toMatchObject({
      status: "required",
      reasons: ["vin_unconfirmed"],
    });
    const text = (await readPdf((await getPdf(svc, key, id)).bytes)).text.join("\n");
    expect(text).toContain("Grade\nNeeds review: the models placed no damage\n");
    expect(text).toContain("Review\nNeeds review\n");
    // Each reason a line of its own, after a bullet.
    expect(text).toMatch(/Needs review before acting on this grade:\n• +The VIN was not confirmed on the vehicle\n/);
    expect(text).not.toMatch(/Grade\nnone/);
    expect(text).not.toContain("No damage found");
  }, 60_000);

  it("answers 409 report_not_ready before completion, 409 report_unavailable once canceled, 404 to another account", async () => {
    const { id } = await create(svc, key);
    const code = async (k: string) => {
      const { res, bytes } = await getPdf(svc, k, id);
      return [res.status, JSON.parse(bytes.toString()).error.code];
    };
    expect(await code(key)).toEqual([409, "report_not_ready"]);
    expect(await code(await svc.key("test", "globex"))).toEqual([404, "resource_missing"]);
    expect((await svc.api(key, `/v1/inspections/${id}/cancel`, { method: "POST" })).status).toBe(200);
    expect(await code(key)).toEqual([409, "report_unavailable"]);
    // The live key of the same account sees none of its test inspections either.
    expect(await code(await svc.key("live"))).toEqual([404, "resource_missing"]);
  });

  it("is in the OpenAPI document as a PDF, with every status it can answer", async () => {
    const doc = await (await fetch(`${svc.url}/v1/openapi.json`)).json();
    const op = doc.paths["/v1/inspections/{id}/report.pdf"].get;
    expect(op.operationId).toBe("retrieveReportPdf");
    expect(Object.keys(op.responses["200"].content)).toEqual(["application/pdf"]);
    expect(op.responses["200"].headers["Content-Disposition"]).toBeDefined();
    expect(Object.keys(op.responses).sort()).toEqual(["200", "400", "401", "404", "409", "429", "500"]);
  });
});
