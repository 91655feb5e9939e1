import type { Models } from "./detect-photos.ts";
import { OnnxDetector, type Provider } from "./onnx-detector.ts";
import { PhotoJudge } from "./photo-judge.ts";

/**
 * Parts count from this score, for telling whether a photo shows a vehicle and which part a damage
 * is on. Measured (npm run eval:parts -- --threshold T) with the parts model trained on background
 * negatives, the parts model alone: at 0.03 it turns away 20 of the 799 car-damage valid photos
 * (close-ups) and lets 11 of 89 real street backgrounds through; at 0.05, 31 and 10; at 0.10, 77 and
 * 6. (Processing's gate also takes a sure glass shatter: see showsVehicle.) A car photo
 * turned away loses all its findings, a background let through gets findings only where the damage
 * model also fires, so the gate sits low. How often the right part is named: README, "Detection
 * and grading".
 */
export const PART_THRESHOLD = 0.03;

export type ModelConfig = {
  damageModel: string | null;
  partsModel: string | null;
  judgeModel?: string | null;
  closeupModel?: string | null;
  provider: Provider;
  thresholds: Record<string, number>;
  tiles: number;
};

/** Loads the configured models once for a worker; a model that cannot load is an error that says why. */
export async function loadModels(c: ModelConfig): Promise<Models> {
  const load = async (path: string | null, what: string, thresholds?: Record<string, number>, fallback?: number) => {
    if (!path) return null;
    try {
      return await OnnxDetector.load(path, { provider: c.provider, thresholds, fallback });
    } catch (error) {
      throw new Error(`the ${what} model at ${path} failed to load: ${(error as Error).message}`);
    }
  };
  return {
    damage: await load(c.damageModel, "damage", c.thresholds),
    parts: await load(c.partsModel, "parts", undefined, PART_THRESHOLD),
    judge: c.judgeModel
      ? await PhotoJudge.load(c.judgeModel, { provider: c.provider }).catch((error: Error) => {
          throw new Error(`the judge model at ${c.judgeModel} failed to load: ${error.message}`);
        })
      : null,
    // Its boxes are weighed against the damage model's class thresholds (detect-closeups.ts), not its own.
    closeup: c.damageModel ? await load(c.closeupModel ?? null, "close-up") : null,
    tiles: c.tiles,
  };
}

/** Releases the models' sessions. */
export async function closeModels(models: Models): Promise<void> {
  await Promise.all([models.damage?.close(), models.parts?.close(), models.judge?.close(), models.closeup?.close()]);
}
