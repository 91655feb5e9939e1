import { z } from "zod";
import { INSPECTION_RESOURCE, InspectionSpec, InspectionStatus } from "../../core/schemas/inspection-resource.ts";

type JsonSchema = Record<string, unknown>;

/**
 * Keywords a CRD's schema (JSONSchemaProps) does not have: the API document's rules on capture.steps
 * (core/schemas/capture-plan.ts, STEPS_RULES) are left out here, as the api validates the spec with
 * the zod schema before it writes a resource.
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

/** The Inspection CustomResourceDefinition, from the zod schemas. */
export function buildCrd(): JsonSchema {
  const { group, version, plural, kind } = INSPECTION_RESOURCE;
  const spec = structural(InspectionSpec);
  spec["x-kubernetes-validations"] = [...immutableFields(InspectionSpec), CANCEL_STAYS];
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      names: {
        kind,
        listKind: `${kind}List`,
        plural,
        singular: kind.toLowerCase(),
        shortNames: ["insp"],
        // `kubectl get vehicle-inspection` lists them with whatever else the product adds.
        categories: ["vehicle-inspection"],
      },
      scope: "Namespaced",
      versions: [
        {
          name: version,
          served: true,
          storage: true,
          subresources: { status: {} },
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
          schema: {
            openAPIV3Schema: {
              type: "object",
              description:
                "An inspection of a vehicle: a customer's photos taken through a capture link, graded for damage into a report. Written by the service's api (spec, the capture annotation) and operator (status); see the service's README.",
              required: ["spec"],
              properties: {
                apiVersion: { type: "string" },
                kind: { type: "string" },
                metadata: { type: "object" },
                spec,
                status: structural(InspectionStatus),
              },
            },
          },
        },
      ],
    },
  };
}
