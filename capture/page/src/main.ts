import { CaptureApi, CaptureApiError, isInactive, problemMessage, type PhotoResult, type Quality, type Session, type Step } from "./api.ts";
import { Camera } from "./camera.ts";
import { fill, focusHeading, h } from "./dom.ts";
import { decodeFile, frameQuality, toJpeg } from "./frame.ts";
import { t, type MessageKey } from "./i18n.ts";
import { overlaySvg } from "./overlays.ts";
import { normalizeVin, vinProblem, VIN_PROBLEM_MESSAGES } from "../../../core/domain/vin.ts";

/** After this many refused tries of one step, the customer may keep the photo anyway (it stays flagged). */
const TRIES_BEFORE_OVERRIDE = 2;

const app = document.getElementById("app")!;
const token = decodeURIComponent(location.pathname.split("/").pop() ?? "");
const api = new CaptureApi(token);
const camera = new Camera(h("video", { class: "live", "aria-hidden": "true", muted: true, playsinline: true }));
let cameraReady: boolean | null = null;
let session: Session;
let current = 0;
const tries = new Map<string, number>();

function end(state: string): void {
  camera.close();
  const key = ["submitted", "completed", "processing", "canceled", "expired", "failed"].includes(state) ? state : "invalid";
  app.replaceChildren(
    h("main", { class: "end" }, h("h1", {}, t(`end.${key}.title` as MessageKey)), h("p", {}, t(`end.${key}.body` as MessageKey))),
  );
  focusHeading(app);
}

/** Any request can find the link inactive (canceled or expired meanwhile): the server then renders the end page. */
function fail(error: unknown, status: HTMLElement): void {
  if (isInactive(error)) location.reload();
  else status.textContent = error instanceof CaptureApiError ? error.message : t("upload.failed");
}

const vehicleText = (v: { make: string | null; model: string | null; year: number | null }) =>
  [v.year, v.make, v.model].filter(Boolean).join(" ") || "—";
const requiredMissing = () => session.steps.filter((s) => s.required && !s.done);

function progress(): HTMLElement {
  const items = session.steps.map((step, i) =>
    h(
      "li",
      {},
      h(
        "button",
        {
          type: "button",
          class: `dot${step.done ? " done" : ""}`,
          "aria-current": i === current ? "step" : false,
          "aria-label": `${i + 1}. ${t(`angle.${step.angle}` as MessageKey)}: ${step.done ? t("step.done") : t("step.todo")}`,
          onclick: () => show(i),
        },
        String(i + 1),
      ),
    ),
  );
  const review = h(
    "li",
    {},
    h(
      "button",
      {
        type: "button",
        class: "dot",
        "aria-current": current === session.steps.length ? "step" : false,
        "aria-label": t("submit.title"),
        onclick: () => show(session.steps.length),
      },
      "✓",
    ),
  );
  return h(
    "nav",
    { "aria-label": t("progress.nav") },
    h("p", { class: "count" }, t("progress.label", { n: Math.min(current + 1, session.steps.length), total: session.steps.length })),
    h("ol", { class: "steps" }, ...items, review),
  );
}

