import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, expect, it } from "vitest";
import { foldOf, isHeldOut } from "../../inference/evaluation/held-out.ts";
import { DATASETS } from "../helpers/photos.ts";

/**
 * `vehicle-inspection eval-product` end to end on a miniature of the three datasets (8 photos of
 * each, linked from ../shared/datasets): its last line is the JSON summary with every section.
 */
const run = promisify(execFile);
const CLI = join(import.meta.dirname, "../../bin/vehicle-inspection.ts");
const root = mkdtempSync(join(tmpdir(), "vi-eval-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

type Coco = { images: { id: number; file_name: string }[]; annotations: { image_id: number }[]; categories: unknown[] };

/** A COCO folder with only `keep` of its images (linked), and their annotations. */
function miniCoco(from: string, to: string, imagesDir: string, keep: (images: Coco["images"]) => Coco["images"]) {
  const coco = JSON.parse(readFileSync(join(from, "annotations.json"), "utf8")) as Coco;
  const images = keep(coco.images);
  const ids = new Set(images.map((im) => im.id));
  mkdirSync(join(to, imagesDir), { recursive: true });
  for (const im of images) symlinkSync(join(from, imagesDir, im.file_name), join(to, imagesDir, im.file_name));
  writeFileSync(
    join(to, "annotations.json"),
    JSON.stringify({ ...coco, images, annotations: coco.annotations.filter((a) => ids.has(a.image_id)) }),
  );
}

/** The miniature: 8 clean-car photos, 8 held-out whole-car photos and 3 of a trained-on fifth, 8 close-ups. */
function miniDatasets() {
  miniCoco(join(DATASETS, "car-parts/testset"), join(root, "car-parts/testset"), "JPEGImages", (images) =>
    [...images].sort((a, b) => a.file_name.localeCompare(b.file_name)).slice(0, 8),
  );
  miniCoco(join(DATASETS, "car-damage-severity"), join(root, "car-damage-severity"), "images", (images) => [
    ...images.filter((im) => isHeldOut(im.file_name)).slice(0, 8),
    ...images.filter((im) => foldOf(im.file_name) === 2).slice(0, 3),
  ]);
  const valid = join(DATASETS, "car-damage/valid");
  for (const dir of ["images", "labels"]) mkdirSync(join(root, "car-damage/valid", dir), { recursive: true });
  for (const image of readdirSync(join(valid, "images")).sort().slice(0, 8)) {
    const label = image.replace(/\.jpg$/, ".txt");
    symlinkSync(join(valid, "images", image), join(root, "car-damage/valid/images", image));
    symlinkSync(join(valid, "labels", label), join(root, "car-damage/valid/labels", label));
  }
}
miniDatasets();

async function evalProduct(...args: string[]) {
  const { stdout } = await run(process.execPath, [CLI, "eval-product", "--datasets", root, ...args], { maxBuffer: 1 << 24 });
  return stdout.trim().split("\n");
}

it("prints clean cars, whole cars, the angle check and close-ups, then one JSON line", async () => {
  const lines = await evalProduct();
  expect(lines.some((l) => l.startsWith("clean cars: ") && l.includes("of 8 photos"))).toBe(true);
  const summary = JSON.parse(lines.at(-1)!);
  expect(summary.clean_cars).toMatchObject({ photos: 8, inspections: 1 });
  expect(summary.clean_cars.photos_with_finding).toBeLessThanOrEqual(8);
  expect(summary.whole_cars).toMatchObject({ fold: 0, photos: 8 });
  expect(Object.keys(summary.whole_cars.ap50)).toEqual(["dent", "scratch"]);
  expect(Object.keys(summary.whole_cars.severity_confusion)).toEqual(["minor", "moderate", "severe"]);
  expect(summary.angle_check.photos).toBeGreaterThan(0);
  expect(summary.close_ups.map50).toBeGreaterThanOrEqual(0);
}, 120_000);

it("measures whole cars on a fifth the models were trained on when told (--fold)", async () => {
  const lines = await evalProduct("--fold", "2");
  expect(lines.some((l) => l.startsWith("whole cars (car-damage-severity fold 2, trained on: 3 photos)"))).toBe(true);
  expect(JSON.parse(lines.at(-1)!).whole_cars).toMatchObject({ fold: 2, photos: 3 });
}, 120_000);
