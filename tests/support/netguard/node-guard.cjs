// Preloaded into every node process a framework test starts (NODE_OPTIONS=--require).
// Refuses connections and DNS lookups outside 127.0.0.0/8, ::1 and localhost, and
// records each attempt in $CTXENGINE_NETGUARD_LOG so the test fails even when the
// driven program swallows the error. Unix sockets and pipes pass.
"use strict";
const fs = require("node:fs");
const net = require("node:net");
const dns = require("node:dns");

const LOG = process.env.CTXENGINE_NETGUARD_LOG || "";

function isLoopback(host) {
  if (host === undefined || host === null || host === "" || host === "localhost") return true;
  const bare = String(host).replace(/^\[|\]$/g, "").split("%")[0];
  if (bare === "::1" || bare === "0:0:0:0:0:0:0:1") return true;
  if (/^127\.\d+\.\d+\.\d+$/.test(bare)) return true;
  if (/^::ffff:127\.\d+\.\d+\.\d+$/i.test(bare)) return true;
  return false;
}

function record(what) {
  if (LOG) fs.appendFileSync(LOG, `node pid ${process.pid} tried ${what}\n`);
  const error = new Error(`netguard: ${what} refused (tests stay on 127.0.0.1)`);
  error.code = "ECONNREFUSED";
  return error;
}

function target(args) {
  const first = args[0];
  if (Array.isArray(first)) return target(first);
  if (first !== null && typeof first === "object") {
    if (first.path) return null;
    return { host: first.host || "localhost", port: first.port };
  }
  if (typeof first === "string" && !/^\d+$/.test(first)) return null; // a pipe path
  return { host: typeof args[1] === "string" ? args[1] : "localhost", port: first };
}

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function guardedConnect(...args) {
  const where = target(args);
  if (where && !isLoopback(where.host)) {
    const error = record(`a connection to ${where.host}:${where.port}`);
    process.nextTick(() => this.destroy(error));
    return this;
  }
  return connect.apply(this, args);
};

function guardLookup(original) {
  return function guardedLookup(hostname, ...rest) {
    if (!isLoopback(hostname)) {
      const error = record(`a DNS lookup of ${hostname}`);
      const callback = rest[rest.length - 1];
      if (typeof callback === "function") {
        process.nextTick(() => callback(error));
        return undefined;
      }
      throw error;
    }
    return original.call(this, hostname, ...rest);
  };
}
dns.lookup = guardLookup(dns.lookup);
const promisesLookup = dns.promises.lookup;
dns.promises.lookup = async function guardedPromisesLookup(hostname, ...rest) {
  if (!isLoopback(hostname)) throw record(`a DNS lookup of ${hostname}`);
  return promisesLookup.call(this, hostname, ...rest);
};
