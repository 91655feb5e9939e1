import { z } from "zod";
import { CLOSEUP, CLOSEUP_REASONS, MAX_CLOSEUPS, VEHICLE_PARTS } from "../domain/closeups.ts";
import { ANGLES, CLOSEUP_POLICIES, isExterior } from "../domain/capture-plan.ts";
import { Timestamp } from "./common.ts";
import { queryInteger, Status, Vehicle, Vin } from "./inspection.ts";
import { Quality } from "./report.ts";

export { ANGLES, type Angle, EXTERIOR_ANGLES, type ExteriorAngle, isExterior, REQUIRED_ANGLES } from "../domain/capture-plan.ts";
/**
 * Whether a photo of this angle is searched for damage: the exterior photos and the close-ups; only
 * those get model inputs. Not the wheels: the detector learned tire_flat from whole cars (CarDD), and
 * a finding needs a part, which a close-up names and a wheel step's photo would have to; a tire's
 * damage is searched as a close-up of the part wheel.
 */
export const isSearched = (angle: string): boolean => isExterior(angle) || angle === CLOSEUP;

export const PHOTO_CONTENT_TYPES = ["image/jpeg", "image/png", "image/webp", "image/heic"] as const;

export const VehiclePart = z.enum(VEHICLE_PARTS).meta({ description: "A part of the vehicle, as the parts model and reports name it." });

export const SuggestedCloseup = z.object({
  part: VehiclePart,
  reason: z.enum(CLOSEUP_REASONS).meta({ description: "damage_suspected: the photo as a whole looks damaged there." }),
});
export type SuggestedCloseup = z.infer<typeof SuggestedCloseup>;

export const CaptureSession = z.object({
  inspection_id: z.string(),
  status: Status,
  expires_at: Timestamp,
  vehicle: Vehicle,
  vin_confirmed: z.string().nullable(),
  locale: z.string().nullable().meta({
    description: "The inspection's capture.locale: the page's language before the browser's; null: the browser's, then en.",
  }),
  closeup_policy: z.enum(CLOSEUP_POLICIES).meta({
    description:
      "The inspection's capture.closeups: off (no close-ups: uploads are refused), optional, or guided (ask for each suggested one).",
  }),
  steps: z.array(
    z.object({
      angle: z.enum(ANGLES),
      required: z.boolean(),
      done: z.boolean(),
      quality: Quality.nullable(),
    }),
  ),
  closeups: z
    .array(z.object({ n: z.number().int(), part: VehiclePart.nullable(), media_id: z.string(), quality: Quality }))
    .meta({ description: "The close-ups taken so far, by slot n (1 to 8). Optional: they never block submit." }),
  account: z
    .object({
      display_name: z.string().nullable().meta({
        description: "Who asks for the photos, as the account set it in the dashboard (plain text, up to 60 characters); null: not set.",
      }),
      accent_color: z
        .string()
        .regex(/^#[0-9a-f]{6}$/)
        .nullable()
        .meta({ description: "The account's colour as #rrggbb, one white text reads on at 4.5:1 at least (WCAG AA); null: not set." }),
      logo_url: z.string().nullable().meta({
        description: "The account's logo: a PNG of at most 480 × 120 pixels, served by this service; null: not set.",
      }),
    })
    .meta({ description: "Whose page it is: the account's branding, set in the dashboard. Each field null where the account set none." }),
});
export type CaptureSession = z.output<typeof CaptureSession>;

export const TokenParams = z.strictObject({ token: z.string() });
export const PhotoParams = z.strictObject({ token: z.string(), angle: z.enum(ANGLES) });

export const CloseupParams = z.strictObject({
  token: z.string(),
  n: queryInteger(1, MAX_CLOSEUPS).meta({
    description: `The close-up's slot, 1 to ${MAX_CLOSEUPS}: a second upload to a slot replaces it.`,
  }),
});
export const CloseupQuery = z.strictObject({
  part: VehiclePart.optional().meta({ description: "The part the close-up shows." }),
});

export const PhotoResult = z.object({
  media_id: z.string(),
  angle: z.enum([...ANGLES, CLOSEUP]),
  width: z.number().int(),
  height: z.number().int(),
  quality: Quality,
  part: VehiclePart.nullable().meta({ description: "A close-up's part; null for the other photos." }),
  suggested_closeups: z.array(SuggestedCloseup).meta({
    description:
      "After an exterior photo: the parts where the service suspects damage it cannot judge from afar, strongest first, so the page can ask for a close-up of each. Empty otherwise.",
  }),
});
export type PhotoResult = z.output<typeof PhotoResult>;

export const VinBody = z.strictObject({ vin: Vin });
export const VinResult = z.object({
  vin: z.string(),
  valid: z.boolean(),
  matches_vehicle: z.boolean(),
  make: z.string().nullable(),
  model: z.string().nullable(),
  year: z.number().int().nullable(),
});
export type VinResult = z.output<typeof VinResult>;

export const SubmitResult = z.object({ status: z.literal("processing") });
export type SubmitResult = z.output<typeof SubmitResult>;
