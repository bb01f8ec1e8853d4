//go:build wasip1

package host

import (
	"wasmop.dev/guest/abi"
	"wasmop.dev/guest/internal/wit"
)

func init() {
	imports = hostTurns{}
}

// hostTurns calls the real host, each call a host turn (abi.HostTurn): the host may allocate in
// Go's heap through cabi_realloc before it returns.
type hostTurns struct {
	host wit.Host
}

func (h hostTurns) CacheGet(kind wit.Gvk, namespace string, name string) wit.Result[wit.Object, wit.Error] {
	defer abi.HostTurn()()
	return h.host.CacheGet(kind, namespace, name)
}

func (h hostTurns) CacheList(kind wit.Gvk, options wit.ListOptions) wit.Result[[]wit.Object, wit.Error] {
	defer abi.HostTurn()()
	return h.host.CacheList(kind, options)
}

func (h hostTurns) CacheListByIndex(kind wit.Gvk, index string, value string) wit.Result[[]wit.Object, wit.Error] {
	defer abi.HostTurn()()
	return h.host.CacheListByIndex(kind, index, value)
}

func (h hostTurns) TransportSend(request wit.HttpRequest) wit.Result[wit.HttpResponse, wit.Error] {
	defer abi.HostTurn()()
	return h.host.TransportSend(request)
}

func (h hostTurns) ClientCreate(obj wit.Object) wit.Result[wit.Object, wit.Error] {
	defer abi.HostTurn()()
	return h.host.ClientCreate(obj)
}

func (h hostTurns) ClientUpdate(obj wit.Object) wit.Result[wit.Object, wit.Error] {
	defer abi.HostTurn()()
	return h.host.ClientUpdate(obj)
}

func (h hostTurns) ClientPatch(kind wit.Gvk, namespace string, name string, body wit.PatchBody) wit.Result[wit.Object, wit.Error] {
	defer abi.HostTurn()()
	return h.host.ClientPatch(kind, namespace, name, body)
}

func (h hostTurns) ClientDelete(kind wit.Gvk, namespace string, name string, options wit.DeleteOptions) wit.Result[wit.Unit, wit.Error] {
	defer abi.HostTurn()()
	return h.host.ClientDelete(kind, namespace, name, options)
}

func (h hostTurns) ClientUpdateStatus(obj wit.Object) wit.Result[wit.Object, wit.Error] {
	defer abi.HostTurn()()
	return h.host.ClientUpdateStatus(obj)
}

func (h hostTurns) ClientPatchStatus(kind wit.Gvk, namespace string, name string, body wit.PatchBody) wit.Result[wit.Object, wit.Error] {
	defer abi.HostTurn()()
	return h.host.ClientPatchStatus(kind, namespace, name, body)
}

func (h hostTurns) EventsRecord(about wit.Regarding, type_ wit.EventType, reason string, message string) {
	defer abi.HostTurn()()
	h.host.EventsRecord(about, type_, reason, message)
}

func (h hostTurns) LogLog(level wit.Level, message string, fields []wit.Tuple2[string, string]) {
	defer abi.HostTurn()()
	h.host.LogLog(level, message, fields)
}
