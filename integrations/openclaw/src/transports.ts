/**
 * Connecting to a `ctxengine serve` that runs already (several gateway processes
 * sharing one server): a unix socket (`--socket PATH`) or 127.0.0.1 HTTP
 * (`--http PORT`, bearer token). Sessions are what the server holds, so both doors
 * are checked before anything is sent: the socket must be ours and private (mode
 * 0600), the token file must be ours and private, and HTTP goes to 127.0.0.1 only.
 */
import { readFileSync, statSync, type Stats } from "node:fs";
import { request as httpRequest } from "node:http";
import { createConnection } from "node:net";

import {
  isObject,
  LineTransport,
  RpcError,
  ServerGoneError,
  settle,
  type Json,
  type JsonObject,
  type Logs,
  type Opener,
  type Transport,
} from "./rpc.js";

/** The default environment variable holding the HTTP token (as `ctxengine serve --http` reads it). */
export const TOKEN_ENV = "CTXENGINE_BRIDGE_TOKEN";
/** The shortest token the server accepts. */
const MIN_TOKEN = 16;
/** Connection errors that mean "no server there (any more)": worth one reconnect. */
const GONE_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ENOENT", "EPIPE", "ECONNABORTED"]);

function errorCode(error: Error): string {
  const code = (error as NodeJS.ErrnoException).code;
  return typeof code === "string" ? code : "";
}

/** Refuses a path that another user could have made or can read. */
function checkPrivate(path: string, what: string, isRight: (found: Stats) => boolean): void {
  const found = statSync(path, { throwIfNoEntry: false });
  if (found === undefined) throw new ServerGoneError(`${what} ${path} does not exist (is ctxengine serve running?)`);
  if (!isRight(found)) throw new Error(`${what} ${path} is not what it should be`);
  const uid = process.getuid?.();
  if (uid !== undefined && found.uid !== uid) {
    throw new Error(`${what} ${path} belongs to uid ${found.uid}, not to this user (${uid}): refused`);
  }
  if ((found.mode & 0o077) !== 0) {
    throw new Error(`${what} ${path} is open to other users (mode ${(found.mode & 0o777).toString(8)}): refused`);
  }
}

/** Connects to `ctxengine serve --socket PATH`. */
export function connectSocket(path: string, callTimeoutMs: number, logs: Logs): Opener {
  return async (handlers) => {
    checkPrivate(path, "the socket", (found) => found.isSocket());
    const socket = createConnection(path);
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", () => resolve());
      socket.once("error", (error) =>
        reject(GONE_CODES.has(errorCode(error)) ? new ServerGoneError(`cannot connect to ${path}: ${error.message}`) : error),
      );
    });
    const transport = new LineTransport(socket, socket, handlers, callTimeoutMs, logs, () => socket.destroy());
    socket.on("close", () => transport.fail(new ServerGoneError(`ctxengine serve closed ${path}`)));
    return transport;
  };
}

/** The HTTP token: from `tokenFile` (ours, mode 0600) or the environment variable `tokenEnv`. */
export function readToken(tokenFile: string | undefined, tokenEnv: string): string {
  let token: string;
  if (tokenFile !== undefined) {
    checkPrivate(tokenFile, "the token file", (found) => found.isFile());
    token = readFileSync(tokenFile, "utf8").trim();
  } else {
    token = (process.env[tokenEnv] ?? "").trim();
  }
  if (token.length < MIN_TOKEN) {
    const where = tokenFile ?? `$${tokenEnv}`;
    throw new Error(`ctxengine: no HTTP token of at least ${MIN_TOKEN} characters in ${where}`);
  }
  return token;
}

/** `127.0.0.1:PORT` or `http://127.0.0.1:PORT`: the port; any other host is refused. */
export function localPort(address: string): number {
  const match = /^(?:http:\/\/)?127\.0\.0\.1:(\d{1,5})\/?$/.exec(address.trim());
  const port = match?.[1] === undefined ? NaN : Number(match[1]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error(`ctxengine: connect.http must be 127.0.0.1:PORT, not ${JSON.stringify(address)}`);
  }
  return port;
}

/** One POST per call; HTTP has no way back, so the server makes no calls to the plugin. */
class HttpTransport implements Transport {
  private nextId = 1;
  alive = true;

  constructor(
    private readonly port: number,
    private readonly token: string,
    private readonly callTimeoutMs: number,
  ) {}

  request(method: string, params: JsonObject): Promise<Json> {
    const body = JSON.stringify({ jsonrpc: "2.0", id: this.nextId++, method, params });
    return new Promise<Json>((resolve, reject) => {
      const call = httpRequest(
        {
          host: "127.0.0.1",
          port: this.port,
          method: "POST",
          path: "/",
          headers: {
            Authorization: `Bearer ${this.token}`,
            "Content-Type": "application/json",
            "Content-Length": Buffer.byteLength(body),
          },
          timeout: this.callTimeoutMs,
        },
        (reply) => {
          const chunks: Buffer[] = [];
          reply.on("data", (chunk: Buffer) => chunks.push(chunk));
          reply.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            if (reply.statusCode === 401) {
              // Not worth a retry: the same token would be refused again.
              reject(new RpcError(-32001, "ctxengine serve refused the HTTP token (401)", null));
              return;
            }
            try {
              const message: unknown = JSON.parse(text);
              if (!isObject(message)) throw new Error("not a JSON-RPC answer");
              resolve(settle(message));
            } catch (error) {
              if (error instanceof RpcError) reject(error);
              else reject(new Error(`ctxengine serve answered HTTP ${String(reply.statusCode)}: ${text.slice(0, 200)}`));
            }
          });
        },
      );
      call.on("timeout", () => call.destroy(new ServerGoneError(`ctxengine serve did not answer ${method} in ${this.callTimeoutMs} ms`)));
      call.on("error", (error) => {
        if (error instanceof ServerGoneError || GONE_CODES.has(errorCode(error))) {
          this.alive = false;
          reject(error instanceof ServerGoneError ? error : new ServerGoneError(`127.0.0.1:${this.port}: ${error.message}`));
        } else {
          reject(error);
        }
      });
      call.end(body);
    });
  }

  close(): void {
    this.alive = false;
  }
}

/** Connects to `ctxengine serve --http PORT` with the token. */
export function connectHttp(address: string, tokenFile: string | undefined, tokenEnv: string, callTimeoutMs: number): Opener {
  const port = localPort(address);
  return async () => new HttpTransport(port, readToken(tokenFile, tokenEnv), callTimeoutMs);
}
