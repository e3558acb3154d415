/**
 * The ctxengine plugin for the gateway: registers the `ctxengine` context
 * engine, backed by one `ctxengine serve` process per gateway process.
 *
 * Config (plugins.entries.ctxengine.config): `command` (default
 * ["ctxengine", "serve"]), `engine`, `args`, `env`, `callTimeoutMs`.
 */
import type { OpenClawPluginApi } from "openclaw/plugin-sdk/plugin-entry";

import { BridgeState, createEngine } from "./engine.js";
import { BridgeServer } from "./rpc.js";

export const ENGINE_ID = "ctxengine";

type PluginConfig = {
  command: string[];
  engine?: string;
  args: string[];
  env: Record<string, string>;
  callTimeoutMs: number;
};

function stringArray(value: unknown): string[] | undefined {
  return Array.isArray(value) && value.every((item) => typeof item === "string") ? value : undefined;
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
  return out;
}

export default function register(api: OpenClawPluginApi): void {
  const config = readConfig(api.pluginConfig);
  const command = [...config.command, ...(config.engine ? ["--engine", config.engine] : []), ...config.args];
  const server = new BridgeServer({
    command,
    env: config.env,
    callTimeoutMs: config.callTimeoutMs,
    log: (message) => api.logger.info(`[ctxengine] ${message}`),
    warn: (message) => {
      // Also on stderr: the gateway's headless runs do not show plugin log lines.
      api.logger.warn(`[ctxengine] ${message}`);
      process.stderr.write(`[ctxengine] ${message}\n`);
    },
  });
  const state = new BridgeState(server);
  process.once("exit", () => server.close());
  api.registerContextEngine(ENGINE_ID, async () => createEngine(ENGINE_ID, state, await server.engineInfo()));
}
