import sharp from "sharp";
import type { Quality } from "../../core/schemas/report.ts";
import { ANALYSIS_SIZE, qualityOfGrey } from "./quality-of-grey.ts";

export { ANALYSIS_SIZE, QUALITY_THRESHOLDS, qualityOfGrey } from "./quality-of-grey.ts";

export async function measureQuality(image: Buffer): Promise<Quality> {
  const { data, info } = await sharp(image)
    .resize(ANALYSIS_SIZE, ANALYSIS_SIZE, { fit: "inside", withoutEnlargement: true })
    .greyscale()
    .raw()
    .toBuffer({ resolveWithObject: true });
  return qualityOfGrey(data, info.width, info.height);
}
