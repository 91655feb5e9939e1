import { isVehiclePart } from "../../core/domain/closeups.ts";
import type { Paint } from "../../core/domain/same-vehicle.ts";
import type { ExteriorAngle, SuggestedCloseup } from "../../core/schemas/capture.ts";
import { fromScaled, letterboxes, type Letterboxed } from "../detection/letterbox.ts";
import { PART_THRESHOLD } from "../detection/load-models.ts";
import type { ModelInputs } from "../../core/ports/model-input-store.ts";
import { OnnxDetector, type Provider } from "../detection/onnx-detector.ts";
import { PhotoJudge, type Judgement } from "../detection/photo-judge.ts";
import { suggestedCloseups } from "../detection/suggest-closeups.ts";
import { isWrongAngle, sidesShown } from "./angle-check.ts";
import { vehiclePaint } from "./vehicle-paint.ts";

/**
 * What an exterior photo's upload learns from the models: whether it shows another side than its
 * angle asks for (null: the check could not run), the close-ups worth asking for, and the vehicle's
 * paint where its panels show (core/domain/same-vehicle.ts).
 */
export type UploadVerdict = { wrongAngle: boolean | null; suggestedCloseups: SuggestedCloseup[]; paint: Paint | null };
/** The verdict of checks that could not run: the photo is taken without them. */
export const UNCHECKED: UploadVerdict = { wrongAngle: null, suggestedCloseups: [], paint: null };

/**
 * The checks on an exterior photo's upload: the parts model once, for the angle check
 * (angle-check.ts), the paint (vehicle-paint.ts) and to place the whole-photo judgement's suspicion on a part (suggest-closeups.ts);
 * the judgement model once, where one is configured. Each model is loaded on the first exterior
 * photo, so a process that never takes one never pays for it; one session each, reused. Both are
 * small (320 and 512 px); what the judge adds to an upload is measured by `npm run bench:upload-checks`.
 *
 * The checks only advise: a model that fails to load or to run leaves the upload without them
 * (logged through `onError`), and is tried again on the next photo; processing says what is wrong
 * with the model.
 */
export class UploadChecker {
  readonly #paths: { parts: string; judge: string | null };
  readonly #provider: Provider;
  readonly #onError: (error: unknown) => void;
  #parts: Promise<OnnxDetector> | undefined;
  #judge: Promise<PhotoJudge> | undefined;

  constructor(
    models: { partsModel: string; judgeModel: string | null },
    options: { provider?: Provider; onError: (error: unknown) => void },
  ) {
    this.#paths = { parts: models.partsModel, judge: models.judgeModel };
    this.#provider = options.provider ?? "cpu";
    this.#onError = options.onError;
  }

  /** `inputs`: the photo's pixels the upload already scaled for the models' sizes, so it needs no decode. */
  async check(angle: ExteriorAngle, jpeg: Buffer, inputs?: ModelInputs | null): Promise<UploadVerdict> {
    let parts: OnnxDetector;
    let judge: PhotoJudge | null;
    try {
      this.#parts ??= OnnxDetector.load(this.#paths.parts, { provider: this.#provider, fallback: PART_THRESHOLD });
      parts = await this.#parts;
    } catch (error) {
      this.#parts = undefined; // tried again on the next photo
      this.#onError(error);
      return UNCHECKED;
    }
    try {
      if (this.#paths.judge) this.#judge ??= PhotoJudge.load(this.#paths.judge, { provider: this.#provider });
      judge = (await this.#judge) ?? null;
    } catch (error) {
      this.#judge = undefined;
      this.#onError(error);
      judge = null;
    }
    try {
      const [forParts, forJudge] = await squares(jpeg, inputs, judge ? [parts.size, judge.size] : [parts.size]);
      const [[found], [judgement]] = await Promise.all([parts.detect([forParts!]), judge ? this.#judged(judge, forJudge!) : []]);
      const suggested = judgement ? suggestedCloseups(judgement, found!, judge!.size) : [];
      return {
        wrongAngle: isWrongAngle(angle, sidesShown(found!)),
        // Only parts a close-up can name: another parts model's classes are of no use to the page.
        suggestedCloseups: suggested.filter((s): s is SuggestedCloseup => isVehiclePart(s.part)),
        paint: vehiclePaint(forParts!, parts.size, found!),
      };
    } catch (error) {
      this.#onError(error);
      return UNCHECKED;
    }
  }

  /** The judgement, or none where the model fails: the angle check stands without it. */
  async #judged(judge: PhotoJudge, square: Letterboxed): Promise<Judgement[]> {
    try {
      return await judge.judge([square]);
    } catch (error) {
      this.#onError(error);
      return [];
    }
  }

  async close(): Promise<void> {
    const [parts, judge] = await Promise.all([this.#parts?.catch(() => undefined), this.#judge?.catch(() => undefined)]);
    await Promise.all([parts?.close(), judge?.close()]);
  }
}

/** The photo letterboxed for each size: from the pixels the upload scaled where it has them, else one decode for the rest. */
async function squares(jpeg: Buffer, inputs: ModelInputs | null | undefined, sizes: number[]): Promise<Letterboxed[]> {
  const stored = sizes.map((size) => inputs?.sizes.indexOf(size) ?? -1);
  const missing = sizes.filter((_, i) => stored[i]! < 0);
  const decoded = missing.length ? await letterboxes(jpeg, missing) : [];
  return sizes.map((size, i) => {
    const k = stored[i]!;
    return k >= 0 ? fromScaled({ ...inputs!.scaled, pixels: [inputs!.scaled.pixels[k]!] }, [size])[0]! : decoded[missing.indexOf(size)]!;
  });
}
