// Package leader elects one replica (or N) to run a piece of work, on the store the team already
// runs: SQLite, Redis, PostgreSQL, MariaDB, etcd, ZooKeeper, DynamoDB, ... (any URI leader::open
// accepts). It is a thin cgo layer over the C interface of libleader.so.0 (include/leader/leader.h):
// the leases, fencing tokens, renewals and the stop signal are the C++ engine's.
//
// Build: cgo finds leader/leader.h and -lleader through CGO_CFLAGS / CGO_LDFLAGS or pkg-config
// (leader-c). No Go module is downloaded: the package has no dependencies.
package leader

/*
#cgo LDFLAGS: -lleader
#include <stdlib.h>
#include <leader/leader.h>

extern int goLeaderAction(leader_context *ctx, void *user);
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/cgo"
	"time"
	"unsafe"
)

// Status is what a call of the C interface returned (leader_status).
type Status int

// The statuses of leader.h; the store codes mirror leader::ErrorCode.
const (
	StatusOK                 Status = C.LEADER_OK
	StatusNotElected         Status = C.LEADER_NOT_ELECTED
	StatusCancelled          Status = C.LEADER_CANCELLED
	StatusActionFailed       Status = C.LEADER_ACTION_FAILED
	StatusInvalidArgument    Status = C.LEADER_INVALID_ARGUMENT
	StatusUnavailable        Status = C.LEADER_UNAVAILABLE
	StatusDeadlineExceeded   Status = C.LEADER_DEADLINE_EXCEEDED
	StatusLeaseLost          Status = C.LEADER_LEASE_LOST
	StatusFailedPrecondition Status = C.LEADER_FAILED_PRECONDITION
	StatusStoreRejected      Status = C.LEADER_STORE_REJECTED
	StatusInternal           Status = C.LEADER_INTERNAL
	StatusNoMemory           Status = C.LEADER_NO_MEMORY
	StatusBadState           Status = C.LEADER_BAD_STATE
)

// String is the status's lower-case name, e.g. "deadline_exceeded".
func (s Status) String() string { return C.GoString(C.leader_status_name(C.leader_status(s))) }

// Error is a failed call: its status and the library's message (which never holds a secret).
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string { return "leader: " + e.Status.String() + ": " + e.Message }

// Is makes errors.Is(err, &leader.Error{Status: s}) match on the status alone.
func (e *Error) Is(target error) bool {
	var t *Error
	return errors.As(target, &t) && t.Status == e.Status
}

// ErrUnavailable and the like match a failure by status: errors.Is(err, leader.ErrUnavailable).
var (
	ErrUnavailable        = &Error{Status: StatusUnavailable}
	ErrDeadlineExceeded   = &Error{Status: StatusDeadlineExceeded}
	ErrLeaseLost          = &Error{Status: StatusLeaseLost}
	ErrInvalidArgument    = &Error{Status: StatusInvalidArgument}
	ErrFailedPrecondition = &Error{Status: StatusFailedPrecondition}
)

// lastError is the error of status s on this OS thread (the caller holds runtime.LockOSThread).
func lastError(s C.leader_status) error {
	return &Error{Status: Status(s), Message: C.GoString(C.leader_last_error())}
}

// Version is the library's version, e.g. "0.1.0".
func Version() string { return C.GoString(C.leader_version()) }

// Store is an opened store; Close it when no elector needs it any more.
type Store struct{ p *C.leader_store }

// Open opens the store at uri (sqlite:///path, redis://host:port, postgresql://..., etcd://..., ...).
func Open(uri string) (*Store, error) {
	curi := C.CString(uri)
	defer C.free(unsafe.Pointer(curi))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var p *C.leader_store
	if s := C.leader_store_open(curi, &p); s != C.LEADER_OK {
		return nil, lastError(s)
	}
	return &Store{p: p}, nil
}

// Close drops the store handle (electors made on it keep the store alive).
func (s *Store) Close() {
	if s.p != nil {
		C.leader_store_close(s.p)
		s.p = nil
	}
}

// OnBackendError says what an elector does when the store fails while acquiring.
type OnBackendError int

// The choices of OnBackendError.
const (
	BackendErrorReturn   OnBackendError = C.LEADER_BACKEND_ERROR_RETURN
	BackendErrorSkip     OnBackendError = C.LEADER_BACKEND_ERROR_SKIP
	BackendErrorFailOpen OnBackendError = C.LEADER_BACKEND_ERROR_FAIL_OPEN
)

// Options of an elector; the zero value of a field means the library's default.
type Options struct {
	Wait           time.Duration // how long to wait for the lock (default 5 s); use NoWait to try once
	NoWait         bool          // try once, do not wait
	Lease          time.Duration // lease time (default 60 s)
	MinLease       time.Duration // hold at least this long after acquiring
	SafetyMargin   time.Duration // 0: the library's default margin
	CallTimeout    time.Duration // bound of one store call; 0: derived from the lease
	AutoExtend     bool          // renew while the work runs
	Unfair         bool          // no FIFO among this process's waiters
	Reentrant      bool          // a nested run on the same lock runs in the outer lease
	NodeID         string        // "": host:pid
	OnBackendError OnBackendError
	MaxLeaders     int // 0: one leader; N: a group of N leaders, one slot each
}

// Elector elects on one store; safe for concurrent use. Close it when done.
type Elector struct{ p *C.leader_elector }

// NewElector makes an elector on store with options.
func NewElector(store *Store, o Options) (*Elector, error) {
	var co C.leader_options
	C.leader_options_init(&co)
	ms := func(d time.Duration) C.int64_t { return C.int64_t(d / time.Millisecond) }
	if o.NoWait {
		co.wait_ms = 0
	} else if o.Wait > 0 {
		co.wait_ms = ms(o.Wait)
	}
	if o.Lease > 0 {
		co.lease_ms = ms(o.Lease)
	}
	co.min_lease_ms = ms(o.MinLease)
	co.safety_margin_ms = ms(o.SafetyMargin)
	co.call_timeout_ms = ms(o.CallTimeout)
	co.auto_extend = C.bool(o.AutoExtend)
	co.fair = C.bool(!o.Unfair)
	co.reentrant = C.bool(o.Reentrant)
	co.on_backend_error = C.leader_on_backend_error(o.OnBackendError)
	co.max_leaders = C.int(o.MaxLeaders)
	if o.NodeID != "" {
		co.node_id = C.CString(o.NodeID)
		defer C.free(unsafe.Pointer(co.node_id))
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var p *C.leader_elector
	if s := C.leader_elector_new(store.p, &co, &p); s != C.LEADER_OK {
		return nil, lastError(s)
	}
	return &Elector{p: p}, nil
}

// Close frees the elector (leases and campaigns it started keep what they need).
func (e *Elector) Close() {
	if e.p != nil {
		C.leader_elector_free(e.p)
		e.p = nil
	}
}

// cancelOn returns a cancellation source requested when ctx ends, and the function that stops
// watching ctx and frees the source (call it after the C call returned).
func cancelOn(ctx context.Context) (*C.leader_cancel, func()) {
	c := C.leader_cancel_new()
	if ctx.Done() == nil {
		return c, func() { C.leader_cancel_free(c) }
	}
	finished := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-ctx.Done():
			C.leader_cancel_request(c)
		case <-finished:
		}
	}()
	return c, func() {
		close(finished)
		<-watched
		C.leader_cancel_free(c)
	}
}

// handleSlot stores a cgo.Handle in C memory, so that C holds no Go pointer.
func handleSlot(v any) (unsafe.Pointer, func()) {
	h := cgo.NewHandle(v)
	p := C.malloc(C.size_t(unsafe.Sizeof(uintptr(0))))
	*(*uintptr)(p) = uintptr(h)
	return p, func() { h.Delete(); C.free(p) }
}

func handleOf(p unsafe.Pointer) any { return cgo.Handle(*(*uintptr)(p)).Value() }

// Outcome is what a run did.
type Outcome struct {
	Ran          bool   // the action ran (whatever it returned)
	FencingToken uint64 // the lease's token (0 when it did not run, or ran fail-open)
	Slot         int
}

type run struct {
	fn  func(*Context) error
	err error
}

//export goLeaderAction
func goLeaderAction(ctx *C.leader_context, user unsafe.Pointer) C.int {
	r := handleOf(user).(*run)
	c := newContext(ctx)
	defer c.end()
	func() {
		defer func() {
			if p := recover(); p != nil {
				r.err = fmt.Errorf("leader: the action panicked: %v", p)
			}
		}()
		r.err = r.fn(c)
	}()
	if r.err != nil {
		return 1
	}
	return 0
}

// RunIfLeader acquires lock, runs fn while holding it, and releases it. When another replica
// holds it (after waiting Options.Wait), fn does not run: Ran is false and err is nil. When ctx
// ends first, err is ctx.Err(). fn's error is returned as it is (the lease is released as
// failed). A store failure is an *Error. fn's Context says when to stop (Done, Stopped).
func (e *Elector) RunIfLeader(ctx context.Context, lock string, fn func(*Context) error) (Outcome, error) {
	clock := C.CString(lock)
	defer C.free(unsafe.Pointer(clock))
	r := &run{fn: fn}
	user, free := handleSlot(r)
	defer free()
	cancel, stopWatching := cancelOn(ctx)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var out C.leader_outcome
	s := C.leader_run_if_leader(e.p, clock, C.leader_action(C.goLeaderAction), user, cancel, &out)
	stopWatching()
	o := Outcome{FencingToken: uint64(out.fencing_token), Slot: int(out.slot)}
	switch s {
	case C.LEADER_OK:
		o.Ran = true
		return o, nil
	case C.LEADER_ACTION_FAILED:
		o.Ran = true
		return o, r.err
	case C.LEADER_NOT_ELECTED:
		return o, nil
	case C.LEADER_CANCELLED:
		if ctx.Err() != nil {
			return o, ctx.Err()
		}
		return o, lastError(s)
	default:
		return o, lastError(s)
	}
}
