/**
 * A JSON-RPC 2.0 client for `ctxengine serve`: over a child process's stdio (the
 * plugin started the server) or a connection to a running server (unix socket,
 * 127.0.0.1 HTTP; see transports.ts). If the server goes away during a call, the
 * plugin starts it again (or reconnects, when it did not start it) and retries the
 * call once; only a second failure is thrown, so the gateway applies its own rule
 * (quarantine for this process, fallback to its `legacy`).
 */
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import type { Readable, Writable } from "node:stream";

export const PROTOCOL_VERSION = "1.1";

export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** A server→plugin call (e.g. `rewriteTranscriptEntries`). */
export type ServerCallHandler = (params: JsonObject) => Promise<Json>;

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data: Json | undefined,
  ) {
    super(message);
    this.name = "RpcError";
  }
}

/** The server went away during (or before) a call: worth one restart or reconnect. */
export class ServerGoneError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ServerGoneError";
  }
}

export type Logs = {
  /** The server's stderr and other chatter. */
  log: (message: string) => void;
  /** Restarts and reconnects: worth an operator's attention. */
  warn: (message: string) => void;
};

/** One live connection to a server; `request` rejects with ServerGoneError once it is gone. */
export interface Transport {
  readonly alive: boolean;
  request(method: string, params: JsonObject): Promise<Json>;
  close(): void;
}

/** Opens a new transport: starts a server, or connects to one. */
export type Opener = (handlers: Map<string, ServerCallHandler>) => Promise<Transport>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

type Pending = {
  resolve: (value: Json) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
};

/** The answer to a call as the server sent it: its result, or an RpcError. */
export function settle(message: JsonObject): Json {
  const error = message.error;
  if (isObject(error)) {
    const code = typeof error.code === "number" ? error.code : -32603;
    const text = typeof error.message === "string" ? error.message : "ctxengine serve failed";
    throw new RpcError(code, text, error.data);
  }
  return message.result ?? null;
}

/**
 * JSON-RPC over a pair of streams, one JSON value per line (stdio, a unix socket):
 * requests out, answers in, and the server's own calls answered by `handlers`.
 */
export class LineTransport implements Transport {
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private gone: Error | undefined;

  constructor(
    private readonly input: Readable,
    private readonly output: Writable,
    private readonly handlers: Map<string, ServerCallHandler>,
    private readonly callTimeoutMs: number,
    private readonly logs: Logs,
    /** Ends the peer for good (a call timed out): kill the child, destroy the socket. */
    private readonly abort: () => void,
  ) {
    createInterface({ input }).on("line", (line) => this.receive(line));
    output.on("error", (error) => this.fail(new ServerGoneError(`ctxengine serve: ${error.message}`)));
  }

  get alive(): boolean {
    return this.gone === undefined;
  }

