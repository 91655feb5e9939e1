import { readdirSync, readFileSync, existsSync } from "node:fs";
import { basename, extname, join } from "node:path";
import { DAMAGE_TYPES, damageClass } from "../../core/domain/damage-types.ts";

/** The contract's class order for evaluation folders (datasets/car-damage/data.yaml): the damage model's class names, alphabetical. */
export const EVAL_CLASSES: readonly string[] = DAMAGE_TYPES.map(damageClass).sort();

export type LabelledImage = { image: string; boxes: { cls: number; x1: number; y1: number; x2: number; y2: number }[] };

/**
 * A YOLO-format folder: images/ and labels/, one label file per image; a line is a box
 * `class cx cy w h` or a polygon `class x1 y1 x2 y2 …`, normalised (a polygon's box is its extent).
 * Boxes come back normalised, as x1 y1 x2 y2.
 */
export function readYoloFolder(dir: string): LabelledImage[] {
  const images = join(dir, "images");
  if (!existsSync(images)) throw new Error(`${dir} has no images/ folder (expected a YOLO-format folder: images/ and labels/)`);
  return readdirSync(images)
    .filter((f) => /\.(jpe?g|png|webp)$/i.test(f))
    .sort()
    .map((f) => {
      const label = join(dir, "labels", `${basename(f, extname(f))}.txt`);
      const boxes = existsSync(label)
        ? readFileSync(label, "utf8")
            .split("\n")
            .flatMap((line) => {
              const v = line.trim().split(/\s+/).map(Number);
              if (v.length < 5 || v.some(Number.isNaN)) return [];
              const [cls, ...n] = v as [number, ...number[]];
              if (n.length === 4) {
                const [cx, cy, w, h] = n as [number, number, number, number];
                return [{ cls, x1: cx - w / 2, y1: cy - h / 2, x2: cx + w / 2, y2: cy + h / 2 }];
              }
              const xs = n.filter((_, i) => i % 2 === 0);
              const ys = n.filter((_, i) => i % 2 === 1);
              return [{ cls, x1: Math.min(...xs), y1: Math.min(...ys), x2: Math.max(...xs), y2: Math.max(...ys) }];
            })
        : [];
      return { image: join(images, f), boxes };
    });
}
