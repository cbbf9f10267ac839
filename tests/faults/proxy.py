#!/usr/bin/python3
"""TCP proxy that can partition one client from the server (tests/faults, docs/faults.md).

    proxy.py --target 127.0.0.1:16379 --count 4 --control DIR/blackhole [--listen H1,H2,...]

Listens on --count ports chosen by the kernel (printed as "ports P1,P2,..."), each forwarding to
the target; port i listens on 127.0.0.1, or on Hi with --listen (the host side of worker i's veth
pair, when the partition is an nft drop in the worker's network namespace). Ports listed (one per line) in the control file are
partitioned: nothing is read from or written to either side while listed, so bytes stay in the
kernel buffers and arrive after the partition heals, like TCP retransmissions; connections made
during the partition are accepted but stay silent. The control file is polled every 20 ms.
"""

import argparse
import asyncio
import os
import signal
import socket


class Partition:
    def __init__(self, control):
        self.control = control
        self.blocked = set()
        self.healed = {}

    def event(self, port):
        return self.healed.setdefault(port, asyncio.Event())

    async def wait_open(self, port):
        while port in self.blocked:
            await self.event(port).wait()

    async def poll(self):
        while True:
            try:
                with open(self.control) as f:
                    now = {int(x) for x in f.read().split()}
            except (FileNotFoundError, ValueError):
                now = set()
            for port in self.blocked - now:
                self.event(port).set()
            for port in now - self.blocked:
                self.healed[port] = asyncio.Event()
            self.blocked = now
            await asyncio.sleep(0.02)


async def pump(reader, writer, port, part):
    try:
        while True:
            await part.wait_open(port)
            data = await reader.read(65536)
            if not data:
                break
            await part.wait_open(port)
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            writer.close()
        except (ConnectionError, OSError):
            pass


async def serve(sock, port, host, tport, part):
    async def handle(creader, cwriter):
        try:
            sreader, swriter = await asyncio.open_connection(host, tport)
        except OSError:
            cwriter.close()
            return
        await asyncio.gather(pump(creader, swriter, port, part),
                             pump(sreader, cwriter, port, part))

    return await asyncio.start_server(handle, sock=sock)


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--control", required=True)
    ap.add_argument("--listen", default="")
    args = ap.parse_args()
    hosts = args.listen.split(",") if args.listen else ["127.0.0.1"] * args.count
    host, tport = args.target.rsplit(":", 1)
    part = Partition(args.control)
    socks = []
    for i in range(args.count):
        s = socket.socket()
        s.bind((hosts[i], 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    servers = []
    for s, p in zip(socks, ports):
        servers.append(await serve(s, p, host, int(tport), part))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    poller = asyncio.ensure_future(part.poll())
    print("ports " + ",".join(map(str, ports)), flush=True)
    await stop.wait()
    poller.cancel()
    for s in servers:
        s.close()
    os._exit(0)


if __name__ == "__main__":
    asyncio.run(main())
