import type { Session } from "./api.ts";
import { h } from "./dom.ts";
import { t, type MessageKey } from "./i18n.ts";

export type ProgressContext = {
  session: Session;
  /** The view shown: a step's index, then the close-ups (steps.length), then the review (steps.length + 1). */
  current: number;
  show: (index: number) => void;
};

/**
 * Where the customer is, in a phone's width: "Step 3 of 10" and a bar of the required photos taken,
 * with every step behind "All steps" (a disclosure, so a row of ten buttons never has to fit beside
 * each other at 390 px). Each step there is a button to go back to it.
 */
export function progressView({ session, current, show }: ProgressContext): HTMLElement {
  const { steps } = session;
  const closeups = steps.length;
  const review = steps.length + 1;
  const required = steps.filter((s) => s.required);
  const done = required.filter((s) => s.done).length;
  const label =
    current < closeups
      ? t("progress.label", { n: current + 1, total: steps.length })
      : current === closeups
        ? t("progress.closeups")
        : t("progress.review");
  const fill = h("span", { class: "fill" });
  fill.style.width = `${required.length ? (100 * done) / required.length : 100}%`;
  const bar = h(
    "div",
    {
      class: "bar",
      role: "progressbar",
      "aria-label": t("progress.bar"),
      "aria-valuemin": "0",
      "aria-valuemax": String(required.length),
      "aria-valuenow": String(done),
      "aria-valuetext": t("progress.bar_value", { done, total: required.length }),
    },
    fill,
  );
  const link = (index: number, text: string, state: string, isDone: boolean) =>
    h(
      "li",
      {},
      h(
        "button",
        {
          type: "button",
          class: `step-link${isDone ? " done" : ""}`,
          "aria-current": current === index ? "step" : false,
          onclick: () => show(index),
        },
        // Read as "1. Front: Done"; the colon is for the ear only.
        h("span", {}, text, h("span", { class: "visually-hidden" }, ": ")),
        h("span", { class: "state" }, state),
      ),
    );
  const links = steps.map((step, i) =>
    link(i, `${i + 1}. ${t(`angle.${step.angle}` as MessageKey)}`, step.done ? t("step.done") : t("step.todo"), step.done),
  );
  const missing = required.length - done;
  return h(
    "nav",
    { class: "progress", "aria-label": t("progress.nav") },
    h("p", { class: "count" }, label),
    bar,
    h(
      "details",
      { class: "all-steps" },
      h("summary", {}, t("progress.all", { done, total: required.length })),
      h(
        "ol",
        {},
        ...links,
        session.closeup_policy !== "off" &&
          link(closeups, t("closeups.title"), t("closeups.nav", { n: session.closeups.length }), session.closeups.length > 0),
        missing === 0 && link(review, t("review.title"), t("progress.review_ready"), false),
      ),
    ),
  );
}
