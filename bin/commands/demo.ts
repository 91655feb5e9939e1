import { randomInt } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { readCoco } from "../../inference/evaluation/coco.ts";
import { angleOfSides, sidesShown } from "../../inference/quality/angle-check.ts";

/** A VIN whose check digit is right and which the VIN decoder knows (a 2003 Honda Accord). */
const DEMO_VIN = "1HGCM82633A004352";
/** Where the sample photos are, under the datasets folder: car-parts' test photos, their parts labelled. */
const SAMPLES = "car-parts/testset";
const TERMINAL = new Set(["completed", "failed", "canceled", "expired"]);

/** What the demo reads of the API's answers (core/schemas has them whole). */
type Inspection = {
  id: string;
  status: string;
  capture_url: string;
  vehicle: { vin: string; make: string | null; model: string | null; year: number | null };
};
type Uploaded = { media_id: string; quality: { passed: boolean; problems: string[] } };
type Report = {
  grade: string;
  findings: { type: string; part: string | null; severity: string; confidence: number }[];
  review?: { status: string; reasons: string[] };
};

export type DemoOptions = {
  /** The running service's base URL. */
  api: string;
  /** A test-mode API key of the account the inspection is made in. */
  apiKey: string;
  /**
   * The shared datasets folder (../shared/datasets), whose car photos fit their angles; null: photos
   * drawn here (where there are no datasets, as in the chart's `helm test` pod), which test the
   * path from capture to report, not what detection finds.
   */
  datasets: string | null;
  print: (line: string) => void;
  timeoutMs?: number;
};

/** What the demo needs and could not find: said as it is. */
export class DemoError extends Error {}

/**
 * A photo for each exterior angle: the first car-parts test photo whose labelled parts show that
 * angle's sides (the angle check's own rule, so none is flagged for its angle), and for every other
 * step a photo no angle took.
 */
export function samplePhotos(datasets: string): { forAngle: Map<string, string>; others: string[] } {
  const dir = join(datasets, SAMPLES);
  if (!existsSync(join(dir, "annotations.json"))) {
    throw new DemoError(
      `the demo takes its photos from ${dir} (the car-parts test photos of ../shared/datasets, with annotations.json); pass --datasets DIR where they are`,
    );
  }
  const coco = readCoco(dir);
  const names = new Map(coco.categories.map((c) => [c.id, c.name]));
  const parts = new Map<number, { name: string; score: number }[]>();
  for (const a of coco.annotations)
    parts.set(a.image_id, [...(parts.get(a.image_id) ?? []), { name: names.get(a.category_id)!, score: 1 }]);
  const forAngle = new Map<string, string>();
  const others: string[] = [];
  for (const image of coco.images.toSorted((a, b) => a.file_name.localeCompare(b.file_name))) {
    const file = join(dir, "JPEGImages", image.file_name);
    const angle = angleOfSides(sidesShown(parts.get(image.id) ?? []));
    if (angle && !forAngle.has(angle)) forAngle.set(angle, file);
    else others.push(file);
  }
  return { forAngle, others };
}

/** A photo for each step: `angle`'s sample photo, else the next spare one; or, without datasets, one drawn. */
async function photoSource(datasets: string | null): Promise<(angle: string) => Promise<Buffer>> {
  if (datasets === null) {
    const { default: sharp } = await import("sharp");
    // A plain colour of this run's own, so that a second run's photos are not ones sent before.
    const background = { r: randomInt(256), g: randomInt(256), b: randomInt(256) };
    return () =>
      sharp({ create: { width: 640, height: 480, channels: 3, background } })
        .jpeg()
        .toBuffer();
  }
  const photos = samplePhotos(datasets);
  const spare = [...photos.others];
  return async (angle) => readFileSync(photos.forAngle.get(angle) ?? spare.shift()!);
}

