// Command go-peers measures one row of bench/go_peers.sh: uncontended acquire + release, one
// goroutine, one lock, for leader.dev/leader and for the Go locks Debian packages (etcd's
// clientv3/concurrency Mutex, go-zookeeper's Lock), plus each protocol's raw round trips, so
// that library cost and protocol cost separate.
//
//	go-peers <row> <target> <seconds> <name>
//
// prints "<row> n= mean_us= p50_us= p99_us=". Built in GOPATH mode against Debian's
// /usr/share/gocode (bench/go_peers.sh): the go/ module itself keeps no dependency.
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/samuel/go-zookeeper/zk"
	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
	"leader.dev/leader"
)

const warmup = 20

// measure runs op for warm-up, then for the given time, and prints the row's figures.
func measure(row string, d time.Duration, op func() error) {
	for i := 0; i < warmup; i++ {
		must(op())
	}
	var lat []time.Duration
	start := time.Now()
	for time.Since(start) < d {
		t := time.Now()
		must(op())
		lat = append(lat, time.Since(t))
	}
	var sum time.Duration
	for _, l := range lat {
		sum += l
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	us := func(x time.Duration) float64 { return float64(x) / float64(time.Microsecond) }
	fmt.Printf("%s n=%d mean_us=%.1f p50_us=%.1f p99_us=%.1f\n", row, len(lat),
		us(sum)/float64(len(lat)), us(lat[len(lat)/2]), us(lat[len(lat)*99/100]))
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

// ours: RunIfLeader with a no-op action, or Acquire + Release, on any store URI.
func ours(row, uri string, d time.Duration, lock string) {
	store, err := leader.Open(uri)
	must(err)
	defer store.Close()
	e, err := leader.NewElector(store, leader.Options{NoWait: true, Lease: 10 * time.Second})
	must(err)
	defer e.Close()
	ctx := context.Background()
	if row == "ours-run" {
		measure(row, d, func() error {
			out, err := e.RunIfLeader(ctx, lock, func(*leader.Context) error { return nil })
			if err == nil && !out.Ran {
				err = fmt.Errorf("not elected on an uncontended lock")
			}
			return err
		})
		return
	}
	measure(row, d, func() error {
		l, err := e.Acquire(ctx, lock)
		if err != nil {
			return err
		}
		return l.Release(false)
	})
}

func etcdClient(endpoint string) *clientv3.Client {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	must(err)
	return c
}

// etcdMutex: concurrency.Mutex Lock + Unlock on one Session (one Txn, one Delete).
func etcdMutex(row, endpoint string, d time.Duration, prefix string) {
	c := etcdClient(endpoint)
	defer c.Close()
	s, err := concurrency.NewSession(c, concurrency.WithTTL(10))
	must(err)
	defer s.Close()
	m := concurrency.NewMutex(s, prefix)
	ctx := context.Background()
	measure(row, d, func() error {
		if err := m.Lock(ctx); err != nil {
			return err
		}
		return m.Unlock(ctx)
	})
}

func prefixEnd(p string) string {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return "\x00"
}

// etcdGrpcTxns: the two Txns of our etcd store's uncontended acquire + release (put on a
// session lease if no key is under the prefix; delete if the key's create revision is the
// token), raw over clientv3's gRPC.
func etcdGrpcTxns(row, endpoint string, d time.Duration, prefix string) {
	c := etcdClient(endpoint)
	defer c.Close()
	ctx := context.Background()
	g, err := c.Grant(ctx, 30)
	must(err)
	defer c.Revoke(ctx, g.ID)
	pfx := prefix + "/"
	key := pfx + strconv.FormatInt(int64(g.ID), 16)
	measure(row, d, func() error {
		r, err := c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(pfx), "=", 0).WithRange(prefixEnd(pfx))).
			Then(clientv3.OpPut(key, `{"owner":"x"}`, clientv3.WithLease(g.ID))).Commit()
		if err != nil {
			return err
		}
		if !r.Succeeded {
			return fmt.Errorf("acquire Txn failed")
		}
		_, err = c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", r.Header.Revision)).
			Then(clientv3.OpDelete(key)).Commit()
		return err
	})
}

// etcdGrpcRange: one unary Range of one key over gRPC (the round trip, no raft write).
func etcdGrpcRange(row, endpoint string, d time.Duration, prefix string) {
	c := etcdClient(endpoint)
	defer c.Close()
	ctx := context.Background()
	measure(row, d, func() error {
		_, err := c.Get(ctx, prefix+"/range")
		return err
	})
}

// gateway posts JSON to the etcd v3 gateway over HTTP/1.1 keep-alive, as our etcd store does.
type gateway struct {
	base string
	c    *http.Client
}

