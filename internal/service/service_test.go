package service_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/service"
)

func TestRunnerStopsTheLoop(t *testing.T) {
	var r service.Runner
	if r.Stop() {
		t.Error("Stop before Start reported a started loop")
	}
	started, ended := make(chan struct{}), make(chan struct{})
	r.Start(context.Background(), func(ctx context.Context) {
		close(started)
		<-ctx.Done()
		close(ended)
	})
	<-started
	if !r.Stop() {
		t.Error("Stop after Start reported no loop")
	}
	select {
	case <-ended:
	default:
		t.Error("Stop returned before the loop did")
	}
	if r.Stop() {
		t.Error("a second Stop reported a loop")
	}
}

func TestSleep(t *testing.T) {
	if !service.Sleep(context.Background(), time.Millisecond) {
		t.Error("a full sleep reported an ended context")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if service.Sleep(ctx, time.Hour) {
		t.Error("a sleep on an ended context reported its full duration")
	}
	if time.Since(start) > time.Second {
		t.Error("a sleep on an ended context waited")
	}
}

func TestEveryUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		service.Every(ctx, 20*time.Millisecond, func(context.Context) {
			if n.Add(1) == 3 {
				cancel()
			}
		})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Every did not return after its context ended")
	}
	if got := n.Load(); got != 3 {
		t.Errorf("fn ran %d times, want 3: Every kept calling after the context ended", got)
	}
}
