/**
 * Outlines of a car seen from each angle, drawn for this project, laid over the live camera so the
 * customer knows how to frame the shot. Stroke only, so the car shows through.
 */
const SIDE = `<path d="M20 140 L30 108 Q38 96 60 94 L104 92 L138 62 Q148 54 166 54 L226 54 Q244 54 256 66 L284 94 Q302 98 304 112 L304 140 Z"/>
<path d="M144 66 L124 92 L200 92 L200 62 L166 62 Q152 62 144 66 Z M208 62 L208 92 L276 94 L252 70 Q246 62 232 62 Z"/>
<circle cx="76" cy="142" r="22"/><circle cx="252" cy="142" r="22"/>`;

const FRONT = `<path d="M56 150 L56 108 Q60 92 76 88 L96 50 Q102 40 116 40 L204 40 Q218 40 224 50 L244 88 Q260 92 264 108 L264 150 Z"/>
<path d="M104 84 L118 52 L202 52 L216 84 Z"/><rect x="70" y="104" width="40" height="16" rx="6"/><rect x="210" y="104" width="40" height="16" rx="6"/>
<rect x="130" y="118" width="60" height="16" rx="3"/><rect x="62" y="150" width="34" height="22" rx="5"/><rect x="224" y="150" width="34" height="22" rx="5"/>`;

const REAR = `<path d="M56 150 L56 106 Q60 92 78 88 L98 52 Q104 42 118 42 L202 42 Q216 42 222 52 L242 88 Q260 92 264 106 L264 150 Z"/>
<path d="M106 84 L120 54 L200 54 L214 84 Z"/><rect x="66" y="100" width="44" height="14" rx="4"/><rect x="210" y="100" width="44" height="14" rx="4"/>
<rect x="134" y="112" width="52" height="14" rx="2"/><rect x="62" y="150" width="34" height="22" rx="5"/><rect x="224" y="150" width="34" height="22" rx="5"/>`;

const CORNER = `<path d="M24 146 L26 116 Q30 102 48 98 L92 92 L120 62 Q128 54 142 54 L214 56 Q230 58 240 70 L262 96 Q290 100 298 114 L300 146 Z"/>
<path d="M48 98 L46 150 M92 92 L98 62 M124 90 L140 64 L208 66 L226 92 Z"/>
<circle cx="78" cy="146" r="20"/><circle cx="246" cy="146" r="20"/><rect x="28" y="108" width="20" height="12" rx="4"/>`;

const VIN = `<rect x="40" y="66" width="240" height="68" rx="8"/><path d="M60 100 L260 100" stroke-dasharray="10 6"/>`;
const ODOMETER = `<circle cx="160" cy="100" r="70"/><path d="M160 100 L200 66"/><path d="M108 150 L212 150"/>`;

/** Both front seats from behind, the steering wheel and the dashboard beyond them. */
const INTERIOR_FRONT = `<path d="M20 70 Q160 40 300 70"/><path d="M60 190 L64 96 Q66 80 84 80 L124 80 Q140 80 140 96 L144 190"/>
<path d="M176 190 L180 96 Q182 80 198 80 L238 80 Q254 80 256 96 L260 190"/><rect x="84" y="60" width="40" height="20" rx="6"/>
<rect x="198" y="60" width="40" height="20" rx="6"/><ellipse cx="104" cy="62" rx="34" ry="14"/>`;
/** The rear bench from a rear door: its back and seat, end to end. */
const INTERIOR_REAR = `<path d="M24 120 L34 50 Q38 36 54 36 L266 36 Q282 36 286 50 L296 120"/><path d="M16 120 L304 120 L296 164 L24 164 Z"/>
<path d="M120 38 L116 118 M200 38 L204 118"/><rect x="60" y="20" width="44" height="16" rx="6"/><rect x="216" y="20" width="44" height="16" rx="6"/>`;
/** The dashboard from the driver's seat: the instrument cluster's two dials behind the steering wheel. */
const DASHBOARD = `<path d="M10 110 Q40 40 160 36 Q280 40 310 110"/><circle cx="116" cy="84" r="30"/><circle cx="204" cy="84" r="30"/>
<path d="M116 84 L134 66 M204 84 L222 66"/><ellipse cx="160" cy="150" rx="96" ry="44"/><circle cx="160" cy="150" r="14"/>`;
/** A wheel from a metre away: the tire, the rim and its spokes, the arch above it. */
const WHEEL = `<path d="M50 110 Q56 18 160 14 Q264 18 270 110"/><circle cx="160" cy="110" r="84"/><circle cx="160" cy="110" r="54"/>
<circle cx="160" cy="110" r="12"/><path d="M160 56 L160 98 M108 94 L148 106 M128 154 L153 120 M192 154 L167 120 M212 94 L172 106"/>`;

const SHAPES: Record<string, { paths: string; mirror?: boolean }> = {
  front: { paths: FRONT },
  rear: { paths: REAR },
  left: { paths: SIDE },
  right: { paths: SIDE, mirror: true },
  front_left: { paths: CORNER },
  front_right: { paths: CORNER, mirror: true },
  rear_left: { paths: CORNER, mirror: true },
  rear_right: { paths: CORNER },
  vin: { paths: VIN },
  odometer: { paths: ODOMETER },
  interior_front: { paths: INTERIOR_FRONT },
  interior_rear: { paths: INTERIOR_REAR },
  dashboard: { paths: DASHBOARD },
  wheel_front_left: { paths: WHEEL },
  wheel_front_right: { paths: WHEEL },
  wheel_rear_left: { paths: WHEEL },
  wheel_rear_right: { paths: WHEEL },
};

/** Whether an angle has an outline of its own (the others would fall back to the front's). */
export const hasOverlay = (angle: string): boolean => angle in SHAPES;

export function overlaySvg(angle: string): string {
  const shape = SHAPES[angle] ?? SHAPES.front!;
  const transform = shape.mirror ? ` transform="translate(320 0) scale(-1 1)"` : "";
  return `<svg class="overlay" viewBox="0 0 320 200" aria-hidden="true" focusable="false"><g fill="none" stroke="currentColor" stroke-width="3" stroke-linejoin="round"${transform}>${shape.paths}</g></svg>`;
}
