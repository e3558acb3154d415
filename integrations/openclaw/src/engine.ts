/**
 * The gateway's ContextEngine, forwarding every lifecycle call to `ctxengine serve`.
 *
 * The server keeps each session's history, so only what is new travels: the
 * turn's messages in afterTurn, none in assemble (unless the server asks for a
 * resync because it has seen fewer messages than the gateway has).
 */
import type {
  AgentMessage,
  HarnessContextEngine as ContextEngine,
} from "openclaw/plugin-sdk/agent-harness-runtime";

import { BridgeServer, RpcError, type Json, type JsonObject } from "./rpc.js";

/** JSON-RPC error code: the server lacks history and says how much it has seen. */
const RESYNC_NEEDED = -32010;

type Info = ContextEngine["info"];
type AssembleParams = Parameters<ContextEngine["assemble"]>[0];
type AssembleResult = Awaited<ReturnType<ContextEngine["assemble"]>>;
type CompactParams = Parameters<ContextEngine["compact"]>[0];
type CompactResult = Awaited<ReturnType<ContextEngine["compact"]>>;
type IngestParams = Parameters<ContextEngine["ingest"]>[0];
type IngestResult = Awaited<ReturnType<ContextEngine["ingest"]>>;
type IngestBatchParams = Parameters<NonNullable<ContextEngine["ingestBatch"]>>[0];
type IngestBatchResult = Awaited<ReturnType<NonNullable<ContextEngine["ingestBatch"]>>>;
type BootstrapParams = Parameters<NonNullable<ContextEngine["bootstrap"]>>[0];
type BootstrapResult = Awaited<ReturnType<NonNullable<ContextEngine["bootstrap"]>>>;
type AfterTurnParams = Parameters<NonNullable<ContextEngine["afterTurn"]>>[0];
type CommitParams = Parameters<NonNullable<ContextEngine["commitTurn"]>>[0];
type CommitResult = Awaited<ReturnType<NonNullable<ContextEngine["commitTurn"]>>>;
type MaintainParams = Parameters<NonNullable<ContextEngine["maintain"]>>[0];
type MaintainResult = Awaited<ReturnType<NonNullable<ContextEngine["maintain"]>>>;
type SpawnParams = Parameters<NonNullable<ContextEngine["prepareSubagentSpawn"]>>[0];
type SpawnResult = Awaited<ReturnType<NonNullable<ContextEngine["prepareSubagentSpawn"]>>>;
type EndedParams = Parameters<NonNullable<ContextEngine["onSubagentEnded"]>>[0];
type RuntimeContext = NonNullable<MaintainParams["runtimeContext"]>;
type Rewrite = NonNullable<RuntimeContext["rewriteTranscriptEntries"]>;
type RewriteRequest = Parameters<Rewrite>[0];

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A JSON copy: Sets become arrays; functions, signals and undefined are left out. */
export function toJson(value: unknown): Json {
  const text = JSON.stringify(value, (_key, item: unknown) => {
    if (item instanceof Set) return [...(item as Set<unknown>)];
    if (typeof item === "function" || item instanceof AbortSignal) return undefined;
    return item;
  });
  return text === undefined ? null : (JSON.parse(text) as Json);
}

function toParams(value: object, omit: readonly string[] = []): JsonObject {
  const copy: Record<string, unknown> = { ...value };
  for (const key of omit) delete copy[key];
  const json = toJson(copy);
  return isObject(json) ? json : {};
}

function asObject(value: Json, method: string): JsonObject {
  if (!isObject(value)) throw new Error(`ctxengine serve: ${method} returned ${JSON.stringify(value)}`);
  return value;
}

function asMessages(value: Json | undefined, method: string): AgentMessage[] {
  if (!Array.isArray(value) || !value.every(isObject)) {
    throw new Error(`ctxengine serve: ${method} returned no message array`);
  }
  // Shapes were converted by the server (ctxengine_host.gateway_bridge.shapes).
  return value as unknown as AgentMessage[];
}

function numberOr(value: Json | undefined, fallback: number): number {
  return typeof value === "number" ? value : fallback;
}

/** State shared by every engine instance of this gateway process. */
export class BridgeState {
  /** Per session: how many of the gateway's messages the server has seen. */
  readonly seen = new Map<string, number>();
  /** Per session: the gateway's transcript rewrite, while a maintain call runs. */
  readonly rewriters = new Map<string, Rewrite>();

