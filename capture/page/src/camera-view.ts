import { CaptureApiError, isInactive, problemMessage, type PhotoResult, type Quality } from "./api.ts";
import { Camera } from "./camera.ts";
import { fill, focusHeading, h } from "./dom.ts";
import { decodeFile, frameQuality, toJpeg } from "./frame.ts";
import { t } from "./i18n.ts";
import { keepThumb } from "./thumbs.ts";

/** After this many refused tries of one photo, the customer may keep it anyway (it stays flagged). */
const TRIES_BEFORE_OVERRIDE = 2;

export const camera = new Camera(h("video", { class: "live", "aria-hidden": "true", muted: true, playsinline: true }));
let cameraReady: boolean | null = null;
const tries = new Map<string, number>();

/** What a camera view takes a photo for: a step of the walkaround, or a close-up. */
export type Target = {
  /** Refused tries are counted by this: the step's angle, or the close-up's slot. */
  key: string;
  /** `onRetry` tells the customer the upload is being retried on a poor connection. */
  upload(photo: Blob, onRetry: (seconds: number) => void): Promise<PhotoResult>;
  /** The server stored the photo (passed or not). */
  stored(result: PhotoResult): void;
  /** The photo is in, passed or kept anyway, and the customer tapped Next (see showAccepted): the page moves on. */
  accepted(still: HTMLCanvasElement): void | Promise<void>;
  /** False where the next view shows the photo itself (the VIN's confirmation): no accepted view, no Next to tap. */
  showAccepted?: boolean;
};

export type CameraViewOptions = {
  /** Shown above the view: the progress. */
  header: HTMLElement;
  heading: string;
  prompt: string;
  /** An SVG outline laid over the live camera, or none. */
  overlay: string;
  target: Target;
  /** The server's verdict on the photo already taken, if any. */
  quality: Quality | null;
  /** The buttons below the view (back, next, skip). */
  nav: HTMLElement;
  /** Shows this view again, for a retake. */
  again: () => void;
};

/** Any request can find the link inactive (canceled or expired meanwhile): the server then renders the end page. */
export function fail(error: unknown, status: HTMLElement): void {
  if (isInactive(error)) location.reload();
  else status.textContent = error instanceof CaptureApiError ? error.message : t("upload.failed");
}

export const describe = (problems: Quality["problems"]) => problems.map((p) => t(problemMessage(p))).join(" ");

/** The live camera (or, without one, the file input) with a prompt; the photo taken goes to `target`. */
export function cameraView(app: HTMLElement, o: CameraViewOptions): void {
  const status = h("p", { class: "status", role: "status", "aria-live": "polite" });
  const actions = h("div", { class: "actions" });
  const finder = h("div", { class: "viewfinder" });
  finder.innerHTML = o.overlay;
  const fileInput = h("input", { type: "file", accept: "image/*", capture: "environment", id: "file", class: "visually-hidden" });
  const fileLabel = h("label", { for: "file", class: "button secondary" }, t("camera.file"));
  const ui = { status, actions, finder, nav: o.nav, again: o.again };
  fileInput.addEventListener("change", async () => {
    const file = fileInput.files?.[0];
    fileInput.value = "";
    if (file) {
      const bitmap = await decodeFile(file);
      await take(o.target, bitmap, bitmap.width, bitmap.height, ui);
    }
  });
  const view = h(
    "main",
    { class: "step" },
    // Focus goes to the heading on each step; its description makes a screen reader read the prompt too.
    h("h1", { "aria-describedby": "prompt" }, o.heading),
    h("p", { class: "prompt", id: "prompt" }, o.prompt),
    finder,
    status,
    actions,
    fileInput,
    o.nav,
  );
  const attachCamera = () => {
    finder.prepend(camera.video);
    fill(
      actions,
      h(
        "button",
        { type: "button", class: "button shutter", onclick: () => take(o.target, camera.video, ...camera.size, ui) },
        t("camera.shutter"),
      ),
      fileLabel,
    );
  };
  // The video moves to the new view in the same task that replaces the old one: a media element
  // left out of the document past that is paused by the browser.
  if (cameraReady) attachCamera();
  app.replaceChildren(o.header, view);
  focusHeading(app);
  if (o.quality) status.textContent = o.quality.passed ? t("upload.done") : describe(o.quality.problems);
  if (cameraReady) {
    void camera.video.play().catch(() => {});
  } else if (cameraReady === null) {
    void camera.open().then((ready) => {
      cameraReady = ready;
      if (ready && view.isConnected) attachCamera();
      else if (!ready) {
        status.textContent ||= t("camera.unavailable");
        fill(actions, fileLabel);
      }
    });
  } else {
    status.textContent ||= t("camera.unavailable");
    fill(actions, fileLabel);
  }
}

