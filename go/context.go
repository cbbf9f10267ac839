package leader

/*
#include <stdlib.h>
#include <leader/leader.h>
*/
import "C"

import (
	"context"
	"os"
	"runtime"
	"syscall"
	"time"
	"unsafe"
)

// Context is what the work sees of its lease, valid while the work runs. Its getters and Done
// may be used from goroutines the work starts, until the work returns.
type Context struct {
	c       *C.leader_context
	done    chan struct{}
	file    *os.File      // a duplicate of the lease's stop descriptor, read by the watcher
	watcher chan struct{} // closed when the watcher ended
	release func()        // a lease's: stops watching the caller's context
}

// newContext wraps c, with a goroutine that closes Done when the stop descriptor becomes readable.
func newContext(c *C.leader_context) *Context {
	x := &Context{c: c, done: make(chan struct{})}
	fd := C.leader_context_stop_fd(c)
	if fd < 0 {
		return x // Stopped() still answers; Done never closes
	}
	dup, err := syscall.Dup(int(fd))
	if err != nil {
		return x
	}
	syscall.CloseOnExec(dup)
	if err := syscall.SetNonblock(dup, true); err != nil {
		syscall.Close(dup)
		return x
	}
	x.file = os.NewFile(uintptr(dup), "leader-stop") // non-blocking: read through the poller
	x.watcher = make(chan struct{})
	go func() {
		defer close(x.watcher)
		var buf [8]byte
		if _, err := x.file.Read(buf[:]); err == nil {
			close(x.done)
		}
	}()
	return x
}

// end stops the watcher (the lease is over).
func (x *Context) end() {
	if x.file != nil {
		x.file.Close()
		<-x.watcher
		x.file = nil
	}
}

// FencingToken strictly increases per lock: pass it to the resource so that it refuses stale
// writers.
func (x *Context) FencingToken() uint64 { return uint64(C.leader_context_fencing_token(x.c)) }

// Slot is the slot of a group lease; 0 for a single leader.
func (x *Context) Slot() int { return int(C.leader_context_slot(x.c)) }

// Lock is the lock's full name.
func (x *Context) Lock() string { return C.GoString(C.leader_context_lock(x.c)) }

// NodeID is this replica's node id.
func (x *Context) NodeID() string { return C.GoString(C.leader_context_node_id(x.c)) }

// Stopped is true once the work must stop: the lease was lost, is about to expire locally, or
// the caller's context ended.
func (x *Context) Stopped() bool { return bool(C.leader_context_stopped(x.c)) }

// Done is closed when the work must stop (as Stopped).
func (x *Context) Done() <-chan struct{} { return x.done }

// Remaining is the time until the lease must be assumed lost.
func (x *Context) Remaining() time.Duration {
	return time.Duration(C.leader_context_remaining_ms(x.c)) * time.Millisecond
}

// Extend renews the lease now to lease from now (later renewals ask for it too).
func (x *Context) Extend(lease time.Duration) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if s := C.leader_context_extend(x.c, C.int64_t(lease/time.Millisecond)); s != C.LEADER_OK {
		return lastError(s)
	}
	return nil
}

// WithStop derives from parent a context that is cancelled when the work must stop, for the
// work's own calls (a database query, an HTTP request). Call cancel before the work returns.
func (x *Context) WithStop(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		select {
		case <-x.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// ErrNotElected is Acquire's answer when another replica holds the lock.
var ErrNotElected = &Error{Status: StatusNotElected, Message: "another replica holds the lock"}

// Lease is a held lease; Release it when the work is done.
type Lease struct {
	p   *C.leader_lease
	ctx *Context
}

// Acquire acquires lock and returns the lease, or ErrNotElected when another replica holds it
// (after waiting Options.Wait), or ctx.Err() when ctx ended first. The lease's Context fires when
// ctx ends while it is held.
func (e *Elector) Acquire(ctx context.Context, lock string) (*Lease, error) {
	clock := C.CString(lock)
	defer C.free(unsafe.Pointer(clock))
	cancel, stopWatching := cancelOn(ctx)
	runtime.LockOSThread()
	var p *C.leader_lease
	s := C.leader_acquire(e.p, clock, cancel, &p)
	var err error
	if s != C.LEADER_OK {
		err = lastError(s)
	}
	runtime.UnlockOSThread()
	if s != C.LEADER_OK {
		stopWatching()
		switch {
		case s == C.LEADER_NOT_ELECTED:
			return nil, ErrNotElected
		case s == C.LEADER_CANCELLED && ctx.Err() != nil:
			return nil, ctx.Err()
		default:
			return nil, err
		}
	}
	// The source stays watched (ctx ending fires the lease's stop) until the release.
	l := &Lease{p: p, ctx: newContext(C.leader_lease_context(p))}
	l.ctx.release = stopWatching
	return l, nil
}

// Context is the lease's context.
func (l *Lease) Context() *Context { return l.ctx }

// Release releases the lease (failed marks the work as failed in the history). An error means
// the release call failed: the lease then expires on the server after its ttl. Idempotent.
func (l *Lease) Release(failed bool) error {
	if l.p == nil {
		return nil
	}
	l.ctx.end()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s := C.leader_lease_release(l.p, C.bool(failed))
	l.p = nil
	if l.ctx.release != nil {
		l.ctx.release()
	}
	if s != C.LEADER_OK {
		return lastError(s)
	}
	return nil
}
