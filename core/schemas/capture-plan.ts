import { z } from "zod";
import {
  ANGLES,
  canonicalLocale,
  CLOSEUP_POLICIES,
  DEFAULT_STEPS,
  EXPIRES_IN,
  EXTERIOR_ANGLES,
  LOCALE_PATTERN,
  LOCALES,
  stepsProblem,
} from "../domain/capture-plan.ts";

const ANGLE_WORDS =
  "front, front_left, left, rear_left, rear, rear_right, right and front_right: the outside, checked for their angle and searched for damage; vin: the VIN plate, sticker or windshield; odometer: the mileage; interior_front and interior_rear: the seats; dashboard: the dashboard with the engine on, its warning lights and mileage showing; wheel_front_left, wheel_front_right, wheel_rear_left, wheel_rear_right: each wheel and tire (left and right as seen from the driver's seat). Photos of the angles that are not the outside are kept and shown in the report, not searched for damage.";
const DEFAULT_WORDS = DEFAULT_STEPS.map((s) => `${s.angle}${s.required ? "" : " (optional)"}`).join(", ");

export const CaptureStepInput = z.strictObject({
  angle: z.enum(ANGLES).meta({ description: `The photo asked for. ${ANGLE_WORDS}` }),
  required: z
    .boolean()
    .default(true)
    .meta({ description: "Whether submit waits for this photo (default true); an optional step can be skipped." }),
});

export const CloseupPolicy = z.enum(CLOSEUP_POLICIES).meta({
  description:
    "off: the page never offers close-ups of damage and the capture API refuses them (409 closeups_off); optional (default): the page offers them after the walkaround; guided: the page asks for each close-up an upload's suggested_closeups names, right after that photo. Close-ups never block submit.",
});

export const LocaleInput = z
  .string()
  .regex(new RegExp(LOCALE_PATTERN), `must be one of ${LOCALES.join(", ")}, optionally with a region (de-CH, pt-BR, es-419)`)
  .transform(canonicalLocale)
  .meta({
    description: `The language of the capture page, the PDF and the share page: a BCP 47 tag whose language is one of ${LOCALES.join(", ")}, optionally with a region (de-CH, pt-BR, es-419), in either case; echoed in canonical case. Another language is refused (400), not silently replaced. Default: the customer's browser's language, then en.`,
    example: "de",
  });

/**
 * stepsProblem's two rules as JSON Schema 2020-12 keywords, for the document to state them as the
 * refinement enforces them: a step of an exterior angle that is required (`required` left out is
 * true, its default), and for each angle at most one step of it. build-crd.ts leaves them out of the
 * CRD, whose structural schema has no such keywords.
 */
export const STEPS_RULES = {
  contains: {
    properties: { angle: { enum: [...EXTERIOR_ANGLES] }, required: { const: true } },
    required: ["angle"],
  },
  allOf: ANGLES.map((angle) => ({
    contains: { properties: { angle: { const: angle } }, required: ["angle"] },
    minContains: 0,
    maxContains: 1,
  })),
};

/** `capture` in the creation request; every field optional, the defaults filled in at creation (core/operations/inspections.ts). */
export const CaptureInput = z
  .strictObject({
    steps: z
      .array(CaptureStepInput)
      .min(1)
      .max(ANGLES.length)
      .superRefine((steps, ctx) => {
        const problem = stepsProblem(steps);
        if (problem) ctx.addIssue({ code: "custom", message: problem.message, path: problem.path });
      })
      .optional()
      .meta({
        description: `The photos asked for, in the order the page asks for them. Each angle at most once (else 400 parameter_invalid naming the repeated step's angle), at least one exterior angle required (else 400 naming capture.steps). Default: ${DEFAULT_WORDS}.`,
        ...STEPS_RULES,
      }),
    closeups: CloseupPolicy.optional(),
    locale: LocaleInput.optional(),
    expires_in: z
      .number()
      .int()
      .min(EXPIRES_IN.min)
      .max(EXPIRES_IN.max)
      .optional()
      .meta({
        description: `How long the capture link works, in seconds from creation (expires_at): ${EXPIRES_IN.min} (an hour) to ${EXPIRES_IN.max} (30 days). Default: the deployment's INSPECTION_TTL_HOURS, 604800 (7 days) unless changed.`,
        example: 86400,
      }),
  })
  .meta({ description: "What the customer is asked to photograph, and how: every field optional." });
export type CaptureInput = z.infer<typeof CaptureInput>;

/** `capture` on the inspection: what was asked for, defaults filled in. */
export const CaptureView = z.object({
  steps: z.array(z.object({ angle: z.enum(ANGLES), required: z.boolean() })),
  closeups: CloseupPolicy,
  locale: z.string().nullable().meta({ description: "The locale asked for, canonical; null: the customer's browser decides (then en)." }),
  expires_in: z.number().int().meta({ description: "The capture link's lifetime in seconds, from created_at to expires_at." }),
});
export type CaptureView = z.infer<typeof CaptureView>;
