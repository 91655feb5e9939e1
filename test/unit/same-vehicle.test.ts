import { describe, expect, it } from "vitest";
import { couldBeOnePaint, labOf, type Paint, sameVehicle } from "../../core/domain/same-vehicle.ts";

// Paints as the upload reads them (L, a, b), from car-parts test photos (inference/evaluation/same-vehicle-eval.ts).
const white: Paint = [89, 0, -2];
const whiteInShade: Paint = [67, 0, -3];
const silver: Paint = [62, -1, -2];
const black: Paint = [24, 0, 1];
const red: Paint = [45, 52, 30];
const darkRed: Paint = [30, 40, 22];
const yellow: Paint = [70, -5, 68];
const blue: Paint = [55, -18, -26];

describe("same vehicle, by its paint", () => {
  it("reads sRGB as CIELAB", () => {
    expect(labOf(255, 255, 255).map((v) => Math.round(v) + 0)).toEqual([100, 0, 0]);
    expect(labOf(0, 0, 0).map((v) => Math.round(v) + 0)).toEqual([0, 0, 0]);
    // sRGB red is L 53, a 80, b 67.
    expect(labOf(255, 0, 0).map(Math.round)).toEqual([53, 80, 67]);
  });

  it("takes one paint under other light for one, and plainly different paints for two", () => {
    expect(couldBeOnePaint(white, whiteInShade)).toBe(true);
    expect(couldBeOnePaint(white, silver)).toBe(true); // two cars may pass as one: said in the report's description
    expect(couldBeOnePaint(red, darkRed)).toBe(true);
    expect(couldBeOnePaint(white, black)).toBe(false);
    expect(couldBeOnePaint(red, blue)).toBe(false);
    expect(couldBeOnePaint(yellow, red)).toBe(false);
    expect(couldBeOnePaint(blue, silver)).toBe(false);
  });

  it("names the photo of another car among one car's", () => {
    const photos = [white, whiteInShade, white, white, red, white, whiteInShade, white].map((paint, i) => ({
      mediaId: `med_${i}`,
      paint,
      baseline: false,
    }));
    expect(sameVehicle(photos)).toEqual({ same_vehicle: "inconsistent", inconsistent_photos: ["med_4"] });
    expect(sameVehicle(photos.filter((p) => p.mediaId !== "med_4"))).toEqual({ same_vehicle: "consistent", inconsistent_photos: [] });
  });

  it("calls eight different cars inconsistent although one photo's paint, between the bands, could be any of theirs", () => {
    // Eight test cars' paints (inference/evaluation/same-vehicle-eval.ts): a beige so faint (chroma 12)
    // that it could be one paint with each of the others. Stood for the vehicle alone, it let all
    // eight pass as one car; the photos that could all be one paint, each with each, are the seven
    // light greys and whites, and the dark grey is not of them.
    const eight: Paint[] = [
      [92, 1, -2],
      [96, 0, 0],
      [41, -1, 0],
      [72, 0, 0],
      [79, -3, 2],
      [90, 0, 0],
      [98, 0, 0],
      [84, 2, 12],
    ];
    const photos = eight.map((paint, i) => ({ mediaId: `car_${i}`, paint, baseline: false }));
    expect(sameVehicle(photos)).toEqual({ same_vehicle: "inconsistent", inconsistent_photos: ["car_2"] });
    // Greys from 49 to 98: no car is that far apart from shade to sun (a white car 25% darker and brighter: 60 to 98).
    const greys: Paint[] = [
      [49, -1, 0],
      [91, 0, 0],
      [88, 0, 0],
      [49, 0, -4],
      [68, 0, 0],
      [78, -1, -2],
      [98, 0, 0],
      [98, -1, -2],
    ];
    expect(sameVehicle(greys.map((paint, i) => ({ mediaId: `g${i}`, paint, baseline: false }))).same_vehicle).toBe("inconsistent");
    const oneWhiteCar: Paint[] = [
      [79, 1, -2],
      [79, 1, -2],
      [59, 1, -3],
      [97, 0, -2],
      [79, 1, 6],
      [79, 0, -10],
      [81, 1, -2],
      [80, 1, -2],
    ];
    expect(sameVehicle(oneWhiteCar.map((paint, i) => ({ mediaId: `w${i}`, paint, baseline: false })))).toEqual({
      same_vehicle: "consistent",
      inconsistent_photos: [],
    });
  });

  it("holds a return to its baseline's car, and names only the return's photos", () => {
    const baseline = [red, darkRed, red].map((paint, i) => ({ mediaId: `base_${i}`, paint, baseline: true }));
    const other = [blue, blue, blue].map((paint, i) => ({ mediaId: `ret_${i}`, paint, baseline: false }));
    expect(sameVehicle([...baseline, ...other])).toEqual({
      same_vehicle: "inconsistent",
      inconsistent_photos: ["ret_0", "ret_1", "ret_2"],
    });
    const same = [red, red].map((paint, i) => ({ mediaId: `ret_${i}`, paint, baseline: false }));
    expect(sameVehicle([...baseline, ...same]).same_vehicle).toBe("consistent");
  });

  it("says unknown where fewer than two photos, or none of this inspection's, have a paint", () => {
    expect(
      sameVehicle([
        { mediaId: "a", paint: white, baseline: false },
        { mediaId: "b", paint: null, baseline: false },
      ]).same_vehicle,
    ).toBe("unknown");
    const baselineOnly = [white, black].map((paint, i) => ({ mediaId: `b${i}`, paint, baseline: true }));
    expect(sameVehicle([...baselineOnly, { mediaId: "x", paint: null, baseline: false }]).same_vehicle).toBe("unknown");
  });
});
