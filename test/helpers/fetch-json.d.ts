// Tests read many response bodies and assert on their shape with expect(); typing each one would
// only restate the zod schemas, so in tests a JSON body is `any`.
declare global {
  interface Response {
    json(): Promise<any>;
  }
}
export {};
