/**
 * A JSON-RPC 2.0 client for `ctxengine serve` over a child process's stdio
 * (one JSON value per line). If the server dies, the next call restarts it and
 * is retried once; only a second failure is thrown, so the gateway applies its
 * own rule (quarantine for this process, fallback to its `legacy`).
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createInterface } from "node:readline";

export const PROTOCOL_VERSION = "1.0";

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

/** The server went away during (or before) a call: worth one restart. */
export class ServerGoneError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ServerGoneError";
  }
}

export type ServerOptions = {
  command: string[];
  env?: Record<string, string>;
  callTimeoutMs: number;
  /** The server's stderr and other chatter. */
  log: (message: string) => void;
  /** Restarts: worth an operator's attention. */
  warn: (message: string) => void;
};

type Pending = {
  resolve: (value: Json) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
};

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

class Connection {
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private gone: Error | undefined;
  readonly child: ChildProcessWithoutNullStreams;

  constructor(
    private readonly options: ServerOptions,
    private readonly handlers: Map<string, ServerCallHandler>,
  ) {
    const [program, ...args] = options.command;
    if (program === undefined) throw new Error("ctxengine: the server command is empty");
    this.child = spawn(program, args, {
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...process.env, ...options.env },
    });
    const lines = createInterface({ input: this.child.stdout });
    lines.on("line", (line) => this.receive(line));
    const stderr = createInterface({ input: this.child.stderr });
    stderr.on("line", (line) => options.log(`server: ${line}`));
    this.child.on("error", (error) => this.fail(new ServerGoneError(`cannot run ${program}: ${error.message}`)));
    this.child.on("exit", (code, signal) =>
      this.fail(new ServerGoneError(`ctxengine serve exited (${signal ?? `code ${String(code)}`})`)),
    );
    this.child.stdin.on("error", (error) => this.fail(new ServerGoneError(`server stdin: ${error.message}`)));
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
        reject(new ServerGoneError(`ctxengine serve did not answer ${method} in ${this.options.callTimeoutMs} ms`));
        this.child.kill("SIGKILL");
      }, this.options.callTimeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      this.child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
    });
  }

  close(): void {
    this.child.stdin.end();
  }

  private fail(error: Error): void {
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
      this.options.log(`ignored a line that is not JSON: ${line.slice(0, 200)}`);
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
    const error = message.error;
    if (isObject(error)) {
      const code = typeof error.code === "number" ? error.code : -32603;
      const text = typeof error.message === "string" ? error.message : "ctxengine serve failed";
      pending.reject(new RpcError(code, text, error.data));
    } else {
      pending.resolve(message.result ?? null);
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
    if (this.alive) this.child.stdin.write(`${JSON.stringify(reply)}\n`);
  }
}

/** The shared server of one gateway process: started on first use, restarted once per failed call. */
export class BridgeServer {
  private connection: Connection | undefined;
  private starting: Promise<Connection> | undefined;
  private info: JsonObject | undefined;
  restarts = 0;
  readonly handlers = new Map<string, ServerCallHandler>();

  constructor(private readonly options: ServerOptions) {}

  /** The engine's info from the handshake (starting the server if needed). */
  async engineInfo(): Promise<JsonObject> {
    await this.connect();
    if (this.info === undefined) throw new Error("ctxengine serve sent no engine info");
    return this.info;
  }

  /** One call; a dead server is restarted and the call retried once. */
  async call(method: string, params: JsonObject): Promise<Json> {
    try {
      return await (await this.connect()).request(method, params);
    } catch (error) {
      if (!(error instanceof ServerGoneError)) throw error;
      this.options.warn(`${error.message}; restarting it and retrying ${method} once`);
      this.connection = undefined;
      this.restarts += 1;
      return await (await this.connect()).request(method, params);
    }
  }

  close(): void {
    this.connection?.close();
    this.connection = undefined;
  }

  private async connect(): Promise<Connection> {
    if (this.connection?.alive) return this.connection;
    if (this.starting === undefined) {
      this.starting = this.start().finally(() => {
        this.starting = undefined;
      });
    }
    return await this.starting;
  }

  private async start(): Promise<Connection> {
    const connection = new Connection(this.options, this.handlers);
    const hello = await connection.request("initialize", { protocolVersion: PROTOCOL_VERSION });
    if (!isObject(hello) || !isObject(hello.info)) {
      connection.close();
      throw new Error("ctxengine serve answered initialize without engine info");
    }
    this.info = hello.info;
    this.connection = connection;
    return connection;
  }
}