/**
 * `vehicle-inspection demo`: one inspection from creation to its report against the running
 * service, as a client and its customer would make it: created over the API, every step of its
 * capture link photographed with sample photos, the VIN confirmed, submitted, and waited for. It
 * prints what each step answered and where to see the result (the dashboard, the report), and
 * fails (DemoError) unless the inspection completed with its report: the chart's `helm test` runs it.
 */
export async function demo(o: DemoOptions): Promise<{ id: string; status: string }> {
  const photoFor = await photoSource(o.datasets);
  const call = async <T = unknown>(path: string, init: RequestInit = {}, auth = true): Promise<T> => {
    const headers = new Headers(init.headers);
    if (auth) headers.set("authorization", `Bearer ${o.apiKey}`);
    let res: Response;
    try {
      res = await fetch(new URL(path, o.api), { ...init, headers });
    } catch (error) {
      throw new DemoError(`could not reach the service at ${o.api} (${(error as Error).message}): is \`npm start\` running?`);
    }
    const body = await res.json();
    if (!res.ok)
      throw new DemoError(
        `${init.method ?? "GET"} ${path}: ${res.status} ${(body as { error?: { message?: string } }).error?.message ?? ""}`,
      );
    return body as T;
  };
  const json = (body: unknown): RequestInit => ({
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

  const made = await call<Inspection>("/v1/inspections", json({ reference: "demo", vehicle: { vin: DEMO_VIN } }));
  const v = made.vehicle;
  o.print(`created ${made.id} for ${v.vin} (${[v.year, v.make, v.model].filter(Boolean).join(" ") || "not decoded"})`);
  o.print(`capture link: ${made.capture_url}`);
  const capture = `/capture/v1/${made.capture_url.split("/c/").pop()}`;
  const session = await call<{ steps: { angle: string; required: boolean }[] }>(capture, {}, false);
  for (const step of session.steps) {
    if (!step.required) continue;
    const put = await call<Uploaded>(
      `${capture}/photos/${step.angle}`,
      { method: "PUT", headers: { "content-type": "image/jpeg" }, body: await photoFor(step.angle) },
      false,
    );
    const q = put.quality;
    o.print(`photo ${step.angle.padEnd(12)} ${put.media_id}  ${q.passed ? "passed" : `kept with problems: ${q.problems.join(", ")}`}`);
  }
  const vin = await call<{ vin: string; matches_vehicle: boolean }>(`${capture}/vin`, json({ vin: DEMO_VIN }), false);
  o.print(`VIN confirmed: ${vin.vin} (${vin.matches_vehicle ? "matches the vehicle" : "does not match the vehicle"})`);
  await call(`${capture}/submit`, { method: "POST" }, false);
  o.print("submitted; processing…");

  const deadline = Date.now() + (o.timeoutMs ?? 180_000);
  let inspection = await call<Inspection>(`/v1/inspections/${made.id}`);
  while (!TERMINAL.has(inspection.status)) {
    if (Date.now() > deadline) throw new DemoError(`${made.id} is still ${inspection.status}; see it in the dashboard`);
    await sleep(500);
    inspection = await call<Inspection>(`/v1/inspections/${made.id}`);
  }
  o.print(`${made.id} is ${inspection.status}`);
  if (inspection.status === "completed") {
    const report = await call<Report>(`/v1/inspections/${made.id}/report`);
    o.print(
      `grade ${report.grade}, ${report.findings.length} finding(s)${report.review?.status === "required" ? `, review required (${report.review.reasons.join(", ")})` : ""}`,
    );
    for (const f of report.findings) o.print(`  ${f.type} on ${f.part ?? "?"}, ${f.severity}, confidence ${f.confidence}`);
    o.print(`report: ${o.api}/v1/inspections/${made.id}/report (and report.pdf)`);
  }
  o.print(`dashboard: ${o.api}/dashboard/test/inspections/${made.id}`);
  if (inspection.status !== "completed") throw new DemoError(`${made.id} ended ${inspection.status}, with no report`);
  return { id: made.id, status: inspection.status };
}
