import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DATASETS } from "../helpers/photos.ts";
import { startService, withModels, type TestService } from "../helpers/service.ts";
import { create } from "../helpers/walkaround.ts";

/**
 * A photo of the wrong side is flagged on upload (`wrong_angle`), from the parts the parts model
 * finds in it: real car-parts test photos whose side their labelled parts tell (car125: the front,
 * car25: the rear).
 */
const photo = (name: string) => readFileSync(join(DATASETS, "car-parts/testset/JPEGImages", name));
let svc: TestService;
let base: string;

beforeAll(async () => {
  svc = await startService(withModels);
  ({ base } = await create(svc, await svc.key()));
});
afterAll(() => svc.close());

async function upload(angle: string, name: string) {
  const res = await fetch(`${base}/photos/${angle}`, { method: "PUT", body: photo(name), headers: { "content-type": "image/jpeg" } });
  expect(res.status).toBe(200);
  return (await res.json()).quality as { passed: boolean; problems: string[] };
}

it.each([
  ["rear", "car125.jpg"],
  ["front", "car25.jpg"],
  ["rear_right", "car125.jpg"],
])("flags a photo uploaded as %s that shows the other side (%s)", async (angle, name) => {
  const quality = await upload(angle, name);
  expect(quality.problems).toContain("wrong_angle");
  expect(quality.passed).toBe(false);
});

it.each([
  ["front", "car125.jpg"],
  ["rear", "car25.jpg"],
  ["rear_left", "car25.jpg"],
])("passes a photo uploaded as %s that shows that side (%s)", async (angle, name) => {
  expect((await upload(angle, name)).problems).not.toContain("wrong_angle");
});

it("never checks the VIN or odometer photos", async () => {
  expect((await upload("odometer", "car25.jpg")).problems).not.toContain("wrong_angle");
});
