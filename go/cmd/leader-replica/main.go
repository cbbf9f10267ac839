// leader-replica: one replica of a judged election through the Go package (the judge,
// tests/integration/capi/capi_judge.cpp, starts three):
//
//	leader-replica URI LOCK TERMS HOLD_MS NODE LOG
//
// It leads TERMS terms of LOCK, each holding HOLD_MS (or until its stop fires), and writes one
// line per term to LOG: "<fencing token> <start ns> <end ns> <stopped 0|1>" on CLOCK_MONOTONIC
// (the judge's clock). Exits 0 after TERMS terms, 2 on a store error, 3 when 60 s passed first.
package main

// #include <time.h>
// static long long monotonic_ns(void) {
//   struct timespec t;
//   clock_gettime(CLOCK_MONOTONIC, &t);
//   return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
// }
import "C"

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"leader.dev/leader"
)

func main() {
	if len(os.Args) != 7 {
		fmt.Fprintln(os.Stderr, "usage: leader-replica URI LOCK TERMS HOLD_MS NODE LOG")
		os.Exit(64)
	}
	terms, _ := strconv.Atoi(os.Args[3])
	holdMs, _ := strconv.Atoi(os.Args[4])
	store, err := leader.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer store.Close()
	elector, err := leader.NewElector(store, leader.Options{
		Wait: 3 * time.Second, Lease: 2 * time.Second, AutoExtend: true, NodeID: os.Args[5]})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer elector.Close()
	log, err := os.Create(os.Args[6])
	if err != nil {
		os.Exit(2)
	}
	defer log.Close()
	giveUp := time.Now().Add(60 * time.Second)
	for led := 0; led < terms; {
		if time.Now().After(giveUp) {
			os.Exit(3)
		}
		var start, end int64
		stopped := 0
		out, err := elector.RunIfLeader(context.Background(), os.Args[2], func(ctx *leader.Context) error {
			start = int64(C.monotonic_ns())
			select {
			case <-ctx.Done():
				stopped = 1
			case <-time.After(time.Duration(holdMs) * time.Millisecond):
			}
			end = int64(C.monotonic_ns())
			return nil
		})
		if err != nil {
			fmt.Fprintf(os.Stderr, "leader-replica %s: %v\n", os.Args[5], err)
			os.Exit(2)
		}
		if !out.Ran {
			continue
		}
		fmt.Fprintf(log, "%d %d %d %d\n", out.FencingToken, start, end, stopped)
		led++
		time.Sleep(30 * time.Millisecond) // let the others in
	}
}
