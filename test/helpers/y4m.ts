import { writeFileSync } from "node:fs";
import sharp from "sharp";

/**
 * Writes an image as a one-frame Y4M video (YUV 4:2:0, BT.601 full range), the format Chromium's
 * --use-file-for-fake-video-capture plays as the camera.
 */
export async function writeY4m(image: Buffer, path: string, width = 640, height = 480): Promise<void> {
  const rgb = await sharp(image).resize(width, height, { fit: "cover" }).removeAlpha().raw().toBuffer();
  const y = Buffer.alloc(width * height);
  const u = Buffer.alloc((width / 2) * (height / 2));
  const v = Buffer.alloc((width / 2) * (height / 2));
  for (let i = 0; i < width * height; i++) {
    const [r, g, b] = [rgb[i * 3]!, rgb[i * 3 + 1]!, rgb[i * 3 + 2]!];
    y[i] = clamp(0.299 * r + 0.587 * g + 0.114 * b);
  }
  for (let row = 0; row < height / 2; row++) {
    for (let col = 0; col < width / 2; col++) {
      let r = 0,
        g = 0,
        b = 0;
      for (const [dy, dx] of [
        [0, 0],
        [0, 1],
        [1, 0],
        [1, 1],
      ] as const) {
        const p = ((row * 2 + dy) * width + col * 2 + dx) * 3;
        r += rgb[p]!;
        g += rgb[p + 1]!;
        b += rgb[p + 2]!;
      }
      [r, g, b] = [r / 4, g / 4, b / 4];
      u[row * (width / 2) + col] = clamp(-0.168736 * r - 0.331264 * g + 0.5 * b + 128);
      v[row * (width / 2) + col] = clamp(0.5 * r - 0.418688 * g - 0.081312 * b + 128);
    }
  }
  const header = Buffer.from(`YUV4MPEG2 W${width} H${height} F10:1 Ip A1:1 C420jpeg\nFRAME\n`);
  writeFileSync(path, Buffer.concat([header, y, u, v]));
}

const clamp = (x: number) => Math.max(0, Math.min(255, Math.round(x)));

/** A VIN plate as a photo: dark characters on a light grey plate, as on a door-jamb sticker. */
export function vinPlate(vin: string): Promise<Buffer> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="1280" height="960">
    <rect width="1280" height="960" fill="#8a8f96"/>
    <rect x="90" y="330" width="1100" height="300" rx="18" fill="#d8d8d2" stroke="#44474c" stroke-width="6"/>
    <text x="140" y="420" font-family="DejaVu Sans, sans-serif" font-size="44" fill="#333">VEHICLE IDENTIFICATION NUMBER</text>
    <text x="140" y="540" font-family="DejaVu Sans Mono, monospace" font-size="92" font-weight="bold" fill="#111">${vin}</text>
  </svg>`;
  return sharp(Buffer.from(svg)).jpeg({ quality: 92 }).toBuffer();
}
