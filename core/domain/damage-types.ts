/**
 * The damage the damage model finds, written once: the API's finding types, the reviewer's choices,
 * the severity table, the model's class names, the evaluation's classes, the per-class thresholds
 * and the words the dashboard and the PDF print all come from this list.
 */
export const DAMAGE_TYPES = ["dent", "scratch", "crack", "glass_shatter", "lamp_broken", "tire_flat"] as const;
export type DamageType = (typeof DAMAGE_TYPES)[number];

/** "glass_shatter" as "glass shatter". */
type Spaced<T extends string> = T extends `${infer A}_${infer B}` ? `${A} ${Spaced<B>}` : T;
/** A damage model class name: the type with spaces ("glass shatter"), as the model was trained. */
export type DamageClass = Spaced<DamageType>;

/** The damage model's class name of a type, which is also the word people read ("glass shatter"). */
export const damageClass = (type: DamageType): DamageClass => type.replaceAll("_", " ") as DamageClass;

/** The damage type a model class name stands for ("glass shatter" or "glass_shatter"), if any. */
export function damageTypeOf(name: string): DamageType | undefined {
  const type = name.trim().replace(/[\s_]+/g, "_");
  return (DAMAGE_TYPES as readonly string[]).includes(type) ? (type as DamageType) : undefined;
}
