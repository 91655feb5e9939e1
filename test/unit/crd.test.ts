import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import { describe, expect, it } from "vitest";
import { CHART_CRD_PATH, CRD_PATH, renderChartCrd, renderCrd } from "../../operator/crd/write-crd.ts";

describe("crds/inspections.yaml", () => {
  it("is what the zod schemas generate, and so is the chart's copy (run `npm run crd` after changing them)", () => {
    expect(readFileSync(CRD_PATH, "utf8")).toBe(renderCrd());
    expect(readFileSync(CHART_CRD_PATH, "utf8")).toBe(renderChartCrd());
  });

  it("is structural: every property typed, no refs, no unions with null", () => {
    const [crd, records] = parseAllDocuments(readFileSync(CRD_PATH, "utf8")).map((d) => d.toJS());
    const schema = crd.spec.versions[0].schema.openAPIV3Schema;
    const walk = (node: any, path: string) => {
      expect(node.type, path).toBeDefined();
      expect(node.$ref, path).toBeUndefined();
      expect(node.anyOf, path).toBeUndefined();
      for (const [k, v] of Object.entries(node.properties ?? {})) walk(v, `${path}.${k}`);
      if (node.items) walk(node.items, `${path}[]`);
    };
    walk(schema, "");
    expect(crd.spec.names.shortNames).toEqual(["insp"]);
    expect(crd.spec.versions[0].additionalPrinterColumns.map((c: any) => c.name)).toEqual([
      "Phase",
      "Grade",
      "Findings",
      "Review",
      "VIN",
      "Reference",
      "Age",
      "Reviewed-By",
      "Completed",
      "Account",
    ]);
    expect(crd.spec.names.categories).toEqual(["vehicle-inspection"]);
    const top = crd.spec.versions[0].schema.openAPIV3Schema;
    expect(top.description).toMatch(/An inspection of a vehicle/);
    expect(top.properties.spec.description).toMatch(/creation request/);
    expect(top.properties.status.properties.phase.description).toBeTruthy();
    // The zod rules a person could break with kubectl reach the schema (issue 31).
    const status = top.properties.status.properties;
    expect(status.findings.minimum).toBe(0);
    expect(status.conditions["x-kubernetes-list-type"]).toBe("map");
    expect(status.conditions["x-kubernetes-list-map-keys"]).toEqual(["type"]);
    expect(status.completedAt.format).toBe("date-time");
    expect(top.properties.spec.properties.vehicle.properties.vin.pattern).toBeTruthy();
    const steps = top.properties.spec.properties.capture.properties.steps;
    expect(steps["x-kubernetes-validations"].map((r: any) => r.message)).toEqual([
      "each angle may be a step once",
      expect.stringMatching(/^at least one exterior angle/),
    ]);
    // The store's own record: beside it, in no category, its contents kept as the service wrote them.
    expect(records.spec.names.kind).toBe("InspectionRecord");
    expect(records.spec.names.categories).toBeUndefined();
    expect(records.spec.versions[0].schema.openAPIV3Schema.properties.spec["x-kubernetes-preserve-unknown-fields"]).toBe(true);
  });
});
