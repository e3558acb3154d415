/**
 * The engine's own tools (LCM's `lcm_grep`, `lcm_describe`, `lcm_expand` ...) as
 * gateway tools: the schemas come from the server's handshake (`info.tools`), a
 * call runs in the engine of the calling session (`callTool`).
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

import type { AnyAgentTool } from "openclaw/plugin-sdk/plugin-entry";

import { toJson } from "./engine.js";
import { isObject, type BridgeServer, type Json, type Logs } from "./rpc.js";

type ToolSchema = { name: string; description: string; parameters: AnyAgentTool["parameters"] };

/** The longest the gateway waits, once per process, for the probe of the engine's tools. */
const PROBE_TIMEOUT_MS = 60_000;

function schemasOf(tools: Json | undefined): ToolSchema[] {
  if (!Array.isArray(tools)) return [];
  const out: ToolSchema[] = [];
  for (const tool of tools) {
    if (!isObject(tool) || typeof tool.name !== "string" || !isObject(tool.parameters)) continue;
    const description = typeof tool.description === "string" ? tool.description : tool.name;
    // A JSON Schema object, as the gateway's TypeBox schemas are at run time.
    out.push({ name: tool.name, description, parameters: tool.parameters as unknown as AnyAgentTool["parameters"] });
  }
  return out;
}

/**
 * The engine's tool schemas, known synchronously: the gateway builds a run's tools
 * before it asks for the context engine, so before our handshake; the first time,
 * a probe (probe.ts) does the handshake in a child process and we wait for it.
 */
export class ToolSchemas {
  private probed: ToolSchema[] | undefined;

  constructor(
    private readonly server: BridgeServer,
    private readonly config: Record<string, unknown>,
    private readonly callTimeoutMs: number,
    private readonly logs: Logs,
  ) {}

  get(): ToolSchema[] {
    const known = this.server.knownInfo;
    if (known !== undefined) return schemasOf(known.tools);
    if (this.probed === undefined) this.probed = this.probe();
    return this.probed;
  }

  private probe(): ToolSchema[] {
    const script = fileURLToPath(new URL("./probe.js", import.meta.url));
    try {
      const out = execFileSync(process.execPath, [script, JSON.stringify(this.config)], {
        encoding: "utf8",
        timeout: Math.min(this.callTimeoutMs, PROBE_TIMEOUT_MS),
        stdio: ["ignore", "pipe", "pipe"],
      });
      return schemasOf(JSON.parse(out) as Json);
    } catch (error) {
      this.logs.warn(`could not read the engine's tools: ${String(error)}; none are offered`);
      return [];
    }
  }
}

/** The engine's tools for one session; none without a session. */
export function engineTools(
  server: BridgeServer,
  schemas: ToolSchemas,
  declared: readonly string[],
  sessionId: string | undefined,
  logs: Logs,
): AnyAgentTool[] | null {
  if (sessionId === undefined) return null;
  const tools: AnyAgentTool[] = [];
  for (const schema of schemas.get()) {
    if (!declared.includes(schema.name)) {
      logs.log(`engine tool ${schema.name} is not in openclaw.plugin.json contracts.tools: not offered`);
      continue;
    }
    tools.push({
      name: schema.name,
      label: schema.name,
      description: schema.description,
      parameters: schema.parameters,
      // Offered to the model as it is, not behind the gateway's tool-search catalog.
      catalogMode: "direct-only",
      async execute(_toolCallId, params) {
        const args = toJson(params);
        const result = await server.call("callTool", {
          sessionId,
          name: schema.name,
          arguments: isObject(args) ? args : {},
        });
        const text = isObject(result) && typeof result.text === "string" ? result.text : JSON.stringify(result);
        return { content: [{ type: "text", text }], details: { engineTool: schema.name } };
      },
    });
  }
  return tools.length > 0 ? tools : null;
}
