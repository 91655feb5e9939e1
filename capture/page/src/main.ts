import { CaptureApi, isInactive, type Session, type Step } from "./api.ts";
import { applyBranding, endBranding } from "./brand.ts";
import { camera, cameraView, fail } from "./camera-view.ts";
import { askSuggested, type CloseupsContext, closeupsView, noteSuggestions } from "./closeups.ts";
import { focusHeading, h } from "./dom.ts";
import { toJpeg } from "./frame.ts";
import { localeFor, t, useLocale, type MessageKey } from "./i18n.ts";
import { overlaySvg } from "./overlays.ts";
import { progressView } from "./progress.ts";
import { reviewView } from "./review.ts";
import { useThumbsOf } from "./thumbs.ts";
import { normalizeVin, vinProblem } from "../../../core/domain/vin.ts";

const app = document.getElementById("app")!;
const token = decodeURIComponent(location.pathname.split("/").pop() ?? "");
const api = new CaptureApi(token);
useThumbsOf(token);
let session: Session;
/** The view shown: a step's index; then the close-ups (CLOSEUPS()), then the review (REVIEW()). */
let current = 0;
const CLOSEUPS = () => session.steps.length;
const REVIEW = () => session.steps.length + 1;
/** What follows the steps: the close-ups, unless the inspection takes none (capture.closeups off). */
const AFTER_STEPS = () => (session.closeup_policy === "off" ? REVIEW() : CLOSEUPS());
/** Once the review was shown, each photo taken leads back to it (a retake from there), not on through the steps. */
let reviewed = false;

function end(state: string): void {
  camera.close();
  endBranding();
  const key = ["submitted", "completed", "processing", "canceled", "expired", "failed"].includes(state) ? state : "invalid";
  app.replaceChildren(
    h("main", { class: "end" }, h("h1", {}, t(`end.${key}.title` as MessageKey)), h("p", {}, t(`end.${key}.body` as MessageKey))),
  );
  focusHeading(app);
}

const vehicleText = (v: { make: string | null; model: string | null; year: number | null }) =>
  [v.year, v.make, v.model].filter(Boolean).join(" ") || "—";
const progress = () => progressView({ session, current, show });

const closeupsContext = (back: () => void): CloseupsContext => ({ app, api, session, progress, done: () => show(REVIEW()), back });

function show(index: number): void {
  if (index === CLOSEUPS() && session.closeup_policy === "off") index = REVIEW();
  current = index;
  if (index === CLOSEUPS()) {
    closeupsView(closeupsContext(() => show(index - 1)));
    return;
  }
  if (index > CLOSEUPS()) {
    reviewed = true;
    reviewView({ app, api, session, progress, retake: show, closeups: () => show(CLOSEUPS()), submitted: () => end("submitted") });
    return;
  }
  const step = session.steps[index]!;
  const nav = h(
    "div",
    { class: "nav" },
    index > 0 && h("button", { type: "button", class: "button secondary", onclick: () => show(index - 1) }, t("step.back")),
    (step.done || !step.required) &&
      h(
        "button",
        { type: "button", class: "button secondary", onclick: () => show(index + 1) },
        step.done ? t("step.next") : t("step.skip"),
      ),
  );
  cameraView(app, {
    header: progress(),
    heading: t(`angle.${step.angle}` as MessageKey),
    prompt: t(`prompt.${step.angle}` as MessageKey),
    overlay: overlaySvg(step.angle),
    quality: step.quality,
    nav,
    again: () => show(index),
    target: {
      key: step.angle,
      upload: (photo, onRetry) => {
        api.onRetry = onRetry;
        return api.upload(step.angle, photo);
      },
      stored: (result) => {
        step.done = true;
        step.quality = result.quality;
        noteSuggestions(step.angle, result.suggested_closeups);
      },
      accepted: (still) => advance(step, still),
      showAccepted: step.angle !== "vin",
    },
  });
}

/**
 * After a step's photo: the VIN read from it; with guided close-ups, the close-ups its upload
 * suggested, asked for while the customer still stands there; then the next required step not done,
 * else what follows the steps.
 */
async function advance(step: Step, still: HTMLCanvasElement): Promise<void> {
  if (step.angle === "vin") return vinStep(still);
  const index = current;
  const onward = () => {
    current = index;
    const next = session.steps.findIndex((s, i) => i > index && s.required && !s.done);
    if (next === -1 || reviewed) return afterSteps();
    show(next);
  };
  if (session.closeup_policy === "guided")
    return askSuggested(
      closeupsContext(() => show(index)),
      step.angle,
      onward,
    );
  return onward();
}