function show(index: number): void {
  current = index;
  if (index >= session.steps.length) {
    review();
    return;
  }
  const step = session.steps[index]!;
  const status = h("p", { class: "status", role: "status", "aria-live": "polite" });
  const actions = h("div", { class: "actions" });
  const finder = h("div", { class: "viewfinder" });
  finder.innerHTML = overlaySvg(step.angle);
  const fileInput = h("input", { type: "file", accept: "image/*", capture: "environment", id: "file", class: "visually-hidden" });
  const fileLabel = h("label", { for: "file", class: "button secondary" }, t("camera.file"));
  fileInput.addEventListener("change", async () => {
    const file = fileInput.files?.[0];
    fileInput.value = "";
    if (file) {
      const bitmap = await decodeFile(file);
      await take(step, bitmap, bitmap.width, bitmap.height, status, actions, finder);
    }
  });
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
  const view = h(
    "main",
    { class: "step" },
    // Focus goes to the heading on each step; its description makes a screen reader read the prompt too.
    h("h1", { "aria-describedby": "prompt" }, t(`angle.${step.angle}` as MessageKey)),
    h("p", { class: "prompt", id: "prompt" }, t(`prompt.${step.angle}` as MessageKey)),
    finder,
    status,
    actions,
    fileInput,
    nav,
  );
  const attachCamera = () => {
    finder.prepend(camera.video);
    fill(
      actions,
      h(
        "button",
        { type: "button", class: "button shutter", onclick: () => take(step, camera.video, ...camera.size, status, actions, finder) },
        t("camera.shutter"),
      ),
      fileLabel,
    );
  };
  // The video moves to the new view in the same task that replaces the old one: a media element
  // left out of the document past that is paused by the browser.
  if (cameraReady) attachCamera();
  app.replaceChildren(progress(), view);
  focusHeading(app);
  if (step.quality) status.textContent = step.quality.passed ? t("upload.done") : describe(step.quality.problems);
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

const describe = (problems: Quality["problems"]) => problems.map((p) => t(problemMessage(p))).join(" ");

/** Checks the frame, then uploads it; a refused frame can be retaken, and kept anyway after two tries. */
async function take(
  step: Step,
  source: CanvasImageSource,
  width: number,
  height: number,
  status: HTMLElement,
  actions: HTMLElement,
  finder: HTMLElement,
  override = false,
): Promise<void> {
  const still = document.createElement("canvas");
  still.width = width;
  still.height = height;
  still.getContext("2d")!.drawImage(source, 0, 0, width, height);
  const local = frameQuality(still, width, height);
  const retake = () => show(current);
  if (!local.passed && !override) {
    const n = (tries.get(step.angle) ?? 0) + 1;
    tries.set(step.angle, n);
    status.textContent = describe(local.problems);
    fill(
      actions,
      h("button", { type: "button", class: "button", onclick: retake }, t("check.retake")),
      n >= TRIES_BEFORE_OVERRIDE &&
        h(
          "button",
          { type: "button", class: "button secondary", onclick: () => take(step, still, width, height, status, actions, finder, true) },
          t("check.use_anyway"),
        ),
    );
    return;
  }
  finder.replaceChildren(Object.assign(still, { className: "still" }));
  fill(actions);
  status.textContent = t("upload.sending");
  api.onRetry = (seconds) => (status.textContent = t("upload.retrying", { seconds }));
  let result: PhotoResult;
  try {
    result = await api.upload(step.angle, await toJpeg(still, width, height));
  } catch (error) {
    fail(error, status);
    fill(
      actions,
      h(
        "button",
        { type: "button", class: "button", onclick: () => take(step, still, width, height, status, actions, finder, override) },
        t("camera.shutter"),
      ),
    );
    return;
  }
  step.done = true;
  step.quality = result.quality;
  if (!result.quality.passed && !override) {
    const n = (tries.get(step.angle) ?? 0) + 1;
    tries.set(step.angle, n);
    status.textContent = describe(result.quality.problems);
    fill(
      actions,
      h("button", { type: "button", class: "button", onclick: retake }, t("check.retake")),
      n >= TRIES_BEFORE_OVERRIDE &&
        h("button", { type: "button", class: "button secondary", onclick: () => advance(step, still) }, t("check.use_anyway")),
    );
    return;
  }
  status.textContent = result.quality.passed ? t("check.good") : t("check.flagged");
  await advance(step, still);
}

async function advance(step: Step, still: HTMLCanvasElement): Promise<void> {
  if (step.angle === "vin") return vinStep(still);
  const next = session.steps.findIndex((s, i) => i > current && s.required && !s.done);
  show(next === -1 ? session.steps.length : next);
}

async function vinStep(still: HTMLCanvasElement): Promise<void> {
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
      ? t("vin.invalid", { reason: VIN_PROBLEM_MESSAGES[problem] })
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
      const next = session.steps.findIndex((s) => s.required && !s.done);
      setTimeout(() => show(next === -1 ? session.steps.length : next), 600);
    } catch (error) {
      fail(error, status);
    }
  });

  const blob = await toJpeg(still, still.width, still.height);
  const { readVin } = await import("./vin-ocr.ts");
  const read = await readVin(blob).catch(() => null);
  input.value = read ?? session.vin_confirmed ?? "";
  status.textContent = read ? t("vin.read") : t("vin.not_read");
  if (input.value) check();
  input.focus();
}

function review(): void {
  current = session.steps.length;
  const missing = requiredMissing();
  const status = h(
    "p",
    { class: "status", role: "status", "aria-live": "polite" },
    missing.length ? t("submit.missing", { steps: missing.map((s) => t(`angle.${s.angle}` as MessageKey)).join(", ") }) : "",
  );
  const send = h("button", { type: "button", class: "button shutter", disabled: missing.length > 0 }, t("submit.button"));
  send.addEventListener("click", async () => {
    send.disabled = true;
    status.textContent = t("submit.sending");
    try {
      await api.submit();
      end("submitted");
    } catch (error) {
      send.disabled = false;
      fail(error, status);
    }
  });
  app.replaceChildren(
    progress(),
    h("main", { class: "step" }, h("h1", {}, t("submit.title")), status, h("div", { class: "actions" }, send)),
  );
  focusHeading(app);
}

async function boot(): Promise<void> {
  const state = document.body.dataset.state ?? "invalid";
  if (state !== "active") return end(state);
  try {
    session = await api.session();
  } catch (error) {
    return isInactive(error) ? location.reload() : end("invalid");
  }
  // Resume where the customer was: the first required step not done, else the review.
  const next = session.steps.findIndex((s) => s.required && !s.done);
  show(next === -1 ? session.steps.length : next);
}

void boot();
