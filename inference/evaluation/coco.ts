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

/** Whether (x, y) lies inside a COCO polygon (x1, y1, x2, y2, …), by the even-odd rule. */
export function insidePolygon(x: number, y: number, polygon: number[]): boolean {
  let hit = false;
  for (let i = 0, j = polygon.length - 2; i < polygon.length; j = i, i += 2) {
    const [xi, yi, xj, yj] = [polygon[i]!, polygon[i + 1]!, polygon[j]!, polygon[j + 1]!];
    if (yi > y !== yj > y && x < ((xj - xi) * (y - yi)) / (yj - yi) + xi) hit = !hit;
  }
  return hit;
}
