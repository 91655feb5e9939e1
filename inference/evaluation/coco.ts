import { readFileSync } from "node:fs";
import { join } from "node:path";

/** The parts of a COCO annotations file the evaluations read (car-parts, car-damage-severity). */
export type Coco = {
  images: { id: number; file_name: string; width: number; height: number }[];
  categories: { id: number; name: string }[];
  annotations: { image_id: number; category_id: number; bbox: [number, number, number, number]; segmentation: number[][] }[];
};

/** A folder's `annotations.json`. */
export function readCoco(dir: string): Coco {
  return JSON.parse(readFileSync(join(dir, "annotations.json"), "utf8")) as Coco;
}
