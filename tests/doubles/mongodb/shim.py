#!/usr/bin/python3
"""A MongoDB stand-in for tests: mongomock (Debian python3-mongomock) behind an OP_MSG wire shim.

Speaks enough of the MongoDB wire protocol for libmongoc 1.23: OP_QUERY hello/isMaster during the
handshake (answered with OP_REPLY) and OP_MSG for every command. Commands are executed by
commands.py against one in-memory mongomock client, one command at a time (a global lock). See
FIDELITY.md for what is and is not implemented, with the reference for each behaviour.

Usage: /usr/bin/python3 shim.py --port 17017 [--host 127.0.0.1]
Run it with Debian's /usr/bin/python3: python3-mongomock and python3-bson live there.
"""

import argparse
import signal
import socket
import socketserver
import struct
import sys
import threading

import bson
from bson.codec_options import CodecOptions

import commands

OP_REPLY = 1
OP_QUERY = 2004
OP_COMPRESSED = 2012
OP_MSG = 2013
HEADER = struct.Struct("<iiii")  # messageLength, requestID, responseTo, opCode
MAX_MESSAGE = 48000000  # maxMessageSizeBytes advertised in hello
# Naive UTC datetimes, as mongomock stores them (python3-bson 3.11's default, stated explicitly).
CODEC = CodecOptions(tz_aware=False)

FLAG_CHECKSUM = 1 << 0
FLAG_MORE_TO_COME = 1 << 1
FLAG_EXHAUST_ALLOWED = 1 << 16
KNOWN_FLAGS = FLAG_CHECKSUM | FLAG_MORE_TO_COME | FLAG_EXHAUST_ALLOWED


class ProtocolError(Exception):
    """A malformed message: the connection is closed, as a server does."""


def read_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def cstring(data, pos):
    end = data.index(b"\x00", pos)
    return data[pos:end].decode("utf-8"), end + 1


def parse_op_msg(body):
    """OP_MSG: flagBits, sections (kind 0 body, kind 1 document sequences), optional CRC-32C."""
    (flags,) = struct.unpack_from("<I", body, 0)
    if flags & 0xFFFF & ~KNOWN_FLAGS:
        raise ProtocolError("unknown required OP_MSG flag bits 0x%x" % flags)
    end = len(body) - (4 if flags & FLAG_CHECKSUM else 0)  # the checksum is not verified
    pos, command, sequences = 4, None, {}
    while pos < end:
        kind = body[pos]
        pos += 1
        if kind == 0:
            (size,) = struct.unpack_from("<i", body, pos)
            if command is not None:
                raise ProtocolError("more than one kind 0 section")
            command = bson.decode(body[pos:pos + size], codec_options=CODEC)
            pos += size
        elif kind == 1:
            (size,) = struct.unpack_from("<i", body, pos)
            ident, docs_at = cstring(body, pos + 4)
            sequences[ident] = bson.decode_all(body[docs_at:pos + size], CODEC)
            pos += size
        else:
            raise ProtocolError("unknown OP_MSG section kind %d" % kind)
    if command is None:
        raise ProtocolError("OP_MSG without a kind 0 section")
    for ident, docs in sequences.items():  # document sequences become arrays of the body
        command[ident] = docs
    return flags, command


def parse_op_query(body):
    """OP_QUERY on <db>.$cmd: flags, fullCollectionName, skip, return, query document."""
    name, pos = cstring(body, 4)
    pos += 8  # numberToSkip, numberToReturn
    (size,) = struct.unpack_from("<i", body, pos)
    query = bson.decode(body[pos:pos + size], codec_options=CODEC)
    if "$query" in query:  # wrapped form with $readPreference
        query = query["$query"]
    if not name.endswith(".$cmd"):
        raise ProtocolError("OP_QUERY on %r: only commands on <db>.$cmd are supported" % name)
    query.setdefault("$db", name[:-len(".$cmd")])
    return query


def frame(request_id, op_code, payload):
    return HEADER.pack(16 + len(payload), commands.next_id(), request_id, op_code) + payload


class Connection(socketserver.BaseRequestHandler):
    def handle(self):
        sock = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn_id = commands.next_id()
        try:
            while self.serve_one(sock, conn_id):
                pass
        except ConnectionError:
            pass
        except Exception as e:  # malformed input of any kind: log it and close, as a server does
            print("shim: closing connection %d: %s: %s" % (conn_id, type(e).__name__, e),
                  file=sys.stderr)

    def serve_one(self, sock, conn_id):
        header = read_exact(sock, 16)
        if header is None:
            return False
        length, request_id, _, op_code = HEADER.unpack(header)
        if length < 16 or length > MAX_MESSAGE:
            raise ProtocolError("message length %d out of range" % length)
        body = read_exact(sock, length - 16)
        if body is None:
            return False
        if op_code == OP_QUERY:
            reply = commands.run(parse_op_query(body), conn_id)
            if reply is commands.CLOSE:
                return False
            doc = bson.encode(reply)
            sock.sendall(frame(request_id, OP_REPLY, struct.pack("<iqii", 0, 0, 0, 1) + doc))
            return True
        if op_code != OP_MSG:  # OP_COMPRESSED is never negotiated (no compression in hello)
            raise ProtocolError("unsupported opCode %d" % op_code)
        flags, command = parse_op_msg(body)
        reply = commands.run(command, conn_id)
        if reply is commands.CLOSE:
            return False
        if not flags & FLAG_MORE_TO_COME:  # moreToCome: the client expects no reply
            sock.sendall(frame(request_id, OP_MSG, struct.pack("<I", 0) + b"\x00" +
                               bson.encode(reply)))
        return True


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=17017)
    args = parser.parse_args()
    server = Server((args.host, args.port), Connection)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    print("shim: mongomock %s behind OP_MSG on %s:%d" % (commands.MONGOMOCK_VERSION, args.host,
                                                          args.port), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
