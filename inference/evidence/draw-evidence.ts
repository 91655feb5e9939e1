import sharp from "sharp";
import type { DamageType } from "../../core/domain/damage-types.ts";
import type { Box } from "../detection/postprocess.ts";

/** A colour for each damage type; broken_part and damage_suspected take the default red. */
const COLOURS: Readonly<Record<string, string>> = {
  dent: "#f59e0b",
  scratch: "#eab308",
  crack: "#ef4444",
  glass_shatter: "#a855f7",
  lamp_broken: "#3b82f6",
  tire_flat: "#ec4899",
} satisfies Record<DamageType, string>;

const escapeXml = (s: string) => s.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The evidence photo of a finding: the photo with the finding outlined and labelled ("dent ·
 * front_bumper · 87%"), drawn as an SVG overlay composited by sharp, as a JPEG.
 */
export async function drawEvidence(
  photo: Buffer,
  box: Box,
  label: string,
  type: string,
): Promise<{ jpeg: Buffer; width: number; height: number }> {
  const image = sharp(photo).rotate();
  const { width = 0, height = 0 } = await image.metadata();
  const stroke = Math.max(3, Math.round(Math.max(width, height) / 250));
  const font = Math.max(14, Math.round(Math.max(width, height) / 45));
  const colour = COLOURS[type] ?? "#ef4444";
  const pad = stroke * 2;
  const x = Math.round(box.x1),
    y = Math.round(box.y1),
    w = Math.max(1, Math.round(box.x2 - box.x1)),
    h = Math.max(1, Math.round(box.y2 - box.y1));
  const labelW = Math.round(font * 0.62 * label.length + 2 * pad);
  const labelH = font + 2 * pad;
  // The label sits above the box, or inside it when the box touches the top edge.
  const ly = y - labelH >= 0 ? y - labelH : y;
  const lx = Math.min(x, Math.max(0, width - labelW));
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
    <rect x="${x}" y="${y}" width="${w}" height="${h}" fill="none" stroke="${colour}" stroke-width="${stroke}"/>
    <rect x="${lx}" y="${ly}" width="${labelW}" height="${labelH}" fill="${colour}"/>
    <text x="${lx + pad}" y="${ly + pad + font * 0.85}" font-family="DejaVu Sans, sans-serif" font-size="${font}" font-weight="bold" fill="#111">${escapeXml(label)}</text>
  </svg>`;
  const { data, info } = await image
    .composite([{ input: Buffer.from(svg), top: 0, left: 0 }])
    .jpeg({ quality: 85 })
    .toBuffer({ resolveWithObject: true });
  return { jpeg: data, width: info.width, height: info.height };
}