  request(method: string, params: JsonObject): Promise<Json> {
    if (this.gone !== undefined) return Promise.reject(this.gone);
    const id = this.nextId++;
    return new Promise<Json>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new ServerGoneError(`ctxengine serve did not answer ${method} in ${this.callTimeoutMs} ms`));
        this.abort();
      }, this.callTimeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      this.output.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
    });
  }

  close(): void {
    this.output.end();
  }

  /** The peer is gone: every call in flight fails with `error`. */
  fail(error: Error): void {
    if (this.gone !== undefined) return;
    this.gone = error;
    for (const [id, pending] of this.pending) {
      clearTimeout(pending.timer);
      pending.reject(error);
      this.pending.delete(id);
    }
  }

  private receive(line: string): void {
    if (line.trim() === "") return;
    let message: unknown;
    try {
      message = JSON.parse(line);
    } catch {
      this.logs.log(`ignored a line that is not JSON: ${line.slice(0, 200)}`);
      return;
    }
    if (!isObject(message)) return;
    if (typeof message.method === "string") {
      void this.answer(message.id ?? null, message.method, isObject(message.params) ? message.params : {});
      return;
    }
    const id = typeof message.id === "number" ? message.id : -1;
    const pending = this.pending.get(id);
    if (pending === undefined) return;
    this.pending.delete(id);
    clearTimeout(pending.timer);
    try {
      pending.resolve(settle(message));
    } catch (error) {
      pending.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  private async answer(id: Json, method: string, params: JsonObject): Promise<void> {
    const handler = this.handlers.get(method);
    let reply: JsonObject;
    if (handler === undefined) {
      reply = { jsonrpc: "2.0", id, error: { code: -32601, message: `the plugin has no ${method}` } };
    } else {
      try {
        reply = { jsonrpc: "2.0", id, result: await handler(params) };
      } catch (error) {
        reply = { jsonrpc: "2.0", id, error: { code: -32000, message: String(error) } };
      }
    }
    if (this.alive) this.output.write(`${JSON.stringify(reply)}\n`);
  }
}

/** Starts `ctxengine serve` (stdio) as a child of this gateway process. */
export function spawnServer(
  command: string[],
  env: Record<string, string>,
  callTimeoutMs: number,
  logs: Logs,
): Opener {
  return async (handlers) => {
    const [program, ...args] = command;
    if (program === undefined) throw new Error("ctxengine: the server command is empty");
    const child = spawn(program, args, { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, ...env } });
    const transport = new LineTransport(child.stdout, child.stdin, handlers, callTimeoutMs, logs, () =>
      child.kill("SIGKILL"),
    );
    createInterface({ input: child.stderr }).on("line", (line) => logs.log(`server: ${line}`));
    child.on("error", (error) => transport.fail(new ServerGoneError(`cannot run ${program}: ${error.message}`)));
    child.on("exit", (code, signal) =>
      transport.fail(new ServerGoneError(`ctxengine serve exited (${signal ?? `code ${String(code)}`})`)),
    );
    return transport;
  };
}

/** The shared server of one gateway process: opened on first use, opened again once per failed call. */
export class BridgeServer {
  private transport: Transport | undefined;
  private opening: Promise<Transport> | undefined;
  private info: JsonObject | undefined;
  restarts = 0;
  readonly handlers = new Map<string, ServerCallHandler>();

  /** `again`: what a second open does, for the log ("restarting it", "reconnecting"). */
  constructor(
    private readonly open: Opener,
    private readonly again: string,
    private readonly logs: Logs,
  ) {}

  /** The engine's info from the handshake (opening the server if needed). */
  async engineInfo(): Promise<JsonObject> {
    await this.connect();
    if (this.info === undefined) throw new Error("ctxengine serve sent no engine info");
    return this.info;
  }

  /** The info of the last handshake, if there was one (no server is opened for it). */
  get knownInfo(): JsonObject | undefined {
    return this.info;
  }

  /** One call; a server gone away is opened again and the call retried once. */
  async call(method: string, params: JsonObject): Promise<Json> {
    try {
      return await (await this.connect()).request(method, params);
    } catch (error) {
      if (!(error instanceof ServerGoneError)) throw error;
      this.logs.warn(`${error.message}; ${this.again} and retrying ${method} once`);
      this.transport = undefined;
      this.restarts += 1;
      return await (await this.connect()).request(method, params);
    }
  }

  close(): void {
    this.transport?.close();
    this.transport = undefined;
  }

  private async connect(): Promise<Transport> {
    if (this.transport?.alive) return this.transport;
    if (this.opening === undefined) {
      this.opening = this.handshake().finally(() => {
        this.opening = undefined;
      });
    }
    return await this.opening;
  }

  private async handshake(): Promise<Transport> {
    const transport = await this.open(this.handlers);
    const hello = await transport.request("initialize", { protocolVersion: PROTOCOL_VERSION });
    if (!isObject(hello) || !isObject(hello.info)) {
      transport.close();
      throw new Error("ctxengine serve answered initialize without engine info");
    }
    this.info = hello.info;
    this.transport = transport;
    return transport;
  }
}
