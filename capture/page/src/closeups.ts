import { MAX_CLOSEUPS, VEHICLE_PARTS, type VehiclePart } from "../../../core/domain/closeups.ts";
import type { CaptureApi, Session, SuggestedCloseup } from "./api.ts";
import { cameraView, describe } from "./camera-view.ts";
import { focusHeading, h } from "./dom.ts";
import { inSentence, lang, t, type MessageKey } from "./i18n.ts";

/**
 * "Any damage?", after the walkaround: close-ups of damage, each tied to a part, up to
 * MAX_CLOSEUPS. Where an exterior photo's upload suggested close-ups, those are asked for first,
 * one at a time, each skippable. Close-ups are optional: the customer can always go on to the review.
 */
export type CloseupsContext = {
  app: HTMLElement;
  api: CaptureApi;
  session: Session;
  progress: () => HTMLElement;
  /** On to the review. */
  done: () => void;
  /** Back to the walkaround's last step. */
  back: () => void;
};

/** The close-ups each exterior photo's upload suggested, by angle: a retake's answer replaces its photo's. */
const suggested = new Map<string, SuggestedCloseup[]>();
/** Suggested parts the customer chose not to take. */
const skipped = new Set<VehiclePart>();

export function noteSuggestions(angle: string, closeups: SuggestedCloseup[]): void {
  suggested.set(angle, closeups);
}

const partLabel = (part: VehiclePart) => t(`part.${part}` as MessageKey);
/** The parts as the picker lists them: by their label, so the list reads in order whatever the language. */
const partsByLabel = () => [...VEHICLE_PARTS].sort((a, b) => partLabel(a).localeCompare(partLabel(b), lang));

/** The first suggested part (of `angle`'s photo, or of any) not skipped and without a close-up yet. */
function nextSuggestion(session: Session, angle?: string): VehiclePart | null {
  const taken = new Set(session.closeups.map((c) => c.part));
  const lists = angle === undefined ? [...suggested.values()] : [suggested.get(angle) ?? []];
  for (const closeups of lists) for (const { part } of closeups) if (!skipped.has(part) && !taken.has(part)) return part;
  return null;
}

function freeSlot(session: Session): number | null {
  for (let n = 1; n <= MAX_CLOSEUPS; n++) if (!session.closeups.some((c) => c.n === n)) return n;
  return null;
}

/** The close-ups step: the next suggestion to ask about, else the list of close-ups and the form to add one. */
export function closeupsView(ctx: CloseupsContext, message = ""): void {
  const part = nextSuggestion(ctx.session);
  const slot = freeSlot(ctx.session);
  const status = h("p", { class: "status", role: "status", "aria-live": "polite" }, message);
  const body = part !== null && slot !== null ? askFor(ctx, part, slot, (m) => closeupsView(ctx, m)) : list(ctx, slot, status);
  ctx.app.replaceChildren(ctx.progress(), h("main", { class: "step closeups" }, h("h1", {}, t("closeups.title")), status, ...body));
  focusHeading(ctx.app);
}

/**
 * Guided close-ups (capture.closeups guided): right after `angle`'s photo, each close-up its upload
 * suggested, one at a time, while the customer still stands at that side of the car; each can be
 * skipped (close-ups never block submit). Then `then`, at once where there is none to ask for.
 */
export function askSuggested(ctx: CloseupsContext, angle: string, then: () => void, message = ""): void {
  const part = nextSuggestion(ctx.session, angle);
  const slot = freeSlot(ctx.session);
  if (part === null || slot === null) {
    then();
    return;
  }
  const status = h("p", { class: "status", role: "status", "aria-live": "polite" }, message);
  const body = askFor(ctx, part, slot, (m) => askSuggested(ctx, angle, then, m));
  ctx.app.replaceChildren(ctx.progress(), h("main", { class: "step closeups" }, h("h1", {}, t("closeups.title")), status, ...body));
  focusHeading(ctx.app);
}

/** One suggested part, to photograph or skip; `back` once it is taken or skipped, with what to say. */
function askFor(ctx: CloseupsContext, part: VehiclePart, slot: number, back: (message?: string) => void): HTMLElement[] {
  const label = partLabel(part);
  return [
    h("p", { class: "prompt suggestion" }, t("closeups.suggested", { part: label, part_in_sentence: inSentence(label) })),
    h("p", { class: "help" }, t("closeups.suggested_help")),
    h(
      "div",
      { class: "actions" },
      h("button", { type: "button", class: "button shutter", onclick: () => shoot(ctx, slot, part, back) }, t("closeups.take")),
      h(
        "button",
        {
          type: "button",
          class: "button secondary",
          onclick: () => {
            skipped.add(part);
            back();
          },
        },
        t("closeups.skip"),
      ),
    ),
  ];
}

