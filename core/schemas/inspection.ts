import { z } from "zod";
import { STATUSES } from "../domain/state-machine.ts";
import { GRADES } from "../domain/grading.ts";
import { REVIEW_POLICIES } from "../domain/review.ts";
import { normalizeVin, vinProblem, VIN_PROBLEM_MESSAGES } from "../domain/vin.ts";
import { Timestamp, listOf } from "./common.ts";

export const Status = z.enum(STATUSES);
export const Grade = z.enum(GRADES);

export const Vin = z
  .string()
  .transform(normalizeVin)
  .superRefine((vin, ctx) => {
    const problem = vinProblem(vin);
    if (problem) ctx.addIssue({ code: "custom", message: VIN_PROBLEM_MESSAGES[problem] });
  })
  .meta({
    description: "17 characters of A-HJ-NPR-Z0-9; North American VINs (1-5) must carry a correct check digit.",
    example: "1HGCM82633A004352",
  });

export const CreateInspectionBody = z.strictObject({
  reference: z.string().min(1).max(255).optional(),
  vehicle: z.strictObject({ vin: Vin }),
  notify_url: z
    .url({ protocol: /^https?$/ })
    .max(2048)
    .optional(),
  review: z.enum(REVIEW_POLICIES).optional().meta({
    description:
      "When the report goes to a person: always, when_unsure (a reason to look: damage suspected, low confidence, photo problems kept, VIN unconfirmed) or off. Default: the account's policy, itself when_unsure unless changed in the dashboard.",
  }),
});
export type CreateInspectionBody = z.infer<typeof CreateInspectionBody>;

export const Vehicle = z.object({
  vin: z.string(),
  make: z.string().nullable(),
  model: z.string().nullable(),
  year: z.number().int().nullable(),
});

export const Summary = z.object({
  findings: z.number().int(),
  grade: Grade,
  needs_review: z
    .boolean()
    .meta({ description: "The report's review.status is required: a person should look before acting on the grade." }),
});
export const FAILURE_CODES = ["photos_unusable", "processing_error"] as const;
export const Failure = z.object({ code: z.enum(FAILURE_CODES), message: z.string() });

export const Inspection = z
  .object({
    id: z.string().meta({ example: "insp_0a1b2c3d4e5f6g7h8i9j0k1l" }),
    object: z.literal("inspection"),
    status: Status,
    livemode: z.boolean(),
    reference: z.string().nullable(),
    vehicle: Vehicle,
    notify_url: z.string().nullable(),
    capture_url: z.string().nullable(),
    expires_at: Timestamp,
    created_at: Timestamp,
    updated_at: Timestamp,
    submitted_at: Timestamp.nullable(),
    completed_at: Timestamp.nullable(),
    canceled_at: Timestamp.nullable(),
    report_url: z.string().nullable(),
    summary: Summary.nullable(),
    failure: Failure.nullable(),
  })
  .meta({ id: "Inspection" });
export type Inspection = z.infer<typeof Inspection>;

export const InspectionList = listOf(Inspection, "InspectionList");

/** An integer in the query: decimal digits only, so `0x10`, `1e2`, `+5` and ` 5` are refused, not read as numbers. */
export const queryInteger = (min: number, max: number) =>
  z
    .string()
    .regex(/^[0-9]+$/, `must be an integer from ${min} to ${max}, in decimal digits`)
    .transform(Number)
    .pipe(z.number().int().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));

export const ListQuery = z.strictObject({
  limit: queryInteger(1, 100).default(10).meta({ description: "Page size, 1 to 100.", example: "10" }),
  cursor: z.string().optional(),
});

export const InspectionListQuery = ListQuery.extend({
  status: Status.optional(),
  reference: z.string().min(1).max(255).optional(),
  vin: z.string().transform(normalizeVin).optional(),
});

export const IdParams = z.strictObject({ id: z.string() });