  constructor(readonly server: BridgeServer) {
    server.handlers.set("rewriteTranscriptEntries", async (params) => {
      const sessionId = typeof params.sessionId === "string" ? params.sessionId : "";
      const rewrite = this.rewriters.get(sessionId);
      if (rewrite === undefined) throw new Error(`no transcript rewrite for session ${sessionId} now`);
      return toJson(await rewrite(params.request as unknown as RewriteRequest));
    });
  }

  /** Per session, by gateway index: the messages we sent, so unchanged ones come back as refs. */
  readonly sent = new Map<string, (AgentMessage | undefined)[]>();

  /** After a call that sent `messages`: the server's `seen`, and where they landed. */
  note(sessionId: string, result: JsonObject, messages: readonly AgentMessage[] = []): void {
    if (typeof result.seen === "number") this.seen.set(sessionId, result.seen);
    if (typeof result.refBase === "number") this.record(sessionId, result.refBase, messages);
  }

  record(sessionId: string, base: number, messages: readonly AgentMessage[]): void {
    let sent = this.sent.get(sessionId);
    if (sent === undefined) {
      sent = [];
      this.sent.set(sessionId, sent);
    }
    messages.forEach((message, offset) => {
      sent[base + offset] = message;
    });
  }

  /** The longest run of indexes we hold, ending at the newest: `[lo, hi)`. */
  refRange(sessionId: string): [number, number] | undefined {
    const sent = this.sent.get(sessionId);
    if (sent === undefined || sent.length === 0) return undefined;
    let lo = sent.length;
    while (lo > 0 && sent[lo - 1] !== undefined) lo -= 1;
    return lo < sent.length ? [lo, sent.length] : undefined;
  }

  /** The server's messages with `{"$ref": n}` replaced by what we sent as message n. */
  resolve(sessionId: string, value: Json | undefined): AgentMessage[] {
    const messages = asMessages(value, "assemble");
    const sent = this.sent.get(sessionId) ?? [];
    return messages.map((message) => {
      const ref = (message as unknown as JsonObject)["$ref"];
      if (typeof ref !== "number") return message;
      const original = sent[ref];
      if (original === undefined) throw new Error(`ctxengine serve: unknown message ref ${ref}`);
      return original;
    });
  }
}

