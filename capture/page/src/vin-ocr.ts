import { createWorker, OEM, PSM } from "tesseract.js";
import { vinFromOcr } from "../../../core/domain/vin.ts";

/**
 * Loaded only at the VIN step (a separate chunk): tesseract.js with its English data, all served by
 * the service itself, so nothing is fetched from elsewhere. Restricted to the VIN alphabet, then
 * corrected with the check digit.
 */
const ASSETS = "/capture/assets/ocr";

export async function readVin(photo: Blob): Promise<string | null> {
  const worker = await createWorker("eng", OEM.LSTM_ONLY, {
    workerPath: `${ASSETS}/worker.min.js`,
    corePath: `${ASSETS}/core`,
    langPath: `${ASSETS}/lang`,
    workerBlobURL: false,
    gzip: true,
    cacheMethod: "none",
  });
  try {
    await worker.setParameters({ tessedit_char_whitelist: "ABCDEFGHJKLMNPRSTUVWXYZ0123456789", tessedit_pageseg_mode: PSM.AUTO });
    const { data } = await worker.recognize(photo);
    return vinFromOcr(data.text);
  } finally {
    await worker.terminate();
  }
}
