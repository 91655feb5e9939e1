import { hash, verify } from "@node-rs/argon2";

/** Shorter passwords are refused: NIST SP 800-63B's minimum for a memorised secret chosen by a person. */
export const MIN_PASSWORD_LENGTH = 10;
/** Argon2 reads the whole input; a megabyte "password" would only cost the server time. */
export const MAX_PASSWORD_LENGTH = 256;

/** argon2id with the library's defaults (19 MiB, 2 passes: OWASP's first recommended setting). */
export function hashPassword(password: string): Promise<string> {
  return hash(password);
}

export async function passwordMatches(passwordHash: string, password: string): Promise<boolean> {
  try {
    return await verify(passwordHash, password);
  } catch {
    return false;
  }
}

/**
 * A hash of no one's password, verified when the email is unknown, so a sign-in takes as long
 * whether or not the address has a user and response times do not list who does.
 */
export const NOBODY_HASH = await hashPassword("no user has this password, it only spends the time a real check would");

export function passwordProblem(password: string): string | null {
  if (password.length < MIN_PASSWORD_LENGTH) return `The password must be at least ${MIN_PASSWORD_LENGTH} characters.`;
  if (password.length > MAX_PASSWORD_LENGTH) return `The password must be at most ${MAX_PASSWORD_LENGTH} characters.`;
  return null;
}
