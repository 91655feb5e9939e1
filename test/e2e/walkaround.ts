/**
 * One customer's walkaround against a running service, as test/e2e/kind.sh runs it through a
 * port-forward: an inspection created with the API key, a photo of every required angle uploaded
 * through the capture API, submitted, and followed until it is over. Exits 0 once it is
 * `completed`, 1 otherwise, printing what it saw. The photos are generated (textured grey, as
 * sharp as a photo), so it needs no dataset: run it with the vehicle check off (PARTS_MODEL=none).
 *
 *   node test/e2e/walkaround.ts http://127.0.0.1:8080 sk_test_…
 */
import sharp from "sharp";
import { REQUIRED_ANGLES } from "../../core/schemas/capture.ts";

const [base, key] = process.argv.slice(2);
if (!base || !key) {
  console.error("usage: node test/e2e/walkaround.ts BASE_URL API_KEY");
  process.exit(2);
}
const api = (path: string, init: RequestInit = {}) =>
  fetch(base + path, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" } });

const photo = () =>
  sharp({ create: { width: 1280, height: 960, channels: 3, background: "#808080", noise: { type: "gaussian", mean: 128, sigma: 40 } } })
    .jpeg({ quality: 85 })
    .toBuffer();

const created = await api("/v1/inspections", {
  method: "POST",
  body: JSON.stringify({ reference: `e2e-${Date.now()}`, vehicle: { vin: "1HGCM82633A004352" } }),
});
const inspection = (await created.json()) as { id: string; capture_url: string };
if (created.status !== 201) throw new Error(`create answered ${created.status}: ${JSON.stringify(inspection)}`);
console.log(`created ${inspection.id}`);
// The capture API sits beside the page the link opens, whatever host PUBLIC_URL names.
const capture = `${base}/capture/v1/${inspection.capture_url.split("/c/")[1]}`;
for (const angle of REQUIRED_ANGLES) {
  const put = await fetch(`${capture}/photos/${angle}`, { method: "PUT", body: await photo(), headers: { "content-type": "image/jpeg" } });
  if (put.status !== 200) throw new Error(`photo ${angle} answered ${put.status}: ${await put.text()}`);
}
const submitted = await fetch(`${capture}/submit`, { method: "POST" });
if (submitted.status !== 202) throw new Error(`submit answered ${submitted.status}: ${await submitted.text()}`);
console.log(`submitted ${REQUIRED_ANGLES.length} photos`);

const deadline = Date.now() + 300_000;
for (;;) {
  const now = (await (await api(`/v1/inspections/${inspection.id}`)).json()) as { status: string; summary: unknown; failure: unknown };
  if (!["created", "in_progress", "processing"].includes(now.status) || Date.now() > deadline) {
    console.log(JSON.stringify({ id: inspection.id, status: now.status, summary: now.summary, failure: now.failure }));
    process.exit(now.status === "completed" ? 0 : 1);
  }
  await new Promise((r) => setTimeout(r, 2_000));
}
