package log_test

import (
	"context"
	"slices"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/log"
	"wasmop.dev/guest/guesttest"
)

func TestFromContextLogsToTheHostWithTheContextsLogger(t *testing.T) {
	h := guesttest.New()
	log.FromContext(context.Background()).Info("from the root")
	ctx := log.IntoContext(context.Background(), log.Log.WithName("webapp"))
	log.FromContext(ctx, "app", "web").V(1).Info("from the context")
	if !slices.Contains(h.Logs, "from the root") || len(h.Logs) != 2 {
		t.Fatalf("logged %q", h.Logs)
	}
}
