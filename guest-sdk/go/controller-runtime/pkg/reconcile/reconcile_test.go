package reconcile_test

import (
	"errors"
	"fmt"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestTerminalErrorsAreFoundThroughWrapping(t *testing.T) {
	cause := errors.New("bad spec")
	err := fmt.Errorf("reconciling: %w", reconcile.TerminalError(cause))
	if !reconcile.IsTerminal(err) || !errors.Is(err, cause) {
		t.Fatalf("%v", err)
	}
	if reconcile.IsTerminal(cause) {
		t.Fatal("a plain error is terminal")
	}
}
