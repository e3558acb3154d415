/**
 * The ctxengine plugin for the gateway: registers the `ctxengine` context
 * engine, backed by one `ctxengine serve` per gateway process (started by the
 * plugin) or by a running server several gateway processes share (`connect`),
 * and the engine's own tools (LCM's `lcm_grep` ...) as gateway tools.
 *
 * Config (plugins.entries.ctxengine.config), see docs/bridge.md: `command`
 * (default ["ctxengine", "serve"]), `engine`, `args`, `env`, `callTimeoutMs`;
 * or `connect: {socket}` / `connect: {http, tokenFile | tokenEnv}`.
 */
import { readFileSync } from "node:fs";

import type { OpenClawPluginApi } from "openclaw/plugin-sdk/plugin-entry";

import { opener, readConfig, stringArray, type PluginConfig } from "./config.js";
import { BridgeState, createEngine } from "./engine.js";
import { BridgeServer, type Logs } from "./rpc.js";
import { engineTools, ToolSchemas } from "./tools.js";

export const ENGINE_ID = "ctxengine";

/** The tool names the manifest declares (`contracts.tools`): the gateway accepts only those. */
function declaredTools(): string[] {
  const manifest: unknown = JSON.parse(readFileSync(new URL("../openclaw.plugin.json", import.meta.url), "utf8"));
  if (typeof manifest !== "object" || manifest === null || !("contracts" in manifest)) return [];
  const contracts = manifest.contracts;
  if (typeof contracts !== "object" || contracts === null || !("tools" in contracts)) return [];
  return stringArray(contracts.tools) ?? [];
}

type Shared = { server: BridgeServer; state: BridgeState; schemas: ToolSchemas };

/**
 * One server per gateway process and config. The gateway may run `register` more than
 * once in a process (its tool catalog and its runtime load plugins separately); two
 * servers would open one session twice (the store's lease refuses the second).
 */
function shared(raw: Record<string, unknown>, config: PluginConfig, logs: Logs): Shared {
  const registry = globalThis as typeof globalThis & { [SHARED]?: Map<string, Shared> };
  const all = (registry[SHARED] ??= new Map<string, Shared>());
  const key = JSON.stringify(raw);
  let found = all.get(key);
  if (found === undefined) {
    const { open, again } = opener(config, logs);
    const server = new BridgeServer(open, again, logs);
    found = { server, state: new BridgeState(server), schemas: new ToolSchemas(server, raw, config.callTimeoutMs, logs) };
    all.set(key, found);
    process.once("exit", () => server.close());
  }
  return found;
}

const SHARED = Symbol.for("ctxengine.openclaw.bridge");

export default function register(api: OpenClawPluginApi): void {
  const raw = api.pluginConfig ?? {};
  const config = readConfig(raw);
  const logs: Logs = {
    log: (message) => api.logger.info(`[ctxengine] ${message}`),
    warn: (message) => {
      // Also on stderr: the gateway's headless runs do not show plugin log lines.
      api.logger.warn(`[ctxengine] ${message}`);
      process.stderr.write(`[ctxengine] ${message}\n`);
    },
  };
  const { server, state, schemas } = shared(raw, config, logs);
  api.registerContextEngine(ENGINE_ID, async () => createEngine(ENGINE_ID, state, await server.engineInfo()));
  const names = declaredTools();
  if (names.length > 0) {
    api.registerTool((context) => engineTools(server, schemas, names, context.sessionId, logs), { names });
  }
}
