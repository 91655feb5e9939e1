import type { Region } from "./letterbox.ts";
import type { Detected } from "./onnx-detector.ts";
import { nms } from "./postprocess.ts";

/**
 * Looking closer: damage on a whole-car photo is small (a scratch is often 2% of the photo's side),
 * far smaller than in the close-ups the damage model learned from. An n × n grid of overlapping
 * tiles, each run through the model as a photo of its own, shows it n times larger. A damage cut by
 * a tile's edge is whole in the next tile (the overlap) or in the full frame, which is searched too.
 */
export const TILE_OVERLAP = 0.2;

/** The n × n tiles of a width × height photo, each overlapping its neighbours by TILE_OVERLAP of its side. */
export function tileRegions(width: number, height: number, n: number): Region[] {
  if (n < 2) return [];
  const side = (length: number) => Math.ceil(length / (n - (n - 1) * TILE_OVERLAP));
  const tw = Math.min(width, side(width));
  const th = Math.min(height, side(height));
  const at = (i: number, length: number, t: number) => Math.round((i * (length - t)) / (n - 1));
  const regions: Region[] = [];
  for (let row = 0; row < n; row++)
    for (let col = 0; col < n; col++) regions.push({ left: at(col, width, tw), top: at(row, height, th), width: tw, height: th });
  return regions;
}

/** The full frame's detections and the tiles' (in tile pixels), in photo pixels, overlaps suppressed. */
export function mergeTiles(full: Detected[], tiles: { region: Region; found: Detected[] }[], iou: number): Detected[] {
  const all = [...full];
  for (const { region, found } of tiles) {
    for (const d of found) all.push({ ...d, x1: d.x1 + region.left, x2: d.x2 + region.left, y1: d.y1 + region.top, y2: d.y2 + region.top });
  }
  return nms(all, iou) as Detected[];
}
