import { describe, expect, it } from "vitest";
import { mergeTiles, tileRegions, TILE_OVERLAP } from "../../inference/detection/tiles.ts";

describe("tiles", () => {
  it("cover the photo in an n × n grid, neighbours overlapping, none past the edge", () => {
    const tiles = tileRegions(4032, 3024, 2);
    expect(tiles).toHaveLength(4);
    for (const t of tiles) {
      expect(t.left + t.width).toBeLessThanOrEqual(4032);
      expect(t.top + t.height).toBeLessThanOrEqual(3024);
    }
    expect(tiles[0]).toMatchObject({ left: 0, top: 0 });
    expect(tiles[3]!.left + tiles[3]!.width).toBe(4032);
    const overlap = tiles[0]!.left + tiles[0]!.width - tiles[1]!.left;
    expect(overlap / tiles[0]!.width).toBeCloseTo(TILE_OVERLAP, 1);
    expect(tileRegions(640, 640, 1)).toEqual([]);
    expect(tileRegions(640, 640, 3)).toHaveLength(9);
  });

  it("maps tile detections to the photo and keeps one of each damage seen twice", () => {
    const d = (x1: number, y1: number, x2: number, y2: number, score: number, cls = 1) => ({ x1, y1, x2, y2, score, cls, name: "dent" });
    const merged = mergeTiles(
      [d(100, 100, 200, 200, 0.4)],
      [{ region: { left: 50, top: 50, width: 400, height: 400 }, found: [d(52, 52, 148, 148, 0.8), d(300, 300, 320, 320, 0.5, 4)] }],
      0.5,
    );
    expect(merged).toHaveLength(2);
    expect(merged[0]).toMatchObject({ x1: 102, y1: 102, score: 0.8 });
    expect(merged[1]).toMatchObject({ x1: 350, y1: 350, cls: 4 });
  });
});
