import type { CaptureApi, Quality, Session } from "./api.ts";
import { fail } from "./camera-view.ts";
import { focusHeading, h } from "./dom.ts";
import { listOf, t, type MessageKey } from "./i18n.ts";
import { thumbOf } from "./thumbs.ts";

export type ReviewContext = {
  app: HTMLElement;
  api: CaptureApi;
  session: Session;
  progress: () => HTMLElement;
  /** Back to step `index` for a new photo; the page comes back here once it is in. */
  retake: (index: number) => void;
  /** To the close-ups step, to add or retake one. */
  closeups: () => void;
  /** The photos were sent. */
  submitted: () => void;
};

/** A photo's verdict from its upload's answer, in a few words: passed, or its problems. */
function verdict(quality: Quality | null): HTMLElement {
  if (!quality) return h("p", { class: "verdict" }, t("review.saved"));
  if (quality.passed) return h("p", { class: "verdict ok" }, t("review.passed"));
  const problems = listOf(
    quality.problems.map((p) => t(`problem.${p}` as MessageKey)),
    "unit",
  );
  return h("p", { class: "verdict warn" }, t("review.problems", { problems }));
}

function thumbnail(key: string): HTMLElement {
  const url = thumbOf(key);
  // The name and verdict beside it say what it shows: the image itself is decorative.
  return url ? h("img", { class: "thumb", src: url, alt: "" }) : h("span", { class: "thumb none" }, t("review.no_thumb"));
}

function row(key: string, name: string, details: HTMLElement[], action: HTMLElement): HTMLElement {
  return h("li", { "data-photo": key }, thumbnail(key), h("div", { class: "about" }, h("p", { class: "name" }, name), ...details, action));
}

/**
 * The last screen before sending, and the only one with the send button: every photo taken, each
 * with its thumbnail, its verdict and a Retake that goes back to its step; the optional photos not
 * taken, each with a button to take it; the close-ups; then Send.
 */
export function reviewView(ctx: ReviewContext): void {
  const { session } = ctx;
  const missing = session.steps.filter((s) => s.required && !s.done);
  const steps = session.steps.flatMap((step, i) => {
    if (!step.done && step.required) return [];
    const name = t(`angle.${step.angle}` as MessageKey);
    const button = (text: string, label: string) =>
      h("button", { type: "button", class: "button secondary", "aria-label": label, onclick: () => ctx.retake(i) }, text);
    if (!step.done)
      return [
        row(
          step.angle,
          name,
          [h("p", { class: "verdict" }, t("review.not_taken"))],
          button(t("review.add"), t("review.add_label", { name })),
        ),
      ];
    const details = [verdict(step.quality)];
    if (step.angle === "vin") {
      details.push(
        h(
          "p",
          { class: "verdict" },
          session.vin_confirmed ? t("review.vin_confirmed", { vin: session.vin_confirmed }) : t("review.vin_unconfirmed"),
        ),
      );
    }
    return [row(step.angle, name, details, button(t("check.retake"), t("review.retake_label", { name })))];
  });
  const closeups = [...session.closeups]
    .sort((a, b) => a.n - b.n)
    .map((c) => {
      const part = c.part ? t(`part.${c.part}` as MessageKey) : t("closeups.part_other");
      return h(
        "li",
        { "data-photo": `closeup-${c.n}` },
        thumbnail(`closeup-${c.n}`),
        h("div", { class: "about" }, h("p", { class: "name" }, t("closeups.item", { n: c.n, part })), verdict(c.quality)),
      );
    });

  const status = h(
    "p",
    { class: "status", role: "status", "aria-live": "polite" },
    missing.length ? t("submit.missing", { steps: listOf(missing.map((s) => t(`angle.${s.angle}` as MessageKey))) }) : "",
  );
  const send = h("button", { type: "button", class: "button shutter", disabled: missing.length > 0 }, t("submit.button"));
  send.addEventListener("click", async () => {
    send.disabled = true;
    status.textContent = t("submit.sending");
    try {
      await ctx.api.submit();
      ctx.submitted();
    } catch (error) {
      send.disabled = false;
      fail(error, status);
    }
  });
  ctx.app.replaceChildren(
    ctx.progress(),
    h(
      "main",
      { class: "step review" },
      h("h1", {}, t("review.title")),
      h("p", { class: "prompt" }, t("review.intro")),
      h("ul", { class: "review-list", "aria-label": t("review.photos") }, ...steps),
      // Where the inspection takes no close-ups (capture.closeups off), nothing of them is shown.
      ...(session.closeup_policy === "off"
        ? []
        : [
            h("h2", {}, t("review.closeups")),
            closeups.length
              ? h("ul", { class: "review-list", "aria-label": t("review.closeups") }, ...closeups)
              : h("p", { class: "help" }, t("review.no_closeups")),
            h(
              "div",
              { class: "nav" },
              h("button", { type: "button", class: "button secondary", onclick: ctx.closeups }, t("review.change_closeups")),
            ),
          ]),
      status,
      h("div", { class: "actions" }, send),
    ),
  );
  focusHeading(ctx.app);
}
