import type { Models } from "./detect-photos.ts";
import { OnnxDetector, type Provider } from "./onnx-detector.ts";

export type ModelConfig = { damageModel: string | null; partsModel: string | null; provider: Provider; thresholds: Record<string, number> };

/** Loads the configured models once for a worker; a model that cannot load is an error that says why. */
export async function loadModels(c: ModelConfig): Promise<Models> {
  const load = async (path: string | null, what: string, thresholds?: Record<string, number>) => {
    if (!path) return null;
    try {
      return await OnnxDetector.load(path, { provider: c.provider, thresholds });
    } catch (error) {
      throw new Error(`the ${what} model at ${path} failed to load: ${(error as Error).message}`);
    }
  };
  return { damage: await load(c.damageModel, "damage", c.thresholds), parts: await load(c.partsModel, "parts", undefined) };
}
