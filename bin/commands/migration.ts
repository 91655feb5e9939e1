import { evidenceBlobKey, modelInputBlobKey, photoBlobKey, photoIndexFolder, reportBlobKey } from "../../core/domain/blob-keys.ts";
import { CaptureLinks } from "../../core/domain/capture-links.ts";
import type { EventType, Status } from "../../core/domain/state-machine.ts";
import { REVIEW_REQUIRED, REVIEWED, STATUSES } from "../../core/domain/state-machine.ts";
import { DEFAULT_REVIEW_POLICY, MAX_REVIEWS } from "../../core/domain/review.ts";
import type { BlobStore } from "../../core/ports/blob-store.ts";
import type { EventStore } from "../../core/ports/event-store.ts";
import type { InspectionStore, TransitionPatch } from "../../core/ports/inspection-store.ts";
import type { AccountRecord, KeyStore, WebhookSecretRecord } from "../../core/ports/key-store.ts";
import type { EventRecord, InspectionRecord, Scope } from "../../core/ports/records.ts";
import type { UserStore } from "../../core/ports/user-store.ts";

/** One side of a migration, through the ports: what an installation keeps, wherever it keeps it. */
export type Installation = {
  inspections: InspectionStore;
  events: EventStore;
  keys: KeyStore;
  users: UserStore;
  blobs: BlobStore;
  /** The capture-link secret (capture tokens, cookies and share links are derived from it); null: none yet. */
  secret(): Promise<Buffer | null>;
  /** Stores `offered` where there is none: the secret then held. */
  adoptSecret(offered: Buffer): Promise<Buffer>;
};

/** What a run did, kind by kind: copied now, or found in the target already (a re-run, or an earlier run stopped half-way). */
export type MigrationCounts = Record<
  | "accounts"
  | "apiKeys"
  | "webhookSecrets"
  | "accountSettings"
  | "users"
  | "inspections"
  | "photos"
  | "evidence"
  | "events"
  | "deliveryAttempts"
  | "blobs",
  { copied: number; present: number }
>;

export class MigrationRefused extends Error {}

const PAGE = 500;
const STATUS_EVENTS = new Set<string>(STATUSES.filter((s) => s !== "created").map((s) => `inspection.${s}`));
const CONTENT_TYPES: [string, string][] = [
  ["photos/", "image/jpeg"],
  ["evidence/", "image/jpeg"],
  ["reports/", "application/json"],
  ["model-inputs/", "application/octet-stream"],
];
const contentTypeOf = (key: string) =>
  CONTENT_TYPES.find(([p]) => key.startsWith(p))?.[1] ?? (key.endsWith(".json") ? "application/json" : "text/plain");

/** Every inspection of every account, through the store's feed (changedSince), which lists them all. */
async function allInspections(store: InspectionStore): Promise<InspectionRecord[]> {
  const all: InspectionRecord[] = [];
  let after: { updatedAt: number; id: string } | null = null;
  for (;;) {
    const page = await store.changedSince(after, PAGE);
    all.push(...page);
    if (page.length < PAGE) return all;
    const last = page.at(-1)!;
    after = { updatedAt: last.updatedAt, id: last.id };
  }
}

/** A store's secret as it stands, asked without making one: `make` is called only where there is none. */
async function storedWebhookSecret(keys: KeyStore, accountId: string, livemode: boolean): Promise<WebhookSecretRecord | null> {
  let none = false;
  try {
    return await keys.webhookSecretFor(
      accountId,
      livemode,
      () => {
        none = true;
        throw new Error("no webhook secret yet");
      },
      Date.now(),
    );
  } catch (error) {
    if (none) return null;
    throw error;
  }
}

/** The folder a blob key is in, as BlobStore.list takes it. */
const folderOf = (key: string) => key.slice(0, key.lastIndexOf("/") + 1);

/** Every blob name in `folder`, page by page. */
async function blobNames(blobs: BlobStore, folder: string): Promise<string[]> {
  const names: string[] = [];
  for (let after: string | null = null; ; ) {
    const page = await blobs.list(folder, after, 1_000);
    names.push(...page);
    if (page.length < 1_000) return names;
    after = page.at(-1)!;
  }
}

