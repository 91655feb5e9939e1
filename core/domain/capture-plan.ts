/**
 * What the customer is asked to photograph, per inspection (`capture` at creation; contract, "Added
 * on 2026-11-26", "Capture that fits the client"): the steps in order, each required or optional,
 * whether close-ups are offered, and the page's language. Zod-free, so the capture page bundles it
 * as it does vin.ts and closeups.ts; core/schemas/capture-plan.ts states it for the API.
 */
import { LOCALES, type Locale } from "./locales.ts";

/** The outside of the vehicle as a whole: only these are checked for their angle and searched for damage (with close-ups). */
export const EXTERIOR_ANGLES = ["front", "front_left", "left", "rear_left", "rear", "rear_right", "right", "front_right"] as const;
export type ExteriorAngle = (typeof EXTERIOR_ANGLES)[number];
/** Inside the vehicle: the front and rear seats, and the dashboard with the engine on (warning lights, mileage). */
export const INTERIOR_ANGLES = ["interior_front", "interior_rear", "dashboard"] as const;
/** Each wheel and its tire from about a metre; left and right as seen from the driver's seat. */
export const WHEEL_ANGLES = ["wheel_front_left", "wheel_front_right", "wheel_rear_left", "wheel_rear_right"] as const;
/** Every angle a step can ask for, in the order the document lists them. */
export const ANGLES = [...EXTERIOR_ANGLES, "vin", "odometer", ...INTERIOR_ANGLES, ...WHEEL_ANGLES] as const;
export type Angle = (typeof ANGLES)[number];

export const isExterior = (angle: string): angle is ExteriorAngle => (EXTERIOR_ANGLES as readonly string[]).includes(angle);

/**
 * off: the page never offers close-ups and the API refuses them; optional: the page offers them after
 * the walkaround, asking about the suggested ones there; guided: the page asks for each suggested
 * close-up right after the photo that suggested it, while the customer still stands at that side.
 */
export const CLOSEUP_POLICIES = ["off", "optional", "guided"] as const;
export type CloseupPolicy = (typeof CLOSEUP_POLICIES)[number];

export type CaptureStep = { angle: Angle; required: boolean };
/** A stored inspection's capture, but its lifetime (its expires_at says that). `locale` null: the browser's. */
export type CapturePlan = { steps: CaptureStep[]; closeups: CloseupPolicy; locale: string | null };

/** Today's walkaround: the eight exterior angles and the VIN required, the odometer optional. */
export const DEFAULT_STEPS: readonly CaptureStep[] = [
  ...EXTERIOR_ANGLES.map((angle) => ({ angle, required: true })),
  { angle: "vin", required: true },
  { angle: "odometer", required: false },
];
/** What an inspection asks for without `capture`, and what one stored before `capture` existed reads as. */
export const DEFAULT_CAPTURE_PLAN: CapturePlan = { steps: [...DEFAULT_STEPS], closeups: "optional", locale: null };
export const REQUIRED_ANGLES: readonly Angle[] = DEFAULT_STEPS.filter((s) => s.required).map((s) => s.angle);

/** How long a capture link may be asked to live, in seconds: an hour (a customer needs time) to 30 days. */
export const EXPIRES_IN = { min: 3_600, max: 30 * 86_400 } as const;

/** A rule the steps break, where it can be put right (an index into steps and its field, or the list itself). */
export type StepsProblem = { path: (string | number)[]; message: string };

/**
 * The rules no schema states: each angle once, and at least one exterior angle required. Processing
 * needs one readable exterior photo for a report (else the inspection fails photos_unusable), so a
 * walkaround that could be sent without one is refused at creation rather than failed later.
 */
export function stepsProblem(steps: readonly CaptureStep[]): StepsProblem | null {
  const seen = new Set<string>();
  for (const [i, step] of steps.entries()) {
    if (seen.has(step.angle)) return { path: [i, "angle"], message: `${step.angle} is asked for twice; each angle may be a step once` };
    seen.add(step.angle);
  }
  if (!steps.some((s) => s.required && isExterior(s.angle)))
    return {
      path: [],
      message: `at least one exterior angle (${EXTERIOR_ANGLES.join(", ")}) must be a required step: a report needs a photo of the vehicle's outside`,
    };
  return null;
}

/** The angles a submit waits for. */
export const requiredAngles = (plan: CapturePlan): Angle[] => plan.steps.filter((s) => s.required).map((s) => s.angle);

/** A pattern that matches `text` in either case (BCP 47 tags are case-insensitive), for the document to state. */
const caseless = (text: string) => [...text].map((c) => `[${c.toLowerCase()}${c.toUpperCase()}]`).join("");

/**
 * The locales taken: a language with a catalogue, optionally with a region (2 letters, or 3 digits
 * as in es-419), in either case. Exactly what the pattern allows is taken, so the document says it.
 */
export const LOCALE_PATTERN = `^(?:${LOCALES.map(caseless).join("|")})(?:-(?:[A-Za-z]{2}|[0-9]{3}))?$`;
/** A locale as stored and echoed: canonical BCP 47 case ("pt-br" → "pt-BR"). */
export const canonicalLocale = (tag: string): string => Intl.getCanonicalLocales(tag)[0] ?? tag;

export { LOCALES, type Locale };
