import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** Real car photos from the shared datasets (never copied into the repository). */
export const DATASETS = join(import.meta.dirname, "../../../shared/datasets");
const PARTS_DIR = join(DATASETS, "car-parts/testset/JPEGImages");

export function carPhotos(count: number): Buffer[] {
  const files = readdirSync(PARTS_DIR).filter((f) => f.endsWith(".jpg")).sort().slice(0, count);
  return files.map((f) => readFileSync(join(PARTS_DIR, f)));
}

export const carPhoto = (index = 0): Buffer => carPhotos(index + 1)[index]!;