func (g gateway) call(path string, req, reply any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	r, err := g.c.Post(g.base+path, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer r.Body.Close()
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	if r.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", path, r.Status, data)
	}
	if reply == nil {
		return nil
	}
	return json.Unmarshal(data, reply)
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// etcdGatewayTxns: the same two Txns as etcdGrpcTxns, as JSON through the gateway (Go net/http).
func etcdGatewayTxns(row, endpoint string, d time.Duration, prefix string) {
	g := gateway{base: "http://" + endpoint, c: &http.Client{}}
	var grant struct{ ID string }
	must(g.call("/v3/lease/grant", map[string]any{"TTL": "30"}, &grant))
	defer g.call("/v3/lease/revoke", map[string]any{"ID": grant.ID}, nil)
	pfx := prefix + "/"
	id, err := strconv.ParseInt(grant.ID, 10, 64)
	must(err)
	key := pfx + strconv.FormatInt(id, 16)
	type txnReply struct {
		Header    struct{ Revision string }
		Succeeded bool
	}
	measure(row, d, func() error {
		var r txnReply
		err := g.call("/v3/kv/txn", map[string]any{
			"compare": []any{map[string]any{"target": "CREATE", "result": "EQUAL", "key": b64(pfx),
				"range_end": b64(prefixEnd(pfx)), "create_revision": "0"}},
			"success": []any{map[string]any{"request_put": map[string]any{
				"key": b64(key), "value": b64(`{"owner":"x"}`), "lease": grant.ID}}},
		}, &r)
		if err != nil {
			return err
		}
		if !r.Succeeded {
			return fmt.Errorf("acquire Txn failed")
		}
		return g.call("/v3/kv/txn", map[string]any{
			"compare": []any{map[string]any{"target": "CREATE", "result": "EQUAL", "key": b64(key),
				"create_revision": r.Header.Revision}},
			"success": []any{map[string]any{"request_delete_range": map[string]any{"key": b64(key)}}},
		}, nil)
	})
}

// etcdGatewayRange: one Range of one key through the gateway (the round trip, no raft write).
func etcdGatewayRange(row, endpoint string, d time.Duration, prefix string) {
	g := gateway{base: "http://" + endpoint, c: &http.Client{}}
	measure(row, d, func() error {
		return g.call("/v3/kv/range", map[string]any{"key": b64(prefix + "/range")}, nil)
	})
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

func zkConnect(servers string) *zk.Conn {
	c, events, err := zk.Connect(strings.Split(servers, ","), 10*time.Second, zk.WithLogger(quiet{}))
	must(err)
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return c
			}
		case <-timeout:
			log.Fatalf("zookeeper %s: no session after 5 s", servers)
		}
	}
}

// zkLock: go-zookeeper's Lock + Unlock (create, get children, delete).
func zkLock(row, servers string, d time.Duration, path string) {
	c := zkConnect(servers)
	defer c.Close()
	l := zk.NewLock(c, path, zk.WorldACL(zk.PermAll))
	measure(row, d, func() error {
		if err := l.Lock(); err != nil {
			return err
		}
		return l.Unlock()
	})
}

// zkCreateDelete: go-zookeeper's raw ephemeral-sequential create + delete (two round trips).
func zkCreateDelete(row, servers string, d time.Duration, path string) {
	c := zkConnect(servers)
	defer c.Close()
	acl := zk.WorldACL(zk.PermAll)
	if _, err := c.Create(path, nil, 0, acl); err != nil && err != zk.ErrNodeExists {
		must(err)
	}
	measure(row, d, func() error {
		p, err := c.Create(path+"/n-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
		if err != nil {
			return err
		}
		return c.Delete(p, -1)
	})
}

// zkRemove deletes path and everything under it (the script's clean-up).
func zkRemove(c *zk.Conn, path string) {
	children, _, err := c.Children(path)
	if err == zk.ErrNoNode {
		return
	}
	must(err)
	for _, ch := range children {
		zkRemove(c, path+"/"+ch)
	}
	if err := c.Delete(path, -1); err != nil && err != zk.ErrNoNode {
		must(err)
	}
}

func main() {
	if len(os.Args) == 4 && os.Args[1] == "zk-remove" {
		c := zkConnect(os.Args[2])
		defer c.Close()
		zkRemove(c, os.Args[3])
		return
	}
	if len(os.Args) != 5 {
		log.Fatal("usage: go-peers <row> <target> <seconds> <name> | zk-remove <servers> <path>")
	}
	row, target, name := os.Args[1], os.Args[2], os.Args[4]
	secs, err := strconv.ParseFloat(os.Args[3], 64)
	must(err)
	d := time.Duration(secs * float64(time.Second))
	switch row {
	case "ours-run", "ours-acquire":
		ours(row, target, d, name)
	case "etcd-mutex":
		etcdMutex(row, target, d, name)
	case "etcd-grpc-txns":
		etcdGrpcTxns(row, target, d, name)
	case "etcd-gateway-txns":
		etcdGatewayTxns(row, target, d, name)
	case "etcd-grpc-range":
		etcdGrpcRange(row, target, d, name)
	case "etcd-gateway-range":
		etcdGatewayRange(row, target, d, name)
	case "zk-lock":
		zkLock(row, target, d, name)
	case "zk-create-delete":
		zkCreateDelete(row, target, d, name)
	case "zk-c-create-delete":
		zkCCreateDelete(row, target, d, name)
	default:
		log.Fatalf("unknown row %q", row)
	}
}
