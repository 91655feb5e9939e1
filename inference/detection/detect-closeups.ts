import { detectImages, type ImageDetections } from "./detect-images.ts";
import type { ScaledPixels } from "./letterbox.ts";
import { fused, viewFloor, type Detected, type OnnxDetector } from "./onnx-detector.ts";

/**
 * Close-ups looked at at full strength (issue 36): each through the damage model as it is and
 * mirrored (OnnxDetector's MIRRORED), and, where a close-up model is configured
 * (inference/models/closeups: the damage model's network trained on close-ups alone, at 512 and at
 * 640 px, its weights the two runs' mean, read at 512 px), through that one too, as it is and
 * mirrored, at its own size. The four views' boxes are fused at once, as the two views of one model
 * are (fuseViews at MIRRORED.fuseIou: a box all four views found keeps their mean score, one only one
 * view found a quarter of its score), and only then do the damage model's class thresholds apply.
 * The two models see close-ups at two resolutions and disagree where each is wrong: on car-damage
 * `valid` by `eval`, mAP50 0.570 with the damage model alone; fused with the close-up model's (its
 * card for each step), 0.592 each model's views first, 0.596 all four at once, 0.597 all four with
 * the mean of two runs' weights.
 *
 * `images`: each close-up encoded, or its model inputs (pixels scaled for `sizes`, in that order);
 * `bytes`: each close-up encoded, for a model whose size has no stored input. Returns the damage
 * detections (in the damage model's classes) and, where `parts` is given, the parts model's, per close-up.
 */
export async function detectCloseups(
  models: { damage: OnnxDetector; closeup: OnnxDetector | null; parts: OnnxDetector | null },
  images: (Buffer | ScaledPixels)[],
  { sizes = [], bytes, stopping }: { sizes?: readonly number[]; bytes: Buffer[]; stopping?: () => void },
): Promise<{ damage: Pick<ImageDetections, "found" | "lb">[]; parts: ImageDetections[] | null }> {
  const { damage, closeup, parts } = models;
  const thresholds = damage.thresholds;
  // Each view is read from a low floor, so that a box under a class's threshold in one view or one
  // model still counts towards the fused score.
  const floor = viewFloor(thresholds);
  const mirrored = images.map(() => true);
  const [damageRuns, partsRuns] = await detectImages(parts ? [damage, parts] : [damage], images, {
    mirrored,
    thresholds: [floor],
    stopping,
  });
  let found = damageRuns!.map((r) => r.found);
  if (closeup) {
    // The close-up model's classes, as the damage model numbers them (matched by name; others dropped).
    const asDamage = closeup.names.map((n) => damage.names.indexOf(n));
    // The damage and parts models read the stored inputs by position (sizes starts with theirs:
    // inputSizesFor); the close-up model's size is found among them, or the close-up is decoded.
    const k = sizes.indexOf(closeup.size);
    const inputs = images.map((image, i) =>
      Buffer.isBuffer(image) ? image : k >= 0 ? { ...image, pixels: [image.pixels[k]!] } : bytes[i]!,
    );
    const [closeRuns] = await detectImages([closeup], inputs, {
      mirrored,
      // A class the damage model lacks is read as little as possible, and dropped below.
      thresholds: [asDamage.map((c) => (c >= 0 ? floor[c]! : 1))],
      stopping,
    });
    const inDamageClasses = (view: Detected[]): Detected[] =>
      view.flatMap((d) => {
        const cls = asDamage[d.cls]!;
        return cls >= 0 ? [{ ...d, cls, name: damage.names[cls]! }] : [];
      });
    // All four views at once (each model's two, not each model's fused first): a box only one view
    // saw keeps a quarter of its score, one all four saw their mean.
    found = damageRuns!.map((own, i) => fused([...own.views, ...closeRuns![i]!.views.map(inDamageClasses)], floor, own.lb));
  }
  return {
    damage: found.map((f, i) => ({ found: f.filter((d) => d.score >= thresholds[d.cls]!), lb: damageRuns![i]!.lb })),
    parts: partsRuns ?? null,
  };
}
