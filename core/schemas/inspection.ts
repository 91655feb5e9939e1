import { z } from "zod";
import { STATUSES } from "../domain/state-machine.ts";
import { GRADES } from "../domain/grading.ts";
import { REVIEW_POLICIES } from "../domain/review.ts";
import { normalizeVin, VIN_INPUT_PATTERN, vinProblem, VIN_PROBLEM_MESSAGES } from "../domain/vin.ts";
import { Timestamp, listOf } from "./common.ts";
import { CaptureInput, CaptureView } from "./capture-plan.ts";

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
    description:
      "17 characters of A-HJ-NPR-Z0-9 (either case, spaces around it trimmed); a North American VIN (first character 1-5) must carry the right check digit in position 9 (format `vin`: ISO 3779 with 49 CFR 565's check digit).",
    example: "1HGCM82633A004352",
    format: "vin",
    pattern: VIN_INPUT_PATTERN.source,
  });

/** What the document says of notify_url beyond its form: the rules the service checks that a schema cannot state. */
export const NOTIFY_URL_RULES =
  "Where events are delivered: an absolute http or https URL, at most 2048 characters, without credentials (user:password@). A live key must use https. Unless the deployment allows private targets, a URL whose host is an IP address that is not public, or localhost, is refused; a host name is resolved and checked at each delivery, not here.";

/** An inspection's id as a client sends it back: the prefix and the characters ids are made of. */
const InspectionId = z
  .string()
  .regex(/^insp_[a-z0-9]{1,64}$/)
  .meta({ example: "insp_0a1b2c3d4e5f6g7h8i9j0k1l" });

export const CreateInspectionBody = z.strictObject({
  reference: z.string().min(1).max(255).optional(),
  vehicle: z.strictObject({ vin: Vin }),
  notify_url: z
    .url({ protocol: /^https?$/ })
    .max(2048)
    .optional()
    .meta({ description: NOTIFY_URL_RULES }),
  baseline_inspection: InspectionId.optional().meta({
    description:
      "A completed inspection of the same vehicle, account and environment (the pick-up of a rental, say) that this one is compared with: the report's comparison says which damage is new. The VINs must match.",
  }),
  review: z.enum(REVIEW_POLICIES).optional().meta({
    description:
      "When the report goes to a person: always, when_unsure (a reason to look: damage suspected, low confidence, photo problems kept, VIN unconfirmed, photos of another vehicle, photos sent before) or off. Default: the account's policy, itself when_unsure unless changed in the dashboard.",
  }),
  capture: CaptureInput.optional(),
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
  new_findings: z
    .number()
    .int()
    .nullable()
    .meta({ description: "How many findings are new since the baseline_inspection (comparison.new); null without a baseline." }),
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
    baseline_inspection: z.string().nullable(),
    capture: CaptureView.meta({ description: "What the customer is asked to photograph, as asked for at creation, defaults filled in." }),
    capture_url: z.string().nullable(),
    capture_token: z.string().nullable().meta({
      description:
        "The capture token: the last path segment of capture_url, which the capture API (/capture/v1/{token}) takes. Null when capture_url is.",
    }),
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

/** A pattern for the decimal numerals of one length from `lo` to `hi` (strings of that length, lo <= hi). */
function numerals(lo: string, hi: string): string {
  if (lo === hi) return lo;
  if (lo.length === 1) return `[${lo}-${hi}]`;
  const rest = lo.length - 1;
  if (lo[0] === hi[0]) return lo[0] + numerals(lo.slice(1), hi.slice(1));
  const [first, last] = [Number(lo[0]) + 1, Number(hi[0]) - 1];
  const digits = rest === 1 ? "[0-9]" : `[0-9]{${rest}}`;
  return `(?:${[
    lo[0] + numerals(lo.slice(1), "9".repeat(rest)),
    ...(first <= last ? [(first === last ? String(first) : `[${first}-${last}]`) + digits] : []),
    hi[0] + numerals("0".repeat(rest), hi.slice(1)),
  ].join("|")})`;
}

/**
 * A pattern that matches exactly the decimal integers from `min` to `max`, leading zeros allowed as
 * Number reads them, so the document states the range a string parameter takes.
 */
export function integerRangePattern(min: number, max: number): string {
  const parts: string[] = [];
  for (let length = String(min).length; length <= String(max).length; length++) {
    const lo = Math.max(min, length === 1 ? 0 : 10 ** (length - 1));
    const hi = Math.min(max, 10 ** length - 1);
    if (lo <= hi) parts.push(numerals(String(lo), String(hi)));
  }
  return `^0*(?:${parts.join("|")})$`;
}

/** An integer in the query: decimal digits only, so `0x10`, `1e2`, `+5` and ` 5` are refused, not read as numbers. */
export const queryInteger = (min: number, max: number) =>
  z
    .string()
    .regex(/^[0-9]+$/, `must be an integer from ${min} to ${max}, in decimal digits`)
    .transform(Number)
    .pipe(z.number().int().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`))
    .meta({ pattern: integerRangePattern(min, max) });

/** The query of a list of objects whose ids have `prefix`: the page size, and where the page starts. */
// The prefix of the listed objects' ids (core/domain/ids.ts's IdPrefix, not imported: the capture page, which
// type-checks these schemas in a browser, has no node:crypto).
export const listQuery = (prefix: "insp" | "evt") =>
  z.strictObject({
    limit: queryInteger(1, 100).default(10).meta({ description: "Page size, 1 to 100.", example: "10" }),
    cursor: z
      .string()
      .regex(new RegExp(`^${prefix}_[a-z0-9]{24}$`), "must be the next_cursor of a previous page of this list")
      .optional()
      .meta({
        description: `The next_cursor of the previous page (an id, ${prefix}_…); an id that is not one of this list's is refused (400), as a cursor must be.`,
      }),
  });

export const InspectionListQuery = listQuery("insp").extend({
  status: Status.optional(),
  reference: z.string().min(1).max(255).optional(),
  vin: z.string().transform(normalizeVin).optional(),
});

export const IdParams = z.strictObject({ id: z.string() });
