/**
 * The plugin's config (plugins.entries.ctxengine.config; docs/bridge.md) and the
 * server it names: one this gateway process starts, or a running one (`connect`).
 */
import { spawnServer, type Logs, type Opener } from "./rpc.js";
import { connectHttp, connectSocket, TOKEN_ENV } from "./transports.js";

type Connect = { socket: string } | { http: string; tokenFile?: string; tokenEnv: string };

export type PluginConfig = {
  command: string[];
  engine?: string;
  args: string[];
  env: Record<string, string>;
  callTimeoutMs: number;
  connect?: Connect;
};

export function stringArray(value: unknown): string[] | undefined {
  return Array.isArray(value) && value.every((item) => typeof item === "string") ? value : undefined;
}

function readConnect(value: unknown): Connect | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "object" || value === null) throw new Error("ctxengine: connect must be an object");
  const given: Record<string, unknown> = { ...value };
  if ("token" in given) throw new Error("ctxengine: give the HTTP token in a file (tokenFile) or tokenEnv, not in the config");
  if (typeof given.socket === "string" && given.http === undefined) return { socket: given.socket };
  if (typeof given.http === "string" && given.socket === undefined) {
    const out: Connect = { http: given.http, tokenEnv: typeof given.tokenEnv === "string" ? given.tokenEnv : TOKEN_ENV };
    if (typeof given.tokenFile === "string") out.tokenFile = given.tokenFile;
    return out;
  }
  throw new Error("ctxengine: connect needs exactly one of socket or http");
}

export function readConfig(raw: Record<string, unknown> | undefined): PluginConfig {
  const config = raw ?? {};
  const env: Record<string, string> = {};
  if (typeof config.env === "object" && config.env !== null) {
    for (const [key, value] of Object.entries(config.env)) {
      if (typeof value === "string") env[key] = value;
    }
  }
  const out: PluginConfig = {
    command: stringArray(config.command) ?? ["ctxengine", "serve"],
    args: stringArray(config.args) ?? [],
    env,
    callTimeoutMs: typeof config.callTimeoutMs === "number" ? config.callTimeoutMs : 120_000,
  };
  if (typeof config.engine === "string") out.engine = config.engine;
  const connect = readConnect(config.connect);
  if (connect !== undefined) out.connect = connect;
  return out;
}

/** The server to use: a running one (`connect`), or one this process starts. */
export function opener(config: PluginConfig, logs: Logs): { open: Opener; again: string } {
  const connect = config.connect;
  if (connect === undefined) {
    const command = [...config.command, ...(config.engine ? ["--engine", config.engine] : []), ...config.args];
    return { open: spawnServer(command, config.env, config.callTimeoutMs, logs), again: "restarting it" };
  }
  // A server we did not start cannot be restarted by us: reconnect once, then throw.
  if ("socket" in connect) return { open: connectSocket(connect.socket, config.callTimeoutMs, logs), again: "reconnecting" };
  return { open: connectHttp(connect.http, connect.tokenFile, connect.tokenEnv, config.callTimeoutMs), again: "reconnecting" };
}
