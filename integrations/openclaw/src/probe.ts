/**
 * `node dist/probe.js CONFIG_JSON`: prints the engine's tools (`info.tools` of the
 * handshake) and exits. The gateway asks plugins for their tools synchronously, and
 * before any context-engine call has opened our server; the plugin runs this once
 * per gateway process (tools.ts) when it has no handshake of its own yet.
 */
import { opener, readConfig } from "./config.js";
import { BridgeServer, type Logs } from "./rpc.js";

const logs: Logs = { log: () => undefined, warn: (message) => process.stderr.write(`${message}\n`) };
const raw: unknown = JSON.parse(process.argv[2] ?? "{}");
const config = readConfig(typeof raw === "object" && raw !== null ? { ...raw } : {});
const { open, again } = opener(config, logs);
const server = new BridgeServer(open, again, logs);
try {
  const info = await server.engineInfo();
  process.stdout.write(JSON.stringify(info.tools ?? []));
} finally {
  server.close();
}
