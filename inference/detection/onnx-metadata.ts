/**
 * `metadata_props` of an ONNX model (ModelProto field 14: key/value string pairs), where Ultralytics
 * exports keep `names`, `imgsz` and `stride`. onnxruntime does not expose them, and they are the
 * only part of the file needed, so this walks the top-level protobuf fields and skips the rest.
 */
function varint(buf: Buffer, at: number): [number, number] {
  let value = 0;
  let shift = 0;
  for (;;) {
    const byte = buf[at++]!;
    value += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) return [value, at];
    shift += 7;
  }
}

function fields(buf: Buffer, start: number, end: number, visit: (field: number, value: Buffer) => void): void {
  let at = start;
  while (at < end) {
    const [tag, next] = varint(buf, at);
    at = next;
    const field = Math.floor(tag / 8);
    switch (tag & 7) {
      case 0:
        at = varint(buf, at)[1];
        break;
      case 1:
        at += 8;
        break;
      case 5:
        at += 4;
        break;
      case 2: {
        const [len, from] = varint(buf, at);
        visit(field, buf.subarray(from, from + len));
        at = from + len;
        break;
      }
      default:
        throw new Error(`not an ONNX model: unexpected protobuf wire type ${tag & 7}`);
    }
  }
}

export function onnxMetadata(model: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  fields(model, 0, model.length, (field, value) => {
    if (field !== 14) return;
    let key = "";
    let val = "";
    fields(value, 0, value.length, (f, v) => {
      if (f === 1) key = v.toString("utf8");
      if (f === 2) val = v.toString("utf8");
    });
    out[key] = val;
  });
  return out;
}

/** Ultralytics writes class names as a Python dict literal: `{0: 'crack', 1: 'dent'}`. */
export function classNames(meta: Record<string, string>): string[] {
  const names: string[] = [];
  for (const m of (meta.names ?? "").matchAll(/(\d+)\s*:\s*(['"])(.*?)\2/g)) names[Number(m[1])] = m[3]!;
  if (names.length === 0 || names.some((n) => n === undefined)) throw new Error("the model's metadata has no class names ('names')");
  return names;
}

/** The square input size Ultralytics records as `imgsz` (`[384, 384]`); 640, its default, when absent. */
export const inputSize = (meta: Record<string, string>): number => Number(/\d+/.exec(meta.imgsz ?? "")?.[0] ?? 640);
