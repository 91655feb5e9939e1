import { z } from "zod";
import { VEHICLE_PARTS } from "../domain/closeups.ts";
import { DAMAGE_TYPES } from "../domain/damage-types.ts";
import { SEVERITIES } from "../domain/grading.ts";
import { REVIEW_ACTIONS } from "../domain/review.ts";

/** The finding types a reviewer may give: damage a person can see and name. */
export const REVIEWER_TYPES = [...DAMAGE_TYPES, "broken_part"] as const;

/** Limits of one review: more than any report holds, few enough to check in one request. */
export const MAX_DECISIONS = 500;
export const MAX_ADDED = 100;
export const MAX_NOTE = 2000;

const Part = z.enum(VEHICLE_PARTS).nullable();

export const ReviewDecision = z
  .strictObject({
    finding: z.string().min(1).meta({ description: "The id of a finding of this inspection's report." }),
    action: z.enum(REVIEW_ACTIONS),
    type: z.enum(REVIEWER_TYPES).optional(),
    part: Part.optional(),
    severity: z.enum(SEVERITIES).optional(),
  })
  .superRefine((d, ctx) => {
    const changes = d.type !== undefined || d.part !== undefined || d.severity !== undefined;
    if (d.action === "change" && !changes)
      ctx.addIssue({ code: "custom", message: "a change names at least one of type, part and severity" });
    if (d.action !== "change" && changes)
      ctx.addIssue({ code: "custom", message: `only a change names type, part or severity; this is a ${d.action}` });
  })
  // The refinement above, as the OpenAPI document states it (a JSON Schema of its own: zod cannot
  // derive one from a refinement). finding and action are required and nothing else is allowed, so
  // a third property is one of type, part and severity.
  .meta({
    oneOf: [
      {
        properties: { action: { enum: REVIEW_ACTIONS.filter((a) => a !== "change") }, type: false, part: false, severity: false },
      },
      { properties: { action: { const: "change" } }, minProperties: 3 },
    ],
  });
export type ReviewDecision = z.infer<typeof ReviewDecision>;

const Corner = z.number().min(0).lt(1);
const Side = z.number().gt(0).max(1);

/**
 * x, y, width and height relative to the photo: a box of some size whose corner lies in the photo.
 * What runs past the photo's right or bottom edge is clipped to it, as a drawing tool would, so
 * every box the OpenAPI document allows is taken (a schema cannot state x + width <= 1).
 */
const Box = z
  .tuple([Corner, Corner, Side, Side])
  .overwrite(([x, y, w, h]): [number, number, number, number] => [x, y, Math.min(w, 1 - x), Math.min(h, 1 - y)])
  // Read as four numbers, as reports and findings keep boxes (the cast: zod's pipe wants the tuple's type in).
  .pipe(z.array(z.number()) as unknown as z.ZodType<number[], [number, number, number, number]>)
  .meta({
    description:
      "x, y, width, height, relative to the photo: the corner in [0, 1), the sides in (0, 1]; a box that runs past the photo's edge is clipped to it.",
  });

export const AddedFinding = z.strictObject({
  media_id: z.string().min(1).meta({ description: "A photo of this inspection's report." }),
  type: z.enum(REVIEWER_TYPES),
  part: Part.optional(),
  severity: z.enum(SEVERITIES),
  bbox: Box,
});
export type AddedFinding = z.infer<typeof AddedFinding>;

export const ReviewBody = z
  .strictObject({
    decisions: z.array(ReviewDecision).max(MAX_DECISIONS).optional(),
    added: z.array(AddedFinding).max(MAX_ADDED).optional(),
    note: z.string().max(MAX_NOTE).optional(),
  })
  .meta({ id: "ReviewRequest" });
export type ReviewBody = z.infer<typeof ReviewBody>;
