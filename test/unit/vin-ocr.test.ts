import { describe, expect, it } from "vitest";
import { vinFromOcr } from "../../core/domain/vin.ts";

describe("vinFromOcr", () => {
  it.each([
    ["VEHCLEDENTFCATNNUMBER\n1HGCM82633A004352\n", "1HGCM82633A004352"],
    ["VIN 1HGCM82633AOO4352", "1HGCM82633A004352"],
    ["1HGCM82633A0O4352 MADE IN USA", "1HGCM82633A004352"],
    // 8 read as B: the check digit finds the right one.
    ["1HGCMB2633A004352", "1HGCM82633A004352"],
    ["1HGCM82633A0043S2", "1HGCM82633A004352"],
    ["WVWZZZ1JZXW000001", "WVWZZZ1JZXW000001"],
  ])("%j → %s", (text, vin) => {
    expect(vinFromOcr(text)).toBe(vin);
  });

  it("offers the closest candidate when the check digit cannot be repaired, and null without one", () => {
    expect(vinFromOcr("1HGCM82633A004359")).toBe("1HGCM82633A004359");
    expect(vinFromOcr("VEHICLE IDENTIFICATION NUMBER")).toBeNull();
    expect(vinFromOcr("")).toBeNull();
  });
});
