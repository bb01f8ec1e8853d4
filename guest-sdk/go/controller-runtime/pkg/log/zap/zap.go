// Package zap is controller-runtime's zap logger constructor, kept so programs that set their
// logger with it compile: in a wasmop guest every record goes to the host's log, which owns
// format, level and destination, so New returns the root logger whatever the options.
package zap

import (
	"io"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Options are zap's options; the host's log settings take their place.
type Options struct {
	// Development selects zap's development defaults.
	Development bool
	// DestWriter is where zap would write.
	DestWriter io.Writer
}

// Opts modifies Options.
type Opts func(*Options)

// UseDevMode selects development defaults.
func UseDevMode(enabled bool) Opts { return func(o *Options) { o.Development = enabled } }

// WriteTo sets the destination.
func WriteTo(out io.Writer) Opts { return func(o *Options) { o.DestWriter = out } }

// UseFlagOptions copies options parsed from flags.
func UseFlagOptions(in *Options) Opts { return func(o *Options) { *o = *in } }

// New is the root logger, which writes to the host's log.
func New(...Opts) logr.Logger { return log.Log }
