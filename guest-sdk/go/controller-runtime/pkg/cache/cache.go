// Package cache is controller-runtime's cache interface for wasmop guests. The host owns the
// informers: mgr.GetCache() reads the host's informer cache (as mgr.GetClient() does) and
// declares field indexes, and is what source.Kind takes; asking it for an informer is an error,
// for a plugin watches through its controller's sources (Watches, WatchesRawSource).
package cache

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrInformers is what asking a guest's cache for an informer returns.
var ErrInformers = errors.New("informers are the wasmop host's: a plugin watches through its controller's sources (Watches, WatchesRawSource with source.Kind)")

// Cache reads cached objects and declares field indexes.
type Cache interface {
	client.Reader
	Informers
}

// Informers is the informer side of a cache.
type Informers interface {
	// GetInformer returns ErrInformers.
	GetInformer(ctx context.Context, obj client.Object, opts ...InformerGetOption) (Informer, error)
	// GetInformerForKind returns ErrInformers.
	GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...InformerGetOption) (Informer, error)
	// RemoveInformer returns ErrInformers.
	RemoveInformer(ctx context.Context, obj client.Object) error
	// Start returns ErrInformers: the host starts its informers.
	Start(ctx context.Context) error
	// WaitForCacheSync is true: the host reconciles only once its informers synced.
	WaitForCacheSync(ctx context.Context) bool
	client.FieldIndexer
}

// Informer is an informer as controller-runtime exposes it; a guest gets none.
type Informer interface {
	AddEventHandler(handler toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error)
	AddEventHandlerWithResyncPeriod(handler toolscache.ResourceEventHandler, resyncPeriod time.Duration) (toolscache.ResourceEventHandlerRegistration, error)
	AddEventHandlerWithOptions(handler toolscache.ResourceEventHandler, options toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error)
	RemoveEventHandler(handle toolscache.ResourceEventHandlerRegistration) error
	AddIndexers(indexers toolscache.Indexers) error
	HasSynced() bool
	IsStopped() bool
}

// InformerGetOptions are options of GetInformer.
type InformerGetOptions struct {
	// BlockUntilSynced waits for the informer to sync.
	BlockUntilSynced *bool
}

// InformerGetOption modifies GetInformer.
type InformerGetOption func(*InformerGetOptions)

// BlockUntilSynced sets whether GetInformer waits for the informer to sync.
func BlockUntilSynced(shouldBlock bool) InformerGetOption {
	return func(o *InformerGetOptions) { o.BlockUntilSynced = &shouldBlock }
}

// Host is the guest's cache over a client of the host's informer cache.
type Host struct {
	client.Reader
	client.FieldIndexer
}

// GetInformer returns ErrInformers.
func (Host) GetInformer(context.Context, client.Object, ...InformerGetOption) (Informer, error) {
	return nil, ErrInformers
}

// GetInformerForKind returns ErrInformers.
func (Host) GetInformerForKind(context.Context, schema.GroupVersionKind, ...InformerGetOption) (Informer, error) {
	return nil, ErrInformers
}

// RemoveInformer returns ErrInformers.
func (Host) RemoveInformer(context.Context, client.Object) error { return ErrInformers }

// Start returns ErrInformers.
func (Host) Start(context.Context) error { return ErrInformers }

// WaitForCacheSync is true.
func (Host) WaitForCacheSync(context.Context) bool { return true }
