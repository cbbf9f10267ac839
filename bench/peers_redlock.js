// Node peers of bench/peers.sh: npm redlock@4.2.0 over ioredis@6 (installed by bench/peers.sh into
// a private folder, NODE_PATH). Usage: node peers_redlock.js MODE SECONDS PORT NAME
//   redlock   redlock.lock(NAME, 30000) + lock.unlock() (one Redis server, retryCount 0)
//   ping      ioredis PING (the Node round trip)
//   raw       ioredis SET NAME token PX 30000 NX + DEL NAME
// Prints "<row> n=<ops> mean_us=<mean> p50_us=<median>" like the other peers.
const Redis = require("ioredis");
const Redlock = require("redlock");

async function timed(row, seconds, op) {
  const us = [];
  const end = process.hrtime.bigint() + BigInt(Math.round(seconds * 1e9));
  while (process.hrtime.bigint() < end || us.length < 20) {
    const t0 = process.hrtime.bigint();
    await op();
    us.push(Number(process.hrtime.bigint() - t0) / 1e3);
  }
  const mean = us.reduce((a, b) => a + b, 0) / us.length;
  us.sort((a, b) => a - b);
  console.log(`${row} n=${us.length} mean_us=${mean.toFixed(1)} p50_us=${us[us.length >> 1].toFixed(1)}`);
}

async function main() {
  const [mode, seconds, port, name] = process.argv.slice(2);
  const client = new Redis({ host: "127.0.0.1", port: Number(port) });
  if (mode === "redlock") {
    const redlock = new Redlock([client], { retryCount: 0, driftFactor: 0.01 });
    await timed("redlock", Number(seconds), async () => {
      const lock = await redlock.lock(name, 30000);
      await lock.unlock();
    });
  } else if (mode === "ping") {
    await timed("ioredis_ping", Number(seconds), () => client.ping());
  } else if (mode === "raw") {
    await timed("ioredis_set_nx_del", Number(seconds), async () => {
      if ((await client.set(name, "token", "PX", 30000, "NX")) !== "OK") throw new Error("SET NX refused");
      await client.del(name);
    });
  } else {
    throw new Error("unknown mode " + mode);
  }
  client.disconnect();
}

main().catch((e) => { console.error(e); process.exit(1); });