/**
 * Copies an embedded installation into a cluster one, through the ports alone, so every store of
 * either mode can be either side. Each thing is copied only where the target lacks it, by its id
 * (accounts, keys by their hash, users by their email, inspections, events, blobs by their key), so
 * a run stopped half-way is finished by the next, and a run over a finished migration copies nothing.
 * Inspections are replayed as they happened: made, photographed, their intents, each move with the
 * event it sent (its id, time and body), reviews, evidence and each delivery attempt; the target
 * ends with the same records and events, its capture tokens found by the same hashes. Of an
 * inspection with more than MAX_REVIEWS reviews (none bounded them before 748ebd6, and racing
 * reviews could pass the count until 700a84d), the last MAX_REVIEWS are copied, its standing review
 * the last of them; the earlier ones, and their events, are left out and named in what it prints.
 */
export async function migrate(
  from: Installation,
  to: Installation,
  options: { allowOtherData: boolean; print: (line: string) => void },
): Promise<MigrationCounts> {
  const counts = Object.fromEntries(
    [
      "accounts",
      "apiKeys",
      "webhookSecrets",
      "accountSettings",
      "users",
      "inspections",
      "photos",
      "evidence",
      "events",
      "deliveryAttempts",
      "blobs",
    ].map((k) => [k, { copied: 0, present: 0 }]),
  ) as MigrationCounts;
  const count = (kind: keyof MigrationCounts, copied: boolean) => counts[kind][copied ? "copied" : "present"]++;

  const secret = await from.secret();
  if (!secret)
    throw new MigrationRefused(
      "the source has no capture-link secret (DATA_DIR/capture-link.key): it is not an embedded installation that has run",
    );
  const [accounts, keys, hashes, inspections] = await Promise.all([
    from.keys.accounts(),
    from.keys.list(),
    from.keys.keyHashes(),
    allInspections(from.inspections),
  ]);
  await refuseOtherData(
    to,
    { secret, accounts, keyIds: new Set(keys.map((k) => k.id)), inspectionIds: new Set(inspections.map((r) => r.id)) },
    options,
  );

  // The secret first: capture links, dashboard cookies and share links made before keep working.
  const held = await to.adoptSecret(secret);
  if (!held.equals(secret)) throw new MigrationRefused("the target's capture-link secret changed while migrating");

  for (const a of accounts) {
    const before = (await to.keys.accounts()).some((x) => x.id === a.id);
    if ((await to.keys.adoptAccount(a)) !== a.id) throw new MigrationRefused(`the target's account "${a.name}" has another id`);
    count("accounts", !before);
    for (const livemode of [false, true]) {
      const copied = await copyWebhookSecret(from.keys, to.keys, a.id, livemode);
      if (copied !== null) count("webhookSecrets", copied);
      // Settings the source changed, where the target still has the default (a policy set in the
      // cluster since stays; a policy has no time to compare).
      const policy = await from.keys.reviewPolicy(a.id, livemode);
      if (policy === DEFAULT_REVIEW_POLICY) continue;
      const there = await to.keys.reviewPolicy(a.id, livemode);
      if (there === DEFAULT_REVIEW_POLICY) await to.keys.setReviewPolicy(a.id, livemode, policy);
      count("accountSettings", there === DEFAULT_REVIEW_POLICY);
    }
    // The later branding of the two stands.
    const branding = await from.keys.branding(a.id);
    if (branding.updatedAt > 0) {
      const newer = branding.updatedAt > (await to.keys.branding(a.id)).updatedAt;
      if (newer) await to.keys.setBranding(a.id, branding);
      count("accountSettings", newer);
    }
    for (const u of await from.users.listUsers(a.id)) {
      const there = await to.users.findByEmail(u.email);
      if (there && there.id !== u.id) throw new MigrationRefused(`the target has another user with the email ${u.email}`);
      if (!there) await to.users.createUser(a.name, { id: u.id, email: u.email, passwordHash: u.passwordHash }, u.createdAt);
      count("users", !there);
    }
  }

  for (const k of keys) {
    const hash = hashes.get(k.id);
    if (!hash) throw new Error(`the source's API key ${k.id} has no hash`);
    const there = await to.keys.findByHash(hash);
    if (!there) await to.keys.createKey(k.accountName, k.livemode ? "live" : "test", hash, k.last4, k.id, k.createdAt);
    if (k.revokedAt !== null && there?.revokedAt == null) await to.keys.revoke(k.id, k.revokedAt);
    count("apiKeys", !there);
  }
  const used = await from.users.keysLastUsed(keys.map((k) => k.id));
  const usedThere = await to.users.keysLastUsed(keys.map((k) => k.id));
  for (const [keyId, at] of used) if ((usedThere.get(keyId) ?? 0) < at) await to.users.touchKey(keyId, at);

  const links = new CaptureLinks(secret, "http://migration.invalid");
  const reviewsLeftOut: [string, number][] = [];
  for (const r of inspections) {
    const leftOut = await copyInspection(from, to, r, links, count);
    if (leftOut > 0) reviewsLeftOut.push([r.id, leftOut]);
  }

  for (const a of accounts) {
    for (const livemode of [false, true]) {
      const folder = photoIndexFolder(a.id, livemode);
      await copyBlobs(from.blobs, to.blobs, `${folder}/media/`, count);
      await copyBlobs(from.blobs, to.blobs, `${folder}/days/`, count);
      for (const day of await blobNames(from.blobs, `${folder}/days/`))
        await copyBlobs(from.blobs, to.blobs, `${folder}/log/${day}/`, count);
    }
  }

  for (const [kind, { copied, present }] of Object.entries(counts)) options.print(`${kind}: ${copied} copied, ${present} already there`);
  for (const [id, n] of reviewsLeftOut)
    options.print(
      `${id}: ${n} earlier review${n === 1 ? "" : "s"} not copied (an inspection keeps at most ${MAX_REVIEWS}; its last review stands)`,
    );
  const copied = Object.values(counts).reduce((n, c) => n + c.copied, 0);
  options.print(copied === 0 ? "nothing to copy: the target already holds everything the source has" : `${copied} things copied`);
  return counts;
}

