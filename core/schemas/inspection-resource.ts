import { z } from "zod";
import { STATUSES } from "../domain/state-machine.ts";
import { CreateInspectionBody, Failure, Grade } from "./inspection.ts";

/** Where the resource lives in the Kubernetes API: the CRD's names, written once. */
export const INSPECTION_RESOURCE = { group: "inspection.dev", version: "v1", plural: "inspections", kind: "Inspection" } as const;

/**
 * The `Inspection` custom resource of cluster mode. Its spec is the creation request (the same zod
 * schema the API validates with) plus the cancel intent; its status is written by the controller
 * only. crds/inspections.yaml is generated from these (npm run crd), never edited by hand.
 */
export const Condition = z.object({
  type: z.string().max(316),
  status: z.enum(["True", "False", "Unknown"]),
  observedGeneration: z.number().int().min(0).optional(),
  lastTransitionTime: z.string(),
  reason: z
    .string()
    .min(1)
    .max(1024)
    .regex(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/),
  message: z.string().max(32768),
});

export const InspectionSpec = CreateInspectionBody.extend({
  accountId: z.string(),
  livemode: z.boolean(),
  cancelRequested: z.boolean().optional(),
});

export const InspectionStatus = z.object({
  phase: z.enum(STATUSES).optional(),
  observedGeneration: z.number().int().optional(),
  conditions: z.array(Condition).optional(),
  grade: Grade.optional(),
  findings: z.number().int().optional(),
  reportKey: z.string().optional(),
  failure: Failure.optional(),
  submittedAt: z.string().optional(),
  completedAt: z.string().optional(),
  canceledAt: z.string().optional(),
  expiresAt: z.string().optional(),
});

export type Condition = z.infer<typeof Condition>;
export type InspectionSpec = z.infer<typeof InspectionSpec>;
export type InspectionStatus = z.infer<typeof InspectionStatus>;
