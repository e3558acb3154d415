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

  note(sessionId: string, result: JsonObject): void {
    if (typeof result.seen === "number") this.seen.set(sessionId, result.seen);
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
    if (params.runtimeContext !== undefined) request.runtimeContext = toJson(params.runtimeContext);
    let result: JsonObject;
    try {
      result = asObject(await server.call("assemble", request), "assemble");
    } catch (error) {
      if (!(error instanceof RpcError) || error.code !== RESYNC_NEEDED || !isObject(error.data)) throw error;
      const base = numberOr(error.data.seen, 0);
      request.history = { base, messages: toJson(params.messages.slice(base)) };
      result = asObject(await server.call("assemble", request), "assemble");
    }
    state.note(params.sessionId, result);
    const out: AssembleResult = {
      messages: asMessages(result.messages, "assemble"),
      estimatedTokens: numberOr(result.estimatedTokens, 0),
      promptAuthority: result.promptAuthority === "preassembly_may_overflow" ? "preassembly_may_overflow" : "assembled",
    };
    if (typeof result.systemPromptAddition === "string") out.systemPromptAddition = result.systemPromptAddition;
    return out;
  }

  async function afterTurn(params: AfterTurnParams): Promise<void> {
    const request = toParams(params, ["messages", "runtimeContext"]);
    request.newMessages = toJson(params.messages.slice(params.prePromptMessageCount));
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
    state.note(params.sessionId, result);
  }

  async function commitTurn(params: CommitParams): Promise<CommitResult> {
    const result = asObject(await server.call("commitTurn", toParams(params, ["runtimeContext"])), "commitTurn");
    state.note(params.sessionId, result);
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
    state.note(params.sessionId, result);
    return { ingested: result.ingested === true };
  }

  async function ingestBatch(params: IngestBatchParams): Promise<IngestBatchResult> {
    const result = asObject(await server.call("ingestBatch", toParams(params)), "ingestBatch");
    state.note(params.sessionId, result);
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
