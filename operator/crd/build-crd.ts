import { z } from "zod";
import { EXTERIOR_ANGLES } from "../../core/domain/capture-plan.ts";
import {
  INSPECTION_RECORD_RESOURCE,
  INSPECTION_RESOURCE,
  InspectionSpec,
  InspectionStatus,
} from "../../core/schemas/inspection-resource.ts";

type JsonSchema = Record<string, unknown>;

/**
 * Keywords a CRD's schema (JSONSchemaProps) does not have: the API document's rules on capture.steps
 * (core/schemas/capture-plan.ts, STEPS_RULES) are left out here and said again in CEL (STEPS_CEL).
 */
const NOT_IN_KUBERNETES = new Set(["contains", "minContains", "maxContains"]);

/** Kubernetes wants a structural OpenAPI v3.0 schema: no $schema, no refs, no formats it does not know. */
function structural(schema: z.ZodType): JsonSchema {
  const json = z.toJSONSchema(schema, { target: "openapi-3.0", io: "input", unrepresentable: "any", reused: "inline" }) as JsonSchema;
  // `fields`: the node is a `properties` map, whose keys are field names (an `id` field stays), not keywords.
  const clean = (node: unknown, fields = false): unknown => {
    if (Array.isArray(node)) return node.map((n) => clean(n));
    if (node && typeof node === "object") {
      const out: JsonSchema = {};
      for (const [k, v] of Object.entries(node)) {
        if (!fields && (k === "$schema" || k === "id" || k === "example" || k === "additionalProperties")) continue;
        if (!fields && k === "format" && v === "uri") continue;
        // The API server knows date-time; zod's long pattern for it says the same thing again.
        if (!fields && k === "pattern" && (node as JsonSchema).format === "date-time") continue;
        if (!fields && NOT_IN_KUBERNETES.has(k)) continue;
        out[k] = clean(v, !fields && k === "properties");
      }
      // An allOf whose branches held only such keywords says nothing.
      if (!fields && Array.isArray(out.allOf)) {
        out.allOf = out.allOf.filter((branch) => Object.keys(branch as JsonSchema).length > 0);
        if ((out.allOf as unknown[]).length === 0) delete out.allOf;
      }
      return out;
    }
    return node;
  };
  return clean(json) as JsonSchema;
}

/**
 * capture.steps's rules (core/domain/capture-plan.ts, stepsProblem), which JSON Schema says with
 * contains/minContains/maxContains and a CRD's schema cannot: in CEL, so that a kubectl-made spec is
 * held to them too. At most 17 steps, so the cost of the all/exists_one pair stays within budget.
 */
const STEPS_CEL = [
  { rule: "self.all(s, self.exists_one(t, t.angle == s.angle))", message: "each angle may be a step once" },
  {
    rule: `self.exists(s, s.angle in ${JSON.stringify(EXTERIOR_ANGLES)} && (!has(s.required) || s.required))`,
    message: `at least one exterior angle (${EXTERIOR_ANGLES.join(", ")}) must be a required step: a report needs a photo of the vehicle's outside`,
  },
];

/** The one field of the spec that changes after creation: the cancel intent, which cannot be taken back. */
const MUTABLE = "cancelRequested";
const CANCEL_STAYS = {
  rule: "!has(oldSelf.cancelRequested) || !oldSelf.cancelRequested || (has(self.cancelRequested) && self.cancelRequested)",
  message: "a cancel request cannot be withdrawn",
};

/**
 * A transition rule per field of the spec but the cancel intent, from the schema's own keys (a field
 * added to the creation request is immutable with no change here): a required field equals its old
 * value; an optional one is present exactly when it was, and then equal.
 */
function immutableFields(spec: z.ZodObject): { rule: string; message: string }[] {
  return Object.entries(spec.shape)
    .filter(([field]) => field !== MUTABLE)
    .map(([field, type]) => ({
      rule: (type as z.ZodType).safeParse(undefined).success
        ? `has(self.${field}) == has(oldSelf.${field}) && (!has(self.${field}) || self.${field} == oldSelf.${field})`
        : `self.${field} == oldSelf.${field}`,
      message: `spec.${field} is immutable: the spec is the creation request`,
    }));
}

