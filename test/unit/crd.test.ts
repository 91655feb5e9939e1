import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { describe, expect, it } from "vitest";
import { CHART_CRD_PATH, CRD_PATH, renderChartCrd, renderCrd } from "../../operator/crd/write-crd.ts";

describe("crds/inspections.yaml", () => {
  it("is what the zod schemas generate, and so is the chart's copy (run `npm run crd` after changing them)", () => {
    expect(readFileSync(CRD_PATH, "utf8")).toBe(renderCrd());
    expect(readFileSync(CHART_CRD_PATH, "utf8")).toBe(renderChartCrd());
  });

  it("is structural: every property typed, no refs, no unions with null", () => {
    const crd = parse(readFileSync(CRD_PATH, "utf8"));
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
  });
});