/** After the VIN's confirmation: a required step not done, else the close-ups, or the review if it was shown. */
function afterVin(): void {
  const next = session.steps.findIndex((s) => s.required && !s.done);
  show(next !== -1 ? next : reviewed ? REVIEW() : AFTER_STEPS());
}

/**
 * Once every required step is done: the VIN's confirmation if its photo is in but no VIN was
 * confirmed (a reload came between the two), else the close-ups.
 */
function afterSteps(): Promise<void> | void {
  const vin = session.steps.findIndex((s) => s.angle === "vin");
  if (vin !== -1 && session.steps[vin]!.done && session.vin_confirmed === null) {
    current = vin;
    return vinStep(null);
  }
  afterVin();
}

/** The VIN read from the photo just taken (`still`), or typed in when there is none: after a reload the photo is in, the confirmation not yet. */
async function vinStep(still: HTMLCanvasElement | null): Promise<void> {
  const status = h("p", { class: "status", role: "status", "aria-live": "polite" }, t("vin.reading"));
  const input = h("input", {
    id: "vin",
    name: "vin",
    autocomplete: "off",
    autocapitalize: "characters",
    spellcheck: "false",
    maxlength: "17",
    inputmode: "text",
    "aria-describedby": "vin-help",
  });
  const help = h("p", { id: "vin-help", class: "help" });
  const confirm = h("button", { type: "submit", class: "button" }, t("vin.confirm"));
  const form = h("form", { class: "vin", novalidate: true }, h("label", { for: "vin" }, t("vin.label")), input, help, confirm);
  app.replaceChildren(
    progress(),
    h(
      "main",
      { class: "step" },
      h("h1", {}, t("angle.vin")),
      h("p", { class: "prompt" }, t("vin.on_file", { vehicle: `${session.vehicle.vin} · ${vehicleText(session.vehicle)}` })),
      // The photo just taken, to check the VIN read against: this is the VIN photo's accepted view.
      still && h("div", { class: "vin-photo" }, Object.assign(still, { className: "still" })),
      status,
      form,
    ),
  );
  focusHeading(app);

  const decoded = h("p", { class: "decoded", "aria-live": "polite" });
  form.insertBefore(decoded, help);
  const check = () => {
    const vin = normalizeVin(input.value);
    const problem = vin ? vinProblem(vin) : "length";
    help.textContent = problem
      ? t("vin.invalid", { reason: t(`vin.problem.${problem}`) })
      : vin === session.vehicle.vin
        ? t("vin.matches")
        : t("vin.differs");
    input.setAttribute("aria-invalid", String(Boolean(problem)));
    decoded.textContent = "";
    // A valid VIN is decoded at once, so the customer checks make, model and year before confirming.
    if (!problem) {
      api.decodeVin(vin).then(
        (r) => {
          if (normalizeVin(input.value) === vin) decoded.textContent = t("vin.decoded", { vehicle: vehicleText(r) });
        },
        () => {},
      );
    }
    return problem ? null : vin;
  };
  input.addEventListener("input", check);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const vin = check();
    if (!vin) return input.focus();
    try {
      const result = await api.confirmVin(vin);
      session.vin_confirmed = result.vin;
      status.textContent = t("vin.confirmed", { vehicle: `${result.vin} · ${vehicleText(result)}` });
      setTimeout(afterVin, 600);
    } catch (error) {
      fail(error, status);
    }
  });

  let read: string | null = null;
  if (still) {
    const blob = await toJpeg(still, still.width, still.height);
    const { readVin } = await import("./vin-ocr.ts");
    read = await readVin(blob).catch(() => null);
  }
  input.value = read ?? session.vin_confirmed ?? "";
  status.textContent = read ? t("vin.read") : still ? t("vin.not_read") : t("vin.resume");
  if (input.value) check();
  input.focus();
}

async function boot(): Promise<void> {
  // The catalogue of the inspection's capture.locale (written into the page by the server), else the
  // browser's language, loads while the session does.
  const messages = useLocale(localeFor(document.body.dataset.locale || null));
  const state = document.body.dataset.state ?? "invalid";
  if (state !== "active") return messages.then(() => end(state));
  try {
    [session] = await Promise.all([api.session(), messages]);
  } catch (error) {
    await messages;
    return isInactive(error) ? location.reload() : end("invalid");
  }
  applyBranding(session);
  // Resume where the customer was: the first required step not done, else what follows the steps.
  const next = session.steps.findIndex((s) => s.required && !s.done);
  if (next === -1) return afterSteps();
  show(next);
}

void boot();