/**
 * A target that holds anything the source does not (another installation's accounts, keys,
 * inspections, secret) is refused unless told; an account name or a secret that the two hold
 * differently can never be merged, and is refused always.
 */
async function refuseOtherData(
  to: Installation,
  source: { secret: Buffer; accounts: AccountRecord[]; keyIds: Set<string>; inspectionIds: Set<string> },
  options: { allowOtherData: boolean },
): Promise<void> {
  const secret = await to.secret();
  if (secret && !secret.equals(source.secret))
    throw new MigrationRefused(
      "the target has a capture-link secret of its own (NATS KV bucket `secrets`): the source's capture links, cookies and share links could not work there",
    );
  const ids = new Map(source.accounts.map((a) => [a.name, a.id]));
  const theirAccounts = await to.keys.accounts();
  const clash = theirAccounts.find((a) => ids.has(a.name) && ids.get(a.name) !== a.id);
  if (clash) throw new MigrationRefused(`the target's account "${clash.name}" has another id than the source's: the two cannot be merged`);
  const other = {
    accounts: theirAccounts.filter((a) => !ids.has(a.name)).length,
    "API keys": (await to.keys.list()).filter((k) => !source.keyIds.has(k.id)).length,
    inspections: (await allInspections(to.inspections)).filter((r) => !source.inspectionIds.has(r.id)).length,
  };
  const held = Object.entries(other).filter(([, n]) => n > 0);
  if (held.length > 0 && !options.allowOtherData)
    throw new MigrationRefused(
      `the target holds data the source does not (${held.map(([k, n]) => `${n} ${k}`).join(", ")}); ` +
        "migrate into an empty cluster installation, or pass --allow-other-data to add the source's beside it",
    );
}

/** The secret and any rotated-out one still signing, with their times: true when copied, false when there already, null when the source has none. */
async function copyWebhookSecret(from: KeyStore, to: KeyStore, accountId: string, livemode: boolean): Promise<boolean | null> {
  const s = await storedWebhookSecret(from, accountId, livemode);
  if (!s) return null;
  const there = await storedWebhookSecret(to, accountId, livemode);
  if (there) {
    if (there.secret !== s.secret) throw new MigrationRefused(`the target's account ${accountId} has another webhook secret`);
    return false;
  }
  if (s.previousSecret !== null && s.previousExpiresAt !== null) {
    await to.webhookSecretFor(accountId, livemode, () => s.previousSecret!, s.createdAt);
    await to.rotateWebhookSecret(accountId, livemode, () => s.secret, s.createdAt, s.previousExpiresAt - s.createdAt);
  } else {
    await to.webhookSecretFor(accountId, livemode, () => s.secret, s.createdAt);
  }
  return true;
}

async function copyBlob(from: BlobStore, to: BlobStore, key: string, count: (kind: "blobs", copied: boolean) => void): Promise<void> {
  const bytes = await from.get(key);
  if (bytes === null) return;
  count("blobs", await to.create(key, bytes, contentTypeOf(key)));
}

async function copyBlobs(from: BlobStore, to: BlobStore, folder: string, count: (kind: "blobs", copied: boolean) => void): Promise<void> {
  for (const name of await blobNames(from, folder)) await copyBlob(from, to, `${folder}${name}`, count);
}

