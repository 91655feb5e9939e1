import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../core/runtime/config.ts";
import { compareFindings } from "../../core/domain/comparison.ts";
import type { Models } from "../detection/detect-photos.ts";
import { loadModels } from "../detection/load-models.ts";
import sharp from "sharp";
import { isHeldOut } from "./held-out.ts";
import { photoFindings } from "./photo-findings.ts";

/** A seeded uniform [0, 1) generator, so a run can be repeated. */
function mulberry32(a: number): () => number {
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The before/after comparison measured as a rental desk meets it (issue 32): pairs of photos of one
 * car, "before" with one damage pasted on a part, "after" the same car from a slightly different spot
 * (another framing and exposure) with that damage and a new one on another part, built with
 * training's copy-paste from photos no model trained on (inference/training/handover_pairs.py). Each
 * photo goes through processing's pipeline as a front photo; the findings are compared as a report's
 * are (core/domain/comparison.ts). A finding is the pasted damage's when its centre lies in the
 * damage's box.
 *
 * usage: node inference/evaluation/handover-eval.ts [pairs] [seed]   (npm run eval:handover)
 */
type Pasted = { type: string; part: string; box: number[]; box_after?: number[] };
type Pair = { car: string; before: string; after: string; old: Pasted; new: Pasted };

const pairs = Number(process.argv[2] ?? 100);
const seed = Number(process.argv[3] ?? 0);
const dir = mkdtempSync(join(tmpdir(), "handover-"));
try {
  execFileSync("bash", [join(import.meta.dirname, "../training/python.sh"), "handover_pairs.py", dir, String(pairs), String(seed)], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  const manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8")) as Pair[];
  const config = loadConfig(process.env);
  const models: Models = await loadModels(config.models);

  const findingsOf = (bytes: Buffer, tag: string) => photoFindings(models, bytes, tag);
  const sizeOf = async (file: string) => {
    const { width = 0, height = 0 } = await sharp(join(dir, file)).metadata();
    return { w: width, h: height };
  };
  /** Whether a finding (bbox relative: x, y, w, h) has its centre in a pasted damage's box (pixels). */
  const on = (f: { box: number[] }, box: number[], size: { w: number; h: number }) => {
    const [x, y, w, h] = f.box as [number, number, number, number];
    const [cx, cy] = [(x + w / 2) * size.w, (y + h / 2) * size.h];
    return cx >= box[0]! && cx <= box[2]! && cy >= box[1]! && cy <= box[3]!;
  };

  let newSeen = 0;
  let newCalledNew = 0;
  let oldSeenBoth = 0;
  let oldCalledNew = 0;
  let otherAfter = 0;
  let otherCalledNew = 0;
  for (const p of manifest) {
    const [before, after] = await Promise.all([
      findingsOf(readFileSync(join(dir, p.before)), "b"),
      findingsOf(readFileSync(join(dir, p.after)), "a"),
    ]);
    const c = compareFindings("insp_before", after, before);
    const isNew = new Set(c.new);
    const size = await sizeOf(p.after);
    const sizeBefore = await sizeOf(p.before);
    const onNew = after.filter((f) => on(f, p.new.box, size));
    const onOld = after.filter((f) => on(f, p.old.box_after!, size));
    if (onNew.length > 0) {
      newSeen++;
      if (onNew.some((f) => isNew.has(f.id))) newCalledNew++;
    }
    if (onOld.length > 0 && before.some((f) => on(f, p.old.box, sizeBefore))) {
      oldSeenBoth++;
      if (onOld.some((f) => isNew.has(f.id))) oldCalledNew++;
    }
    for (const f of after.filter((f) => !onNew.includes(f) && !onOld.includes(f))) {
      otherAfter++;
      if (isNew.has(f.id)) otherCalledNew++;
    }
  }
  // Real damage the models see: the held-out whole-car photos of car-damage-severity, each taken
  // "again" (another framing, 0-8% off each side, and exposure). Every finding of the second photo is
  // of damage that was there: the share called new is pre-existing damage called new. Then each
  // baseline finding in turn is left out of the baseline, as if that damage came since: whether its
  // finding in the second photo is called new measures the pairing's mistakes (a new damage paired
  // with another of its type nearby on the part).
  const SEVERITY_IMAGES = join(import.meta.dirname, "../../../shared/datasets/car-damage-severity/images");
  const rng = mulberry32(seed + 1);
  let realAfter = 0;
  let realCalledNew = 0;
  let leftOut = 0;
  let leftOutCalledNew = 0;
  for (const file of readdirSync(SEVERITY_IMAGES).filter(isHeldOut).sort()) {
    const bytes = readFileSync(join(SEVERITY_IMAGES, file));
    const { width = 0, height = 0 } = await sharp(bytes).metadata();
    const [l, t, r, b] = [width, height, width, height].map((side) => Math.round(rng() * 0.08 * side)) as [number, number, number, number];
    const again = await sharp(bytes)
      .extract({ left: l, top: t, width: width - l - r, height: height - t - b })
      .resize(width, height, { fit: "fill" })
      .modulate({ brightness: 0.85 + rng() * 0.3 })
      .jpeg({ quality: 90 })
      .toBuffer();
    const [before, after] = await Promise.all([findingsOf(bytes, "b"), findingsOf(again, "a")]);
    if (before.length === 0) continue;
    const all = compareFindings("insp_before", after, before);
    realAfter += after.length;
    realCalledNew += all.new.length;
    for (const gone of before) {
      // The second photo's finding of that damage: the one paired with it when it was in the baseline.
      const its = all.preexisting.find((x) => x.baseline_finding === gone.id)?.finding;
      if (!its) continue;
      const c = compareFindings(
        "insp_before",
        after,
        before.filter((f) => f !== gone),
      );
      leftOut++;
      if (c.new.includes(its)) leftOutCalledNew++;
    }
  }
  await Promise.all([models.damage?.close(), models.parts?.close(), models.judge?.close()]);
  const pct = (a: number, b: number) => (b === 0 ? "n/a" : `${((100 * a) / b).toFixed(1)}%`);
  console.log(`handover pairs: ${manifest.length} (seed ${seed}), car-parts test photos, damage from car-damage/valid`);
  console.log(`new damage seen by the models in the after photo: ${newSeen} of ${manifest.length} (${pct(newSeen, manifest.length)})`);
  console.log(`  of those, called new: ${newCalledNew} (${pct(newCalledNew, newSeen)})  target >= 90%`);
  console.log(`pre-existing damage seen in both photos: ${oldSeenBoth} of ${manifest.length}`);
  console.log(`  of those, called new: ${oldCalledNew} (${pct(oldCalledNew, oldSeenBoth)})  target <= 5%`);
  console.log(
    `other findings in the after photos (neither pasted damage): ${otherAfter}, called new: ${otherCalledNew} (${pct(otherCalledNew, otherAfter)})`,
  );
  console.log("real damage, held-out car-damage-severity photos taken again (another framing and exposure):");
  console.log(
    `  findings in the second photos: ${realAfter}, called new: ${realCalledNew} (${pct(realCalledNew, realAfter)})  target <= 5%`,
  );
  console.log(
    `  a paired damage left out of the baseline, called new: ${leftOutCalledNew} of ${leftOut} (${pct(leftOutCalledNew, leftOut)})  target >= 90%`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
