package guest_test

import (
	"log/slog"
	"testing"

	"wasmop.dev/guest"
	"wasmop.dev/guest/guesttest"
)

func TestSlogRecordsReachTheHostLog(t *testing.T) {
	h := guesttest.New()
	logger := slog.New(guest.NewLogHandler(slog.LevelInfo)).WithGroup("req").With("key", "ns/a")
	logger.Debug("hidden")
	logger.Info("reconciled", "writes", 0)
	if len(h.Logs) != 1 || h.Logs[0] != "reconciled" {
		t.Fatalf("logs %v", h.Logs)
	}
}