/** The close-ups taken, each retakeable; a part to pick for the next one; on to the review. */
function list(ctx: CloseupsContext, slot: number | null, status: HTMLElement): HTMLElement[] {
  const { closeups } = ctx.session;
  const items = [...closeups]
    .sort((a, b) => a.n - b.n)
    .map((c) => {
      const name = c.part ? partLabel(c.part) : t("closeups.part_other");
      return h(
        "li",
        {},
        h("span", { class: "name" }, t("closeups.item", { n: c.n, part: name })),
        h("span", { class: "verdict" }, c.quality.passed ? t("upload.done") : describe(c.quality.problems)),
        h(
          "button",
          {
            type: "button",
            class: "button secondary",
            "aria-label": t("closeups.retake_label", { n: c.n, part: name }),
            onclick: () => shoot(ctx, c.n, c.part),
          },
          t("check.retake"),
        ),
      );
    });
  const continueLabel = closeups.length ? t("closeups.continue") : t("closeups.none_continue");
  return [
    h("p", { class: "prompt" }, t("closeups.prompt", { max: MAX_CLOSEUPS })),
    items.length > 0 && h("ul", { class: "closeup-list" }, ...items),
    slot === null ? h("p", { class: "help" }, t("closeups.full", { max: MAX_CLOSEUPS })) : addForm(ctx, slot, status),
    h(
      "div",
      { class: "nav" },
      h("button", { type: "button", class: "button secondary", onclick: ctx.back }, t("step.back")),
      h("button", { type: "button", class: "button", onclick: ctx.done }, continueLabel),
    ),
  ].filter((el): el is HTMLElement => Boolean(el));
}

/** The value of the picker's "somewhere else" choice: a close-up without a part. */
const OTHER = "other";

function addForm(ctx: CloseupsContext, slot: number, status: HTMLElement): HTMLElement {
  const select = h(
    "select",
    { id: "part", name: "part", "aria-describedby": "part-help" },
    h("option", { value: "" }, t("closeups.part_choose")),
    ...partsByLabel().map((part) => h("option", { value: part }, partLabel(part))),
    h("option", { value: OTHER }, t("closeups.part_other")),
  );
  const form = h(
    "form",
    { class: "closeup-form", novalidate: true },
    h("label", { for: "part" }, t("closeups.part_label")),
    select,
    h("p", { id: "part-help", class: "help" }, t("closeups.part_help")),
    h("button", { type: "submit", class: "button" }, t("closeups.add")),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    if (!select.value) {
      status.textContent = t("closeups.choose_first");
      select.focus();
      return;
    }
    shoot(ctx, slot, select.value === OTHER ? null : (select.value as VehiclePart));
  });
  return form;
}

/** The camera for close-up n of `part`; `back` (the close-ups step, or the guided question) once it is in. */
function shoot(
  ctx: CloseupsContext,
  n: number,
  part: VehiclePart | null,
  back: (message?: string) => void = (m) => closeupsView(ctx, m),
): void {
  const earlier = ctx.session.closeups.find((c) => c.n === n && c.part === part);
  cameraView(ctx.app, {
    header: ctx.progress(),
    heading: part ? t("closeup.heading", { part: partLabel(part) }) : t("closeup.heading_other"),
    prompt: t("closeup.prompt"),
    overlay: "",
    quality: earlier?.quality ?? null,
    nav: h("div", { class: "nav" }, h("button", { type: "button", class: "button secondary", onclick: () => back() }, t("step.back"))),
    again: () => shoot(ctx, n, part, back),
    target: {
      key: `closeup-${n}`,
      upload: (photo, onRetry) => {
        ctx.api.onRetry = onRetry;
        return ctx.api.uploadCloseup(n, part, photo);
      },
      stored: (result) => {
        const closeup = { n, part, media_id: result.media_id, quality: result.quality };
        ctx.session.closeups = [...ctx.session.closeups.filter((c) => c.n !== n), closeup];
      },
      accepted: () => back(t("closeups.saved")),
    },
  });
}
