package leader_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"leader.dev/leader"
)

// stores are the stores the tests run on: SQLite always, Redis and PostgreSQL when their URIs are
// given (LEADER_TEST_REDIS, LEADER_TEST_POSTGRES: the README's test command sets them).
func stores(t *testing.T) map[string]string {
	out := map[string]string{"sqlite": "sqlite://" + filepath.Join(t.TempDir(), "go.db")}
	for name, env := range map[string]string{"redis": "LEADER_TEST_REDIS", "postgres": "LEADER_TEST_POSTGRES"} {
		if uri := os.Getenv(env); uri != "" {
			out[name] = uri
		}
	}
	return out
}

func elector(t *testing.T, uri string, o leader.Options) *leader.Elector {
	t.Helper()
	store, err := leader.Open(uri)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	e, err := leader.NewElector(store, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

func lockName(t *testing.T) string {
	return "go-" + strings.ReplaceAll(t.Name(), "/", "-") + "-" + time.Now().Format("150405.000000")
}

func TestRunIfLeader(t *testing.T) {
	for name, uri := range stores(t) {
		t.Run(name, func(t *testing.T) {
			e := elector(t, uri, leader.Options{NoWait: true, Lease: 5 * time.Second})
			lock := lockName(t)
			var seen uint64
			out, err := e.RunIfLeader(context.Background(), lock, func(ctx *leader.Context) error {
				seen = ctx.FencingToken()
				if ctx.Lock() != lock || ctx.Stopped() || ctx.Remaining() <= time.Second {
					t.Errorf("context: lock %q stopped %v remaining %v", ctx.Lock(), ctx.Stopped(), ctx.Remaining())
				}
				return nil
			})
			if err != nil || !out.Ran || out.FencingToken == 0 || out.FencingToken != seen {
				t.Fatalf("first run: %+v %v (token seen %d)", out, err, seen)
			}
			again, err := e.RunIfLeader(context.Background(), lock, func(*leader.Context) error { return nil })
			if err != nil || !again.Ran || again.FencingToken <= out.FencingToken {
				t.Fatalf("second run: %+v %v after token %d", again, err, out.FencingToken)
			}
			boom := errors.New("boom")
			failed, err := e.RunIfLeader(context.Background(), lock, func(*leader.Context) error { return boom })
			if !errors.Is(err, boom) || !failed.Ran {
				t.Fatalf("failing action: %+v %v", failed, err)
			}
		})
	}
}

func TestAnotherReplicaHoldsTheLock(t *testing.T) {
	for name, uri := range stores(t) {
		t.Run(name, func(t *testing.T) {
			holder := elector(t, uri, leader.Options{NoWait: true, Lease: 5 * time.Second})
			other := elector(t, uri, leader.Options{NoWait: true, Lease: 5 * time.Second})
			lock := lockName(t)
			lease, err := holder.Acquire(context.Background(), lock)
			if err != nil {
				t.Fatal(err)
			}
			ran := false
			out, err := other.RunIfLeader(context.Background(), lock, func(*leader.Context) error { ran = true; return nil })
			if err != nil || out.Ran || ran {
				t.Fatalf("ran while another held the lock: %+v %v", out, err)
			}
			if _, err := other.Acquire(context.Background(), lock); !errors.Is(err, leader.ErrNotElected) {
				t.Fatalf("Acquire of a held lock: %v", err)
			}
			if err := lease.Release(false); err != nil {
				t.Fatal(err)
			}
			second, err := other.Acquire(context.Background(), lock)
			if err != nil || second.Context().FencingToken() <= 0 {
				t.Fatalf("after the release: %v", err)
			}
			_ = second.Release(false)
		})
	}
}

func TestCancellingTheContextEndsTheWait(t *testing.T) {
	uri := stores(t)["sqlite"]
	holder := elector(t, uri, leader.Options{NoWait: true, Lease: 10 * time.Second})
	waiter := elector(t, uri, leader.Options{Wait: 10 * time.Second, Lease: 10 * time.Second})
	lock := lockName(t)
	lease, err := holder.Acquire(context.Background(), lock)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release(false)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	out, err := waiter.RunIfLeader(ctx, lock, func(*leader.Context) error { return nil })
	if !errors.Is(err, context.DeadlineExceeded) || out.Ran {
		t.Fatalf("cancelled wait: %+v %v", out, err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("the wait went on %v after the context ended", waited)
	}
}

func TestDoneFiresWhenTheLeaseRunsOut(t *testing.T) {
	// No renewal: the local deadline passes while the work runs, and Done fires before it.
	e := elector(t, stores(t)["sqlite"], leader.Options{NoWait: true, Lease: 800 * time.Millisecond})
	var stoppedAfter time.Duration
	out, err := e.RunIfLeader(context.Background(), lockName(t), func(ctx *leader.Context) error {
		start := time.Now()
		select {
		case <-ctx.Done():
			stoppedAfter = time.Since(start)
			if !ctx.Stopped() {
				t.Error("Done closed but Stopped is false")
			}
		case <-time.After(5 * time.Second):
			t.Error("Done never fired")
		}
		return nil
	})
	if err != nil || !out.Ran {
		t.Fatalf("%+v %v", out, err)
	}
	if stoppedAfter >= 800*time.Millisecond {
		t.Fatalf("Done fired %v into an 800 ms lease: not before it ran out", stoppedAfter)
	}
}

func TestCancellingTheContextStopsTheWork(t *testing.T) {
	e := elector(t, stores(t)["sqlite"], leader.Options{NoWait: true, Lease: 10 * time.Second, AutoExtend: true})
	ctx, cancel := context.WithCancel(context.Background())
	_, err := e.RunIfLeader(ctx, lockName(t), func(lctx *leader.Context) error {
		cancel()
		select {
		case <-lctx.Done():
			return nil
		case <-time.After(5 * time.Second):
			return errors.New("Done did not fire after the caller's context was cancelled")
		}
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

func TestGroupOfTwo(t *testing.T) {
	e := elector(t, stores(t)["sqlite"], leader.Options{NoWait: true, Lease: 5 * time.Second, MaxLeaders: 2})
	lock := lockName(t)
	a, err := e.Acquire(context.Background(), lock)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release(false)
	b, err := e.Acquire(context.Background(), lock)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release(false)
	if a.Context().Slot() == b.Context().Slot() {
		t.Fatalf("two leases of a group share slot %d", a.Context().Slot())
	}
	if _, err := e.Acquire(context.Background(), lock); !errors.Is(err, leader.ErrNotElected) {
		t.Fatalf("a third lease of a group of two: %v", err)
	}
}

func TestCampaign(t *testing.T) {
	e := elector(t, stores(t)["sqlite"], leader.Options{NoWait: true, Lease: 3 * time.Second, AutoExtend: true})
	var started, stopped, changes atomic.Int32
	c, err := e.StartCampaign(lockName(t), leader.CampaignCallbacks{
		OnStartedLeading: func(ctx *leader.Context) { started.Add(1) },
		OnStoppedLeading: func() { stopped.Add(1) },
		OnNewLeader:      func([]leader.Holder) { changes.Add(1) },
	}, leader.CampaignOptions{Retry: 50 * time.Millisecond, ResignHoldOff: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return c.IsLeader() && started.Load() == 1 })
	if !c.Resign() {
		t.Fatal("Resign while leading returned false")
	}
	waitFor(t, func() bool { return started.Load() == 2 })
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if stopped.Load() != 2 || changes.Load() == 0 {
		t.Fatalf("terms stopped %d, leader changes seen %d", stopped.Load(), changes.Load())
	}
	plain := elector(t, stores(t)["sqlite"], leader.Options{NoWait: true})
	if _, err := plain.StartCampaign("x", leader.CampaignCallbacks{}, leader.CampaignOptions{}); !errors.Is(err, leader.ErrInvalidArgument) {
		t.Fatalf("a campaign without AutoExtend: %v", err)
	}
}

func TestErrors(t *testing.T) {
	_, err := leader.Open("nosuch://x")
	if !errors.Is(err, leader.ErrInvalidArgument) || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("bad scheme: %v", err)
	}
	e := elector(t, stores(t)["sqlite"], leader.Options{NoWait: true})
	if _, err := e.RunIfLeader(context.Background(), "bad name!", func(*leader.Context) error { return nil }); !errors.Is(err, leader.ErrInvalidArgument) {
		t.Fatalf("bad lock name: %v", err)
	}
	if leader.Version() == "" {
		t.Fatal("no version")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("timed out")
}
