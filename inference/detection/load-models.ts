import type { Models } from "./detect-photos.ts";
import { OnnxDetector, type Provider } from "./onnx-detector.ts";

/**
 * Parts count from this score, for telling whether a photo shows a vehicle and which part a damage
 * is on. Measured (npm run eval:parts -- --threshold T): at 0.10 the vehicle gate turns away 27 of the 799 car-damage
 * valid photos (close-ups); at 0.15, 82; at 0.20, 147. It is a weak gate: at 0.10 it lets through 62
 * of 89 real street backgrounds, and only blank photos (a grey frame, noise) score nothing.
 */
export const PART_THRESHOLD = 0.1;

export type ModelConfig = { damageModel: string | null; partsModel: string | null; provider: Provider; thresholds: Record<string, number> };

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
  return { damage: await load(c.damageModel, "damage", c.thresholds), parts: await load(c.partsModel, "parts", undefined, PART_THRESHOLD) };
}