/**
 * A CustomResourceDefinition of one of the service's kinds: namespaced, one version served and
 * stored, with a status subresource; `names` and `version` add to that.
 */
function crdOf(
  resource: typeof INSPECTION_RESOURCE | typeof INSPECTION_RECORD_RESOURCE,
  names: JsonSchema,
  version: { additionalPrinterColumns: JsonSchema[]; description: string; properties: JsonSchema; required?: string[] },
): JsonSchema {
  const { group, plural, kind } = resource;
  const { additionalPrinterColumns, description, properties, required } = version;
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      names: { kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase(), ...names },
      scope: "Namespaced",
      versions: [
        {
          name: resource.version,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns,
          schema: {
            openAPIV3Schema: {
              type: "object",
              description,
              ...(required ? { required } : {}),
              properties: { apiVersion: { type: "string" }, kind: { type: "string" }, metadata: { type: "object" }, ...properties },
            },
          },
        },
      ],
    },
  };
}

/** The Inspection CustomResourceDefinition, from the zod schemas. */
export function buildCrd(): JsonSchema {
  const spec = structural(InspectionSpec);
  spec["x-kubernetes-validations"] = [...immutableFields(InspectionSpec), CANCEL_STAYS];
  const capture = (spec.properties as Record<string, JsonSchema>).capture!;
  (capture.properties as Record<string, JsonSchema>).steps!["x-kubernetes-validations"] = STEPS_CEL;
  return crdOf(
    INSPECTION_RESOURCE,
    // `kubectl get vehicle-inspection` lists them with whatever else the product adds.
    { shortNames: ["insp"], categories: ["vehicle-inspection"] },
    {
      additionalPrinterColumns: [
        { name: "Phase", type: "string", jsonPath: ".status.phase" },
        { name: "Grade", type: "string", jsonPath: ".status.grade" },
        { name: "Findings", type: "integer", jsonPath: ".status.findings" },
        { name: "Review", type: "string", jsonPath: ".status.review" },
        { name: "VIN", type: "string", jsonPath: ".spec.vehicle.vin" },
        { name: "Reference", type: "string", jsonPath: ".spec.reference" },
        { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
        // -o wide only.
        { name: "Reviewed-By", type: "string", jsonPath: ".status.reviewedBy", priority: 1 },
        { name: "Completed", type: "date", jsonPath: ".status.completedAt", priority: 1 },
        { name: "Account", type: "string", jsonPath: ".spec.accountId", priority: 1 },
      ],
      description:
        "An inspection of a vehicle: a customer's photos taken through a capture link, graded for damage into a report. Made by the service's api (POST /v1/inspections), its status written by its operator; the store's own bookkeeping is the InspectionRecord of the same name. See docs/cluster-and-kubernetes.md.",
      required: ["spec"],
      properties: { spec, status: structural(InspectionStatus) },
    },
  );
}

/**
 * The InspectionRecord CustomResourceDefinition: the store's own record of each inspection, in no
 * category and without a short name, as it is the service's and not a person's. Its contents are
 * held to the zod schemas (RecordSpec, RecordStatus) by the service when it reads them; the API
 * server keeps them as they are.
 */
export function buildRecordCrd(): JsonSchema {
  const kept = (description: string) => ({ type: "object", description, "x-kubernetes-preserve-unknown-fields": true });
  return crdOf(
    INSPECTION_RECORD_RESOURCE,
    {},
    {
      additionalPrinterColumns: [{ name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" }],
      description:
        "The service's own record of the Inspection of the same name: its bookkeeping, not for people (read the Inspection). Written by the service only.",
      properties: {
        spec: kept("The api's part: the creation request as made, and the capture record (intents, photos, reviews, resends)."),
        status: kept("The operator's part: the moves, processing attempts, evidence, the outbox's events and their deliveries."),
      },
    },
  );
}

/** Both CRDs, in the order they are applied. */
export const buildCrds = (): JsonSchema[] => [buildCrd(), buildRecordCrd()];
