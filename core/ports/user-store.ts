/** A person who signs in to the dashboard; belongs to one account. Times are Unix milliseconds. */
export type UserRecord = {
  id: string;
  accountId: string;
  accountName: string;
  email: string;
  passwordHash: string;
  createdAt: number;
};

export type InviteRecord = {
  accountId: string;
  email: string;
  invitedBy: string;
  createdAt: number;
  expiresAt: number;
  acceptedAt: number | null;
};

/**
 * Dashboard users, their sessions and invitations. Session ids and invite tokens are secrets held
 * by browsers: only their SHA-256 is stored, as with API keys.
 */
export interface UserStore {
  /** Creates the account on first use; null when the email already has a user. */
  createUser(accountName: string, user: { id: string; email: string; passwordHash: string }, now: number): Promise<UserRecord | null>;
  findByEmail(email: string): Promise<UserRecord | null>;
  listUsers(accountId: string): Promise<UserRecord[]>;

  createSession(idHash: string, userId: string, now: number, expiresAt: number): Promise<void>;
  /** The session's user while it has not expired; null otherwise. */
  sessionUser(idHash: string, now: number): Promise<UserRecord | null>;
  deleteSession(idHash: string): Promise<void>;

  createInvite(tokenHash: string, invite: Omit<InviteRecord, "acceptedAt">): Promise<void>;
  /** The invite while it is unused and unexpired; null otherwise. */
  openInvite(tokenHash: string, now: number): Promise<InviteRecord | null>;
  /**
   * Uses the invite and creates its user, both or neither: null when the invite is used, expired or
   * unknown, or its email already has a user.
   */
  acceptInvite(tokenHash: string, user: { id: string; passwordHash: string }, now: number): Promise<UserRecord | null>;

  /** Notes that an API key was used (the dashboard shows it); callers need not do it on every request. */
  touchKey(keyId: string, at: number): Promise<void>;
  /** When each of these keys was last used, for those used at all. */
  keysLastUsed(keyIds: readonly string[]): Promise<Map<string, number>>;
}
