import { createHash } from "node:crypto";
import * as ort from "onnxruntime-node";
import { SEVERITIES, type Severity } from "../../core/domain/grading.ts";
import type { Letterboxed } from "./letterbox.ts";
import { inputSize, onnxMetadata } from "./onnx-metadata.ts";
import { unletterbox, type Box, type Letterbox } from "./postprocess.ts";
import { readModel, type Provider } from "./onnx-detector.ts";

/**
 * The whole photo judged at once (inference/models/judge, trained by train_judge.py): how sure the
 * model is that the photo shows damage (`damage`), a crushed, torn or missing part (`broken`), the
 * worst damage's severity, and per stride-32 cell of the letterboxed square, where. A box detector
 * at this size cannot place a box on a 2% scratch on a whole car; this says the photo shows one.
 */
export type Judgement = {
  damage: number;
  broken: number;
  severity: Severity;
  /** Cells per side of the square; the cell maps are row-major, grid × grid. */
  grid: number;
  damageCells: Float32Array;
  brokenCells: Float32Array;
  lb: Letterbox;
};

/** The outputs' layout, as train_judge.py writes it into the model's metadata. */
const SCORES = ["damage", "broken", "minor", "moderate", "severe"];
const CELLS = ["damage", "broken"];

export class PhotoJudge {
  readonly size: number;
  readonly info: { name: string; version: string };
  readonly #session: ort.InferenceSession;

  private constructor(session: ort.InferenceSession, size: number, info: { name: string; version: string }) {
    this.#session = session;
    this.size = size;
    this.info = info;
  }

  /** Throws with the reason when the file is not a photo judgement model. */
  static async load(path: string, options: { provider?: Provider } = {}): Promise<PhotoJudge> {
    const bytes = await readModel(path);
    const meta = onnxMetadata(bytes);
    if (meta.task !== "photo-judgement") throw new Error(`${path} is not a photo judgement model (metadata task '${meta.task}')`);
    // judge() reads the outputs by position: a model laid out otherwise would be misread, not refused.
    const listed = (v: string | undefined) => (v ? JSON.stringify(JSON.parse(v)) : "none");
    if (listed(meta.scores) !== JSON.stringify(SCORES) || listed(meta.cells) !== JSON.stringify(CELLS))
      throw new Error(
        `${path} gives scores ${meta.scores} and cells ${meta.cells}; expected ${JSON.stringify(SCORES)} and ${JSON.stringify(CELLS)}`,
      );
    const session = await ort.InferenceSession.create(bytes, {
      executionProviders: [options.provider ?? "cpu"],
      graphOptimizationLevel: "all",
    });
    const digest = createHash("sha256").update(bytes).digest("hex").slice(0, 12);
    return new PhotoJudge(session, inputSize(meta), { name: meta.description ?? "photo-judge", version: digest });
  }

  async judge(batch: Letterboxed[]): Promise<Judgement[]> {
    if (batch.length === 0) return [];
    const plane = 3 * this.size * this.size;
    const input = new Float32Array(batch.length * plane);
    for (const [i, b] of batch.entries()) input.set(b.chw, i * plane);
    const out = await this.#session.run({ images: new ort.Tensor("float32", input, [batch.length, 3, this.size, this.size]) });
    const scores = out.scores!.data as Float32Array;
    const cells = out.cells!.data as Float32Array;
    const grid = (out.cells!.dims as number[])[2]!;
    const cellPlane = grid * grid;
    return batch.map((b, i) => {
      const s = scores.subarray(i * 5, i * 5 + 5);
      const severities = [s[2]!, s[3]!, s[4]!];
      const worst = severities.indexOf(Math.max(...severities));
      return {
        damage: s[0]!,
        broken: s[1]!,
        severity: SEVERITIES[worst]!,
        grid,
        damageCells: cells.slice(2 * i * cellPlane, (2 * i + 1) * cellPlane),
        brokenCells: cells.slice((2 * i + 1) * cellPlane, (2 * i + 2) * cellPlane),
        lb: b.lb,
      };
    });
  }

  async close(): Promise<void> {
    await this.#session.release();
  }
}

/**
 * Where on the photo a judgement comes from: the extent of the cells scoring at least half the
 * map's peak (and at least `floor`), in the photo's pixels; the whole photo where no cell stands out.
 */
export function judgedRegion(cells: Float32Array, grid: number, lb: Letterbox, size: number, floor = 0.2): Box {
  const peak = Math.max(...cells);
  const whole = { x1: 0, y1: 0, x2: lb.width, y2: lb.height };
  if (peak < floor) return whole;
  const cut = Math.max(floor, peak / 2);
  let c1 = grid;
  let r1 = grid;
  let c2 = -1;
  let r2 = -1;
  for (let r = 0; r < grid; r++)
    for (let c = 0; c < grid; c++)
      if (cells[r * grid + c]! >= cut) {
        c1 = Math.min(c1, c);
        r1 = Math.min(r1, r);
        c2 = Math.max(c2, c);
        r2 = Math.max(r2, r);
      }
  const cell = size / grid;
  const box = unletterbox({ x1: c1 * cell, y1: r1 * cell, x2: (c2 + 1) * cell, y2: (r2 + 1) * cell }, lb);
  return box.x2 > box.x1 && box.y2 > box.y1 ? box : whole;
}
