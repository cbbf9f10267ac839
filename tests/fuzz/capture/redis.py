import os, re, socket, sys
# Real Redis replies to the store's own Lua scripts for the fuzz_resp seed corpus.
src = open(os.path.join(os.path.dirname(__file__), '../../../src/stores/redis/scripts.cpp')).read()
def lua(name):
    m = re.search(r'constexpr const char\* %s = R"lua\((.*?)\)lua";' % name, src, re.S)
    return m.group(1)
pre = lua('kPrelude')
scripts = {'acquire': pre + lua('kAcquire'), 'renew': pre + lua('kRenew'), 'release': pre + lua('kRelease'),
           'inspect': lua('kInspect'), 'put': lua('kPutCandidate'), 'list': pre + lua('kListCandidates')}
s = socket.create_connection(('127.0.0.1', int(os.environ.get('LEADER_CAPTURE_REDIS_PORT', '16379'))))
def cmd(*args):
    out = b'*%d\r\n' % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b'$%d\r\n%s\r\n' % (len(a), a)
    s.sendall(out)
    import time; time.sleep(0.05)
    s.settimeout(0.3)
    data = b''
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk: break
            data += chunk
    except socket.timeout:
        pass
    return data
outdir = sys.argv[1]
def save(name, data):
    open(os.path.join(outdir, name), 'wb').write(data); print(name, data[:80])
P = 'fuzzcapture:'
owner = '0123456789abcdef0123456789abcdef'
other = 'fedcba9876543210fedcba9876543210'
def ev(name, keys, args):
    return cmd('EVAL', scripts[name], len(keys), *keys, *args)
cmd('DEL', P+'job', '{'+P+'job}:fence', '{'+P+'job}:slots', '{'+P+'grp}:slot:1', P+'grp', '{'+P+'grp}:fence', '{'+P+'grp}:slots', '{'+P+'g}:candidates')
save('acquire-granted', ev('acquire', [P+'job', '{'+P+'job}:fence', '{'+P+'job}:slots'], [owner, 'host-a:4242', 30000, 1]))
save('acquire-contended-nil', ev('acquire', [P+'job', '{'+P+'job}:fence', '{'+P+'job}:slots'], [other, 'host-b:17', 30000, 1]))
save('acquire-again-same-owner', ev('acquire', [P+'job', '{'+P+'job}:fence', '{'+P+'job}:slots'], [owner, 'host-a:4242', 30000, 1]))
save('renew-owned', ev('renew', [P+'job'], [owner, 30000]))
save('renew-lost', ev('renew', [P+'job'], [other, 30000]))
save('inspect-one-holder', ev('inspect', [P+'job'], []))
gk = [P+'grp', '{'+P+'grp}:slot:1', '{'+P+'grp}:fence', '{'+P+'grp}:slots']
save('acquire-group-slot0', ev('acquire', gk, [owner, 'host-a:1', 30000, 2]))
save('acquire-group-slot1', ev('acquire', gk, [other, 'host-b:2', 30000, 2]))
save('get-slot-count', cmd('GET', '{'+P+'grp}:slots'))
save('get-missing-nil', cmd('GET', '{'+P+'nothing}:slots'))
save('inspect-group-two-slots', ev('inspect', [P+'grp', '{'+P+'grp}:slot:1'], []))
save('release-owned', ev('release', [P+'job'], [owner, 0]))
save('release-keep', ev('release', [P+'grp'], [owner, 5000]))
save('inspect-free', ev('inspect', [P+'job'], []))
save('put-candidate', ev('put', ['{'+P+'g}:candidates'], ['node-a', 10000, '3 1 1764547200000000 zone=eu-west%201&rack=r7']))
ev('put', ['{'+P+'g}:candidates'], ['node-b', 10000, '0 0 - '])
save('list-candidates', ev('list', ['{'+P+'g}:candidates'], []))
save('error-noscript', cmd('EVALSHA', '0'*40, 0))
save('error-wrongtype', cmd('HGET', P+'grp', 'x'))
cmd('SET', P+'plain', 'redis-py-token-1234', 'PX', 30000)
save('inspect-foreign-value', ev('inspect', [P+'plain'], []))
# three replies in one read, as exchange() sees them
s.sendall(b'*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$' + str(len(P+'plain')).encode() + b'\r\n' + (P+'plain').encode() + b'\r\n*2\r\n$4\r\nPTTL\r\n$' + str(len(P+'plain')).encode() + b'\r\n' + (P+'plain').encode() + b'\r\n')
import time; time.sleep(0.1); save('pipelined-three', s.recv(65536))
cmd('DEL', P+'job', '{'+P+'job}:fence', '{'+P+'job}:slots', '{'+P+'grp}:slot:1', P+'grp', '{'+P+'grp}:fence', '{'+P+'grp}:slots', '{'+P+'g}:candidates', P+'plain')