/** What a move writes besides the status, as the source's record has it (the completed summary as its event sent it: a review replaces it later). */
function patchFor(to: Status, r: InspectionRecord, event: EventRecord): TransitionPatch {
  switch (to) {
    case "processing":
      return { submittedAt: r.submittedAt };
    case "completed": {
      const sent = (JSON.parse(event.data) as { summary?: InspectionRecord["summary"] }).summary;
      const summary =
        r.review && sent
          ? { findings: sent.findings, grade: sent.grade, needs_review: sent.needs_review, new_findings: sent.new_findings ?? null }
          : r.summary;
      return { completedAt: r.completedAt, summary };
    }
    case "canceled":
      return { canceledAt: r.canceledAt };
    case "failed":
      return { failure: r.failure };
    default:
      return {};
  }
}

async function copyInspection(
  from: Installation,
  to: Installation,
  r: InspectionRecord,
  links: CaptureLinks,
  count: (kind: keyof MigrationCounts, copied: boolean) => void,
): Promise<number> {
  const scope: Scope = { accountId: r.accountId, livemode: r.livemode };
  const all = await from.events.forInspection(scope, r.id);
  // The target keeps at most MAX_REVIEWS reviews and the last one stands: the earliest past the
  // bound, with their events, are left out (the same ones on every run). Answers how many.
  const reviews = all.filter((e) => e.type === (REVIEWED satisfies EventType));
  const leftOut = new Set(reviews.slice(0, Math.max(0, reviews.length - MAX_REVIEWS)).map((e) => e.id));
  const events = all.filter((e) => !leftOut.has(e.id));
  const body = (e: EventRecord) => ({ id: e.id, type: e.type, data: e.data });
  let there = await to.inspections.getById(r.id);
  const heldBefore = new Set(there ? (await to.events.forInspection(scope, r.id)).map((e) => e.id) : []);
  let wrote = false;
  if (!there) {
    const created = events.find((e) => e.type === "inspection.created");
    if (!created) throw new Error(`the source's inspection ${r.id} has no inspection.created event`);
    const first: InspectionRecord = { ...r, status: "created", updatedAt: r.createdAt };
    await to.inspections.create(first, CaptureLinks.hash(links.token(r.id)), () => body(created));
    wrote = true;
  }

  // Photos while the capture is open in the target (before any intent or move closes it).
  // By angle and slot, not media: a photo the target took since (a retake there) is never replaced by the source's.
  const slotOf = (p: { angle: string; slot: number | null }) => `${p.angle}/${p.slot ?? 0}`;
  const photosThere = new Set((await to.inspections.photos(r.id)).map(slotOf));
  for (const p of (await from.inspections.photos(r.id)).sort((a, b) => a.capturedAt - b.capturedAt)) {
    const media = await from.inspections.getMedia(scope, p.mediaId);
    if (!media) throw new Error(`the source's photo ${p.mediaId} of ${r.id} has no media record`);
    await copyBlob(from.blobs, to.blobs, photoBlobKey(r.id, p.mediaId), count);
    if (photosThere.has(slotOf(p))) {
      count("photos", false);
      continue;
    }
    const put = await to.inspections.putPhoto(p, media);
    if (!put.accepted) throw new Error(`the target refused photo ${p.mediaId} of ${r.id}: its capture is closed there`);
    count("photos", true);
    wrote = true;
  }

  there = (await to.inspections.getById(r.id))!;
  const intents = [
    r.openedAt !== null && there.openedAt === null && (() => to.inspections.recordOpened(r.id, r.openedAt!)),
    r.vinObserved !== null && there.vinObserved === null && (() => to.inspections.recordVinObserved(r.id, r.vinObserved!)),
    r.submitRequestedAt !== null &&
      there.submitRequestedAt === null &&
      (() => to.inspections.recordSubmitRequested(r.id, r.submitRequestedAt!)),
    r.cancelRequestedAt !== null &&
      there.cancelRequestedAt === null &&
      (() => to.inspections.recordCancelRequested(r.id, r.cancelRequestedAt!)),
  ].filter((record) => record !== false);
  for (const record of intents) await record();
  if (intents.length > 0) wrote = true;

  // Each move with the events it sent, in their order; a review's events after the completion.
  const sent = new Set((await to.events.forInspection(scope, r.id)).map((e) => e.id));
  let status = there.status;
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    if (sent.has(e.id) || !STATUS_EVENTS.has(e.type)) continue;
    const next = e.type.slice("inspection.".length) as Status;
    const with_ = [e];
    while (events[i + 1]?.type === REVIEW_REQUIRED && events[i + 1]!.createdAt === e.createdAt) with_.push(events[++i]!);
    const moved = await to.inspections.transition(r.id, status, next, e.createdAt, patchFor(next, r, e), () => with_.map(body));
    if (!moved) throw new Error(`the target would not move ${r.id} from ${status} to ${next}`);
    status = next;
    wrote = true;
  }
  for (const e of events) {
    if (sent.has(e.id) || e.type !== (REVIEWED satisfies EventType) || !r.review) continue;
    const reviewed = await to.inspections.recordReview(r.id, r.review, () => body(e));
    if (!reviewed) throw new Error(`the target refused the review of ${r.id}`);
    if ("refused" in reviewed)
      throw new Error(`the target refused the review of ${r.id}: it keeps ${reviewed.reviews} reviews of it already, the most it takes`);
    wrote = true;
  }

  // The controller's bookkeeping only where the target is where the source was and has none of its
  // own: a target whose workloads have run since (a re-run after the switch) keeps theirs.
  there = (await to.inspections.getById(r.id))!;
  const untouched = there.processingAttempts === 0 && there.processingDueAt === null;
  const differs = r.processingAttempts !== there.processingAttempts || r.processingDueAt !== there.processingDueAt;
  if (there.status === r.status && (wrote || untouched) && differs) {
    await to.inspections.scheduleProcessingRetry(r.id, r.processingAttempts, r.processingDueAt ?? 0);
    wrote = true;
  }

  // Evidence: the media rows that the report's findings point at, found by their blobs.
  for (const name of await blobNames(from.blobs, folderOf(evidenceBlobKey(r.id, "x")))) {
    const mediaId = name.replace(/\.jpg$/, "");
    const media = await from.inspections.getMedia(scope, mediaId);
    if (!media) continue;
    await copyBlob(from.blobs, to.blobs, evidenceBlobKey(r.id, mediaId), count);
    const held = await to.inspections.getMedia(scope, mediaId);
    if (!held) await to.inspections.putMedia(media);
    count("evidence", !held);
  }
  await copyBlob(from.blobs, to.blobs, reportBlobKey(r.id), count);
  // The photos' scaled model inputs: what detection reads for an inspection still to be processed.
  await copyBlobs(from.blobs, to.blobs, folderOf(modelInputBlobKey(r.id, "x", 1)), count);

  // The intents just recorded were reconciled in the source: none is left for the target's
  // controller to act on again. Only those: an intent the target's own users made stays due.
  there = (await to.inspections.getById(r.id))!;
  if (intents.length > 0 && r.reconcileGeneration === 0 && there.reconcileGeneration !== 0)
    await to.inspections.clearReconcile(r.id, there.reconcileGeneration);

  for (const e of events) count("events", !heldBefore.has(e.id));
  await copyDeliveries(from.events, to.events, scope, events, count);
  count("inspections", wrote);
  return leftOut.size;
}

