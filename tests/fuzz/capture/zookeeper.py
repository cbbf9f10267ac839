# Real ZooKeeper node data and child names for the fuzz_zk_data seed corpus (kazoo, Debian python3).
import sys, os, json
from kazoo.client import KazooClient
out = sys.argv[1]
zk = KazooClient(hosts=os.environ.get('LEADER_CAPTURE_ZK', '127.0.0.1:12181')); zk.start(timeout=10)
def save(name, data):
    open(os.path.join(out, name), 'wb').write(data); print(name, data[:120])
base = '/fuzzcapture'
zk.delete(base, recursive=True) if zk.exists(base) else None
lock = zk.Lock(base + '/kazoo-lock', identifier='worker-7@10.0.0.5')
lock.acquire(timeout=5)
kids = zk.get_children(base + '/kazoo-lock')
save('kazoo-contender-data', zk.get(base + '/kazoo-lock/' + kids[0])[0])
owner = '694d7a1c2b3e4f5a6b7c8d9e0f1a2b3c'
zk.create(base + '/job/' + owner + '__lock__', json.dumps({"owner": owner, "node_id": "host-a:4242", "ttl_ms": 30000, "slot": 0}, separators=(',', ':')).encode(), ephemeral=True, sequence=True, makepath=True)
zk.create(base + '/job/fedcba9876543210fedcba9876543210__lock__', json.dumps({"owner": "fedcba9876543210fedcba9876543210", "node_id": "host-b:17", "ttl_ms": 20000, "slot": 0}, separators=(',', ':')).encode(), ephemeral=True, sequence=True)
jk = sorted(zk.get_children(base + '/job'))
save('lease-node-data', zk.get(base + '/job/' + jk[0])[0])
save('children-ours', '\n'.join(jk).encode())
save('children-kazoo-and-curator', '\n'.join(kids + ['_c_8a7b1c2d-3e4f-5a6b-7c8d-9e0f1a2b3c4d-lock-0000000003', 'fedcba9876543210__rlock__0000000009']).encode())
zk.create(base + '/grp/slot-1', json.dumps({"owner": owner, "node_id": "host-a:4242", "ttl_ms": 30000, "slot": 1}, separators=(',', ':')).encode(), ephemeral=True, makepath=True)
save('group-slot-data', zk.get(base + '/grp/slot-1')[0])
cand = {"node_id": "node-a", "registered_at_ms": 1764547200123, "successes": 3, "failures": 1, "ttl_ms": 10000, "metadata": {"zone": "eu-west-1"}, "last_completion_ms": None}
zk.create(base + '-candidates/g/node-a', json.dumps(cand, separators=(',', ':'), sort_keys=True).encode(), ephemeral=True, makepath=True)
save('candidate-data', zk.get(base + '-candidates/g/node-a')[0])
zk.create(base + '/curator/_c_8a7b-lock-', b'10.0.0.9', ephemeral=True, sequence=True, makepath=True)
save('curator-contender-data', zk.get(base + '/curator/' + zk.get_children(base + '/curator')[0])[0])
lock.release()
zk.delete(base, recursive=True); zk.delete(base + '-candidates', recursive=True)
zk.stop()