type Ui = { status: HTMLElement; actions: HTMLElement; finder: HTMLElement; nav: HTMLElement; again: () => void };

/** Checks the frame, then uploads it; a refused frame can be retaken, and kept anyway after two tries. */
async function take(target: Target, source: CanvasImageSource, width: number, height: number, ui: Ui, override = false): Promise<void> {
  const { status, actions, finder, again } = ui;
  const still = document.createElement("canvas");
  still.width = width;
  still.height = height;
  still.getContext("2d")!.drawImage(source, 0, 0, width, height);
  const local = frameQuality(still, width, height);
  const refused = () => {
    const n = (tries.get(target.key) ?? 0) + 1;
    tries.set(target.key, n);
    return n >= TRIES_BEFORE_OVERRIDE;
  };
  if (!local.passed && !override) {
    const mayKeep = refused();
    status.textContent = describe(local.problems);
    fill(
      actions,
      h("button", { type: "button", class: "button", onclick: again }, t("check.retake")),
      mayKeep &&
        h(
          "button",
          { type: "button", class: "button secondary", onclick: () => take(target, still, width, height, ui, true) },
          t("check.use_anyway"),
        ),
    );
    return;
  }
  finder.replaceChildren(Object.assign(still, { className: "still" }));
  fill(actions);
  status.textContent = t("upload.sending");
  let result: PhotoResult;
  try {
    result = await target.upload(await toJpeg(still, width, height), (seconds) => {
      status.textContent = t("upload.retrying", { seconds });
    });
  } catch (error) {
    fail(error, status);
    fill(
      actions,
      h(
        "button",
        { type: "button", class: "button", onclick: () => take(target, still, width, height, ui, override) },
        t("camera.shutter"),
      ),
    );
    return;
  }
  target.stored(result);
  keepThumb(target.key, still);
  if (!result.quality.passed && !override) {
    const mayKeep = refused();
    status.textContent = describe(result.quality.problems);
    fill(
      actions,
      h("button", { type: "button", class: "button", onclick: again }, t("check.retake")),
      mayKeep &&
        h(
          "button",
          { type: "button", class: "button secondary", onclick: () => accepted(target, still, result.quality, ui) },
          t("check.use_anyway"),
        ),
    );
    return;
  }
  await accepted(target, still, result.quality, ui);
}

/**
 * The photo just accepted, with "Accepted" or its problems, until the customer taps Next; Retake is
 * beside it. Not moved on after a moment, as some capture apps do: the customer holds the phone up to
 * the car and may not be looking when a timer fires, so they would never see a verdict they could act
 * on while the car is still in front of them; a screen reader needs the time to read it (WCAG 2.2.1
 * asks that a time limit can be turned off); and one tap on Next is the same tap that starts the next
 * step's shot. Where the next view shows the photo itself (the VIN's confirmation), it moves on at once.
 */
async function accepted(target: Target, still: HTMLCanvasElement, quality: Quality, ui: Ui): Promise<void> {
  const { status, actions, finder, nav, again } = ui;
  if (target.showAccepted === false) {
    status.textContent = quality.passed ? t("check.good") : t("check.flagged");
    await target.accepted(still);
    return;
  }
  const badge = h(
    "p",
    { class: `badge ${quality.passed ? "ok" : "warn"}`, "aria-hidden": "true" },
    quality.passed ? t("accepted.badge") : t("accepted.badge_flagged"),
  );
  finder.replaceChildren(still, badge);
  status.textContent = quality.passed ? t("accepted.good") : `${t("check.flagged")} ${describe(quality.problems)}`;
  nav.hidden = true;
  const next = h("button", { type: "button", class: "button shutter", onclick: () => target.accepted(still) }, t("step.next"));
  fill(actions, next, h("button", { type: "button", class: "button secondary", onclick: again }, t("check.retake")));
  next.focus();
}