/** Each event's delivery attempts and its delivery state: the attempts the target lacks, then the state the source ends in. */
async function copyDeliveries(
  from: EventStore,
  to: EventStore,
  scope: Scope,
  events: EventRecord[],
  count: (kind: keyof MigrationCounts, copied: boolean) => void,
): Promise<void> {
  const ids = events.map((e) => e.id);
  const [attempts, attemptsThere] = await Promise.all([from.attempts(ids), to.attempts(ids)]);
  for (const e of events) {
    const all = (attempts.get(e.id) ?? []).sort((a, b) => a.n - b.n);
    const done = new Set((attemptsThere.get(e.id) ?? []).map((a) => a.n));
    for (let i = 0; i < all.length; i++) {
      const a = all[i]!;
      if (done.has(a.n)) {
        count("deliveryAttempts", false);
        continue;
      }
      // A resend put the delivery back to pending before this attempt: so it is in the target too.
      if (e.scheduleFrom > 0 && i === e.scheduleFrom) await to.resend(scope, e.id, a.attemptedAt);
      const last = i === all.length - 1;
      const next =
        last && (e.deliveryStatus === "succeeded" || e.deliveryStatus === "failed")
          ? { status: e.deliveryStatus }
          : { nextAttemptAt: last ? (e.nextAttemptAt ?? a.attemptedAt) : all[i + 1]!.attemptedAt };
      await to.recordAttempt(a, next);
      count("deliveryAttempts", true);
    }
    // A resend made since the last attempt: pending again, due when the source has it due.
    const there = await to.get(scope, e.id);
    if (there && e.scheduleFrom > 0 && e.scheduleFrom === all.length && there.scheduleFrom !== e.scheduleFrom)
      await to.resend(scope, e.id, e.nextAttemptAt ?? Date.now());
  }
}