/** One engine instance (the gateway makes one per operation; they share the server). */
export function createEngine(id: string, state: BridgeState, serverInfo: JsonObject): ContextEngine {
  const server = state.server;
  const info: Info = {
    id,
    name: `ctxengine ${String(serverInfo.engine ?? "")}`.trim(),
    version: typeof serverInfo.version === "string" ? serverInfo.version : "0",
    ownsCompaction: serverInfo.ownsCompaction === true,
    turnMaintenanceMode: serverInfo.turnMaintenanceMode === "background" ? "background" : "foreground",
    // commitTurn is atomic (one server call) and idempotent per advancementKey.
    transcriptSemantics: {
      currentTurnFence: "before-current-turn-entry-v1",
      turnAdvancementIdempotency: "atomic-idempotent-v1",
    },
  };

  async function assemble(params: AssembleParams): Promise<AssembleResult> {
    const request = toParams(params, ["messages", "runtimeContext"]);
    request.historyCount = params.messages.length;
    const known = state.refRange(params.sessionId);
    if (known !== undefined) request.refRange = known;
    if (params.runtimeContext !== undefined) request.runtimeContext = toJson(params.runtimeContext);
    let result: JsonObject;
    try {
      result = asObject(await server.call("assemble", request), "assemble");
    } catch (error) {
      if (!(error instanceof RpcError) || error.code !== RESYNC_NEEDED || !isObject(error.data)) throw error;
      const base = numberOr(error.data.seen, 0);
      const missing = params.messages.slice(base);
      request.history = { base, messages: toJson(missing) };
      state.record(params.sessionId, base, missing);
      result = asObject(await server.call("assemble", request), "assemble");
    }
    state.note(params.sessionId, result);
    const out: AssembleResult = {
      messages: state.resolve(params.sessionId, result.messages),
      estimatedTokens: numberOr(result.estimatedTokens, 0),
      promptAuthority: result.promptAuthority === "preassembly_may_overflow" ? "preassembly_may_overflow" : "assembled",
    };
    if (typeof result.systemPromptAddition === "string") out.systemPromptAddition = result.systemPromptAddition;
    return out;
  }

  async function afterTurn(params: AfterTurnParams): Promise<void> {
    const request = toParams(params, ["messages", "runtimeContext"]);
    const newMessages = params.messages.slice(params.prePromptMessageCount);
    request.newMessages = toJson(newMessages);
    const seen = state.seen.get(params.sessionId);
    if (seen !== undefined) request.base = seen; // a retry after a restart is not counted twice
    let result: JsonObject;
    try {
      result = asObject(await server.call("afterTurn", request), "afterTurn");
    } catch (error) {
      if (!(error instanceof RpcError) || error.code !== RESYNC_NEEDED) throw error;
      delete request.base;
      result = asObject(await server.call("afterTurn", request), "afterTurn");
    }
    state.note(params.sessionId, result, newMessages);
  }

  async function commitTurn(params: CommitParams): Promise<CommitResult> {
    const result = asObject(await server.call("commitTurn", toParams(params, ["runtimeContext"])), "commitTurn");
    state.note(params.sessionId, result, params.messages);
    if (result.status !== "committed" && result.status !== "duplicate") {
      throw new Error(`ctxengine serve: commitTurn answered ${JSON.stringify(result.status)}`);
    }
    return { status: result.status };
  }

  async function compact(params: CompactParams): Promise<CompactResult> {
    // Always ours: never a no-op, never the gateway's own compaction in disguise.
    const result = asObject(await server.call("compact", toParams(params, ["runtimeContext", "abortSignal"])), "compact");
    const out: CompactResult = { ok: result.ok === true, compacted: result.compacted === true };
    if (typeof result.reason === "string") out.reason = result.reason;
    const detail = result.result;
    if (isObject(detail)) {
      out.result = {
        tokensBefore: numberOr(detail.tokensBefore, 0),
        tokensAfter: numberOr(detail.tokensAfter, 0),
        details: detail.details,
      };
      if (typeof detail.summary === "string") out.result.summary = detail.summary;
    }
    return out;
  }

  async function maintain(params: MaintainParams): Promise<MaintainResult> {
    const rewrite = params.runtimeContext?.rewriteTranscriptEntries;
    if (rewrite !== undefined) state.rewriters.set(params.sessionId, rewrite);
    try {
      const result = asObject(
        await server.call("maintain", toParams(params, ["runtimeContext", "abortSignal"])),
        "maintain",
      );
      const out: MaintainResult = {
        changed: result.changed === true,
        bytesFreed: numberOr(result.bytesFreed, 0),
        rewrittenEntries: numberOr(result.rewrittenEntries, 0),
      };
      if (typeof result.reason === "string") out.reason = result.reason;
      return out;
    } finally {
      state.rewriters.delete(params.sessionId);
    }
  }

  async function ingest(params: IngestParams): Promise<IngestResult> {
    const result = asObject(await server.call("ingest", toParams(params)), "ingest");
    state.note(params.sessionId, result, [params.message]);
    return { ingested: result.ingested === true };
  }

  async function ingestBatch(params: IngestBatchParams): Promise<IngestBatchResult> {
    const result = asObject(await server.call("ingestBatch", toParams(params)), "ingestBatch");
    state.note(params.sessionId, result, params.messages);
    return { ingestedCount: numberOr(result.ingestedCount, 0) };
  }

  async function bootstrap(params: BootstrapParams): Promise<BootstrapResult> {
    const result = asObject(await server.call("bootstrap", toParams(params, ["runtimeContext"])), "bootstrap");
    state.note(params.sessionId, result);
    const out: BootstrapResult = { bootstrapped: result.bootstrapped === true };
    if (typeof result.importedMessages === "number") out.importedMessages = result.importedMessages;
    return out;
  }

  async function prepareSubagentSpawn(params: SpawnParams): Promise<SpawnResult> {
    const result = await server.call("prepareSubagentSpawn", toParams(params));
    if (!isObject(result) || typeof result.rollbackId !== "string") return undefined;
    const rollbackId = result.rollbackId;
    return {
      rollback: async () => {
        await server.call("rollbackSubagentSpawn", { rollbackId });
      },
    };
  }

  async function onSubagentEnded(params: EndedParams): Promise<void> {
    await server.call("onSubagentEnded", toParams(params));
  }

  async function dispose(): Promise<void> {
    // Instances are per operation; the sessions and the server outlive them.
  }

  return {
    info,
    bootstrap,
    ingest,
    ingestBatch,
    assemble,
    compact,
    afterTurn,
    commitTurn,
    maintain,
    prepareSubagentSpawn,
    onSubagentEnded,
    dispose,
  };
}
