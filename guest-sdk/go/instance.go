package guest

import (
	"wasmop.dev/guest/abi"
	"wasmop.dev/guest/internal/wit"
)

// instance is the component's exports before its reconciler is made. `wasmop build` runs a Go
// plugin's init functions once, at build time, and every instance starts from that snapshot;
// so the first call into an instance takes the instance's own arguments and environment
// (os.Args, os.Getenv: the plugin entry's, not the build's) and only then makes the reconciler,
// which serves every later call.
type instance struct {
	make func() Reconciler
	made *exports
}

// exports is the reconciler's exports, made on the instance's first call.
func (i *instance) exports() exports {
	if i.made == nil {
		adoptInstanceEnvironment()
		r := i.make()
		if err := r.Webhooks.check(); err != nil {
			panic(err)
		}
		i.made = &exports{r}
	}
	return *i.made
}

// Describe is the registration, from the instance's reconciler.
func (i *instance) Describe() wit.Registration {
	defer abi.GuestTurn()()
	return i.exports().Describe()
}

// Reconcile reconciles with the instance's reconciler.
func (i *instance) Reconcile(req wit.Request) wit.Result[wit.Outcome, wit.ReconcileError] {
	defer abi.GuestTurn()()
	return i.exports().Reconcile(req)
}

// Map maps with the instance's reconciler.
func (i *instance) Map(kind wit.Gvk, obj wit.Object) []wit.ObjectKey {
	defer abi.GuestTurn()()
	return i.exports().Map(kind, obj)
}

// HandlersDescribeHandlers declares the kinds the instance's reconciler handles.
func (i *instance) HandlersDescribeHandlers() []wit.Gvk {
	defer abi.GuestTurn()()
	return i.exports().HandlersDescribeHandlers()
}

// HandlersHandle maps a change with the instance's reconciler.
func (i *instance) HandlersHandle(kind wit.Gvk, change wit.Change) []wit.ObjectKey {
	defer abi.GuestTurn()()
	return i.exports().HandlersHandle(kind, change)
}

// WebhooksDescribeWebhooks declares the instance's reconciler's webhooks.
func (i *instance) WebhooksDescribeWebhooks() wit.WebhooksRegistration {
	defer abi.GuestTurn()()
	return i.exports().WebhooksDescribeWebhooks()
}

// WebhooksValidate validates with the instance's reconciler.
func (i *instance) WebhooksValidate(req wit.AdmissionRequest) wit.Verdict {
	defer abi.GuestTurn()()
	return i.exports().WebhooksValidate(req)
}

// WebhooksDefault defaults with the instance's reconciler.
func (i *instance) WebhooksDefault(req wit.AdmissionRequest) wit.Result[wit.Object, wit.Denial] {
	defer abi.GuestTurn()()
	return i.exports().WebhooksDefault(req)
}

// WebhooksConvert converts with the instance's reconciler.
func (i *instance) WebhooksConvert(obj wit.Object, apiVersion string) wit.Result[wit.Object, string] {
	defer abi.GuestTurn()()
	return i.exports().WebhooksConvert(obj, apiVersion)
}
