package leader_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"leader.dev/leader"
)

// Run a nightly job on one replica only: the others find the lock held and skip it.
func ExampleElector_RunIfLeader() {
	dir, _ := os.MkdirTemp("", "leader-example")
	defer os.RemoveAll(dir)
	store, err := leader.Open("sqlite://" + filepath.Join(dir, "leader.db"))
	if err != nil {
		panic(err)
	}
	defer store.Close()
	elector, err := leader.NewElector(store, leader.Options{NoWait: true, Lease: time.Minute, AutoExtend: true})
	if err != nil {
		panic(err)
	}
	defer elector.Close()
	out, err := elector.RunIfLeader(context.Background(), "nightly", func(ctx *leader.Context) error {
		// Pass ctx.FencingToken() to what you write; stop when ctx.Done() closes.
		fmt.Println("settling under fencing token", ctx.FencingToken())
		return nil
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("ran:", out.Ran)
	// Output:
	// settling under fencing token 1
	// ran: true
}
