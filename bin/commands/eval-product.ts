import { join } from "node:path";
import type { Config } from "../../core/runtime/config.ts";
import { evaluatePipeline } from "../../inference/evaluation/product-eval.ts";
import { evaluate } from "./eval.ts";

/**
 * `vehicle-inspection eval-product [--datasets DIR] [--fold N]`: the product as customers meet it
 * (clean cars, whole cars with damage, through the whole pipeline) and the damage model on
 * close-ups, in one run; the last line is one JSON object with all three. `fold` picks the fifth of
 * car-damage-severity measured for whole cars (the held-out one unless told).
 */
export async function evaluateProduct(config: Config, datasets: string, log: (line: string) => void = console.log, fold?: number) {
  const pipeline = await evaluatePipeline(config, datasets, log, fold);
  const closeUps = await evaluate(config, join(datasets, "car-damage/valid"), undefined, (line) => log(`close-ups: ${line}`));
  const summary = { ...pipeline, close_ups: { map50: closeUps.map50, map50_95: closeUps.map50_95 } };
  log(JSON.stringify(summary));
  return summary;
}
