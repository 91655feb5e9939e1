import type { ExteriorAngle } from "../../core/schemas/capture.ts";
import { fromScaled, letterbox } from "../detection/letterbox.ts";
import { PART_THRESHOLD } from "../detection/load-models.ts";
import type { ModelInputs } from "../detection/model-input.ts";
import { OnnxDetector, type Provider } from "../detection/onnx-detector.ts";
import { isWrongAngle, sidesShown } from "./angle-check.ts";

/**
 * The angle check on upload: the parts model on the photo, then angle-check.ts's rule. Loaded on
 * the first exterior photo, so a process that never takes one never pays for the model; one
 * session, reused. The parts model is small (320 px): a few ms a photo beside the upload's decode
 * and re-encode.
 */
export class AngleChecker {
  readonly #path: string;
  readonly #provider: Provider;
  readonly #onError: (error: unknown) => void;
  #model: Promise<OnnxDetector> | undefined;

  constructor(partsModelPath: string, options: { provider?: Provider; onError: (error: unknown) => void }) {
    this.#path = partsModelPath;
    this.#provider = options.provider ?? "cpu";
    this.#onError = options.onError;
  }

  /**
   * True when the photo clearly shows another side of the vehicle than `angle` asks for; null when
   * the check could not run (the model failed to load or to run): the upload goes on without it,
   * since the check only advises, and processing says what is wrong with the model.
   */
  async isWrongAngle(angle: ExteriorAngle, jpeg: Buffer, inputs?: ModelInputs | null): Promise<boolean | null> {
    try {
      this.#model ??= OnnxDetector.load(this.#path, { provider: this.#provider, fallback: PART_THRESHOLD });
      const model = await this.#model;
      // The pixels the upload already scaled for this model's size, else a decode of the photo.
      const k = inputs?.sizes.indexOf(model.size) ?? -1;
      const input =
        k >= 0
          ? fromScaled({ ...inputs!.scaled, pixels: [inputs!.scaled.pixels[k]!] }, [model.size])[0]!
          : await letterbox(jpeg, model.size);
      const [found] = await model.detect([input]);
      return isWrongAngle(angle, sidesShown(found!));
    } catch (error) {
      this.#model = undefined; // tried again on the next photo
      this.#onError(error);
      return null;
    }
  }

  async close(): Promise<void> {
    const model = await this.#model?.catch(() => undefined);
    await model?.close();
  }
}
