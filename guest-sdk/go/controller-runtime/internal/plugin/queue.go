package plugin

import (
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// collector is the queue a handler adds to while the guest handles one change: what it adds
// becomes the requests `handle` returns, each once, for the host to queue. The host's queue owns
// delays and rate limits: a request added after a delay or rate-limited is queued now (a
// reconcile sooner than asked, which a level-based reconciler takes as any other).
type collector struct {
	requests []reconcile.Request
	seen     map[reconcile.Request]bool
}

var _ workqueue.TypedRateLimitingInterface[reconcile.Request] = (*collector)(nil)

// Add collects r.
func (c *collector) Add(r reconcile.Request) {
	if c.seen == nil {
		c.seen = map[reconcile.Request]bool{}
	}
	if !c.seen[r] {
		c.seen[r] = true
		c.requests = append(c.requests, r)
	}
}

// AddAfter collects r: the host queues it now.
func (c *collector) AddAfter(r reconcile.Request, _ time.Duration) { c.Add(r) }

// AddRateLimited collects r: the host's queue rate-limits.
func (c *collector) AddRateLimited(r reconcile.Request) { c.Add(r) }

// Len is how many requests were collected.
func (c *collector) Len() int { return len(c.requests) }

// Get has nothing to give: the host's workers take requests.
func (c *collector) Get() (reconcile.Request, bool) { return reconcile.Request{}, true }

// Done does nothing: the host's workers finish requests.
func (c *collector) Done(reconcile.Request) {}

// Forget does nothing: the host keeps each key's backoff.
func (c *collector) Forget(reconcile.Request) {}

// NumRequeues is 0: the host counts retries.
func (c *collector) NumRequeues(reconcile.Request) int { return 0 }

// ShutDown does nothing: the host owns the queue.
func (c *collector) ShutDown() {}

// ShutDownWithDrain does nothing: the host owns the queue.
func (c *collector) ShutDownWithDrain() {}

// ShuttingDown is false while a change is handled.
func (c *collector) ShuttingDown() bool { return false }
