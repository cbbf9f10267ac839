package leader

/*
#include <stdlib.h>
#include <leader/leader.h>

extern void goCampaignStarted(leader_context *ctx, void *user);
extern void goCampaignStopped(void *user);
extern void goCampaignNewLeader(leader_holder *holders, size_t count, void *user);
extern void goCampaignError(leader_status status, char *message, void *user);

static void campaign_started(leader_context *ctx, void *user) { goCampaignStarted(ctx, user); }
static void campaign_stopped(void *user) { goCampaignStopped(user); }
static void campaign_new_leader(const leader_holder *holders, size_t count, void *user) {
  goCampaignNewLeader((leader_holder *)holders, count, user);
}
static void campaign_error(leader_status status, const char *message, void *user) {
  goCampaignError(status, (char *)message, user);
}

static leader_campaign_callbacks campaign_callbacks(void *user, int started, int stopped,
                                                    int new_leader, int error) {
  leader_campaign_callbacks c = {sizeof c, NULL, NULL, NULL, NULL, user};
  if (started) c.on_started_leading = campaign_started;
  if (stopped) c.on_stopped_leading = campaign_stopped;
  if (new_leader) c.on_new_leader = campaign_new_leader;
  if (error) c.on_error = campaign_error;
  return c;
}
*/
import "C"

import (
	"runtime"
	"time"
	"unsafe"
)

// Holder is one holder of a lock, as an observer of the store saw it.
type Holder struct {
	NodeID       string
	FencingToken uint64
	Slot         int
	ExpiresIn    time.Duration
}

// CampaignCallbacks are what a campaign calls, each on the campaign's threads; any may be nil.
type CampaignCallbacks struct {
	// OnStartedLeading runs the term's work: block until ctx.Done() (or return at once and lead
	// until stopped, resigned or lost, see CampaignOptions.ResignOnReturn).
	OnStartedLeading func(ctx *Context)
	// OnStoppedLeading: the term ended, after the lease was released.
	OnStoppedLeading func()
	// OnNewLeader: the lock's holders changed (empty: nobody holds it).
	OnNewLeader func(holders []Holder)
	// OnError: a retryable store failure; the campaign tries again after Retry.
	OnError func(err error)
}

// CampaignOptions; the zero value of a field means the library's default.
type CampaignOptions struct {
	Retry          time.Duration // pause after contention or a store failure (default 1 s)
	KeepOnStop     bool          // on Stop, leave the lease to expire instead of releasing it
	ResignOnReturn bool          // end the term when OnStartedLeading returns
	ResignHoldOff  time.Duration // after a resign, wait this long for another replica (0: lease)
}

// Campaign is continuous leadership of one lock: start it, Stop it.
type Campaign struct {
	p    *C.leader_campaign
	free func()
}

// StartCampaign starts campaigning for lock on a thread of the campaign's own. The elector needs
// Options.AutoExtend.
func (e *Elector) StartCampaign(lock string, cb CampaignCallbacks, o CampaignOptions) (*Campaign, error) {
	clock := C.CString(lock)
	defer C.free(unsafe.Pointer(clock))
	user, free := handleSlot(&cb)
	flag := func(b bool) C.int {
		if b {
			return 1
		}
		return 0
	}
	callbacks := C.campaign_callbacks(user, flag(cb.OnStartedLeading != nil),
		flag(cb.OnStoppedLeading != nil), flag(cb.OnNewLeader != nil), flag(cb.OnError != nil))
	var co C.leader_campaign_options
	C.leader_campaign_options_init(&co)
	if o.Retry > 0 {
		co.retry_ms = C.int64_t(o.Retry / time.Millisecond)
	}
	co.release_on_stop = C.bool(!o.KeepOnStop)
	co.resign_on_return = C.bool(o.ResignOnReturn)
	co.resign_hold_off_ms = C.int64_t(o.ResignHoldOff / time.Millisecond)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var p *C.leader_campaign
	if s := C.leader_campaign_start(e.p, clock, &callbacks, &co, &p); s != C.LEADER_OK {
		free()
		return nil, lastError(s)
	}
	return &Campaign{p: p, free: free}, nil
}

// Resign ends the current term and campaigns again after the hold-off; false when not leading.
func (c *Campaign) Resign() bool { return bool(C.leader_campaign_resign(c.p)) }

// IsLeader is true while this replica leads.
func (c *Campaign) IsLeader() bool { return bool(C.leader_campaign_is_leader(c.p)) }

// Stop stops the campaign and waits for it; the error is what ended it, if anything did.
func (c *Campaign) Stop() error {
	if c.p == nil {
		return nil
	}
	runtime.LockOSThread()
	s := C.leader_campaign_stop(c.p)
	var err error
	if s != C.LEADER_OK {
		err = lastError(s)
	}
	runtime.UnlockOSThread()
	c.p = nil
	c.free()
	return err
}

//export goCampaignStarted
func goCampaignStarted(ctx *C.leader_context, user unsafe.Pointer) {
	cb := handleOf(user).(*CampaignCallbacks)
	x := newContext(ctx)
	defer x.end()
	cb.OnStartedLeading(x)
}

//export goCampaignStopped
func goCampaignStopped(user unsafe.Pointer) { handleOf(user).(*CampaignCallbacks).OnStoppedLeading() }

//export goCampaignNewLeader
func goCampaignNewLeader(holders *C.leader_holder, count C.size_t, user unsafe.Pointer) {
	in := unsafe.Slice(holders, int(count))
	out := make([]Holder, 0, len(in))
	for _, h := range in {
		out = append(out, Holder{NodeID: C.GoString(h.node_id), FencingToken: uint64(h.fencing_token),
			Slot: int(h.slot), ExpiresIn: time.Duration(h.expires_in_ms) * time.Millisecond})
	}
	handleOf(user).(*CampaignCallbacks).OnNewLeader(out)
}

//export goCampaignError
func goCampaignError(status C.leader_status, message *C.char, user unsafe.Pointer) {
	handleOf(user).(*CampaignCallbacks).OnError(&Error{Status: Status(status), Message: C.GoString(message)})
}
