package guest

import (
	"context"
	"log/slog"

	"wasmop.dev/guest/internal/host"
	"wasmop.dev/guest/internal/wit"
)

// LevelTrace is below slog.LevelDebug; the host logs it as trace.
const LevelTrace = slog.LevelDebug - 4

// LogHandler is a slog.Handler that writes each record to the host's log, which tags it with
// the plugin and the request; attributes become key-value fields, groups prefix their keys.
type LogHandler struct {
	level  slog.Leveler
	attrs  []wit.Tuple2[string, string]
	prefix string
}

// NewLogHandler is a handler passing records at level and above.
func NewLogHandler(level slog.Leveler) *LogHandler {
	return &LogHandler{level: level}
}

// Enabled reports whether records at l pass.
func (h *LogHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

// Handle sends r to the host.
func (h *LogHandler) Handle(_ context.Context, r slog.Record) error {
	fields := append([]wit.Tuple2[string, string](nil), h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		fields = appendAttr(fields, h.prefix, a)
		return true
	})
	host.Get().LogLog(witLevel(r.Level), r.Message, fields)
	return nil
}

// WithAttrs is a handler adding attrs to every record.
func (h *LogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append([]wit.Tuple2[string, string](nil), h.attrs...)
	for _, a := range attrs {
		c.attrs = appendAttr(c.attrs, h.prefix, a)
	}
	return &c
}

// WithGroup is a handler prefixing later keys with name.
func (h *LogHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.prefix = h.prefix + name + "."
	return &c
}

func appendAttr(fields []wit.Tuple2[string, string], prefix string, a slog.Attr) []wit.Tuple2[string, string] {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		for _, g := range v.Group() {
			fields = appendAttr(fields, prefix+a.Key+".", g)
		}
		return fields
	}
	return append(fields, wit.Tuple2[string, string]{F0: prefix + a.Key, F1: v.String()})
}

func witLevel(l slog.Level) wit.Level {
	switch {
	case l < slog.LevelDebug:
		return wit.LevelTrace
	case l < slog.LevelInfo:
		return wit.LevelDebug
	case l < slog.LevelWarn:
		return wit.LevelInfo
	case l < slog.LevelError:
		return wit.LevelWarn
	}
	return wit.LevelError
}
