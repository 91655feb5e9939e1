/** Emails are compared as people type them: case and surrounding spaces do not matter. */
export const normalizeEmail = (email: string) => email.trim().toLowerCase();
