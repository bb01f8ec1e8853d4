// Command pair sets up two controllers on one manager, as an operator's main does: `first` and
// `second`, each on ConfigMaps, each marking the ConfigMaps it reconciles with its own annotation
// (`pair.wasmop.dev/<name>: <mark>`, the mark its setup read from its `--mark` flag, `seen` by
// default). The module runs as two plugins, each loaded with WASMOP_CONTROLLER naming its
// controller; loaded with none, it fails naming both.
package main

import (
	"context"
	"flag"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/wasmop"
)

// marker annotates each ConfigMap it reconciles with its own name.
type marker struct {
	client client.Client
	name   string
	mark   string
}

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;update;patch

func (m *marker) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cm corev1.ConfigMap
	if err := m.client.Get(ctx, req.NamespacedName, &cm); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	key := "pair.wasmop.dev/" + m.name
	if cm.Annotations[key] == m.mark {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFrom(cm.DeepCopy())
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[key] = m.mark
	return ctrl.Result{}, m.client.Patch(ctx, &cm, patch)
}

func init() {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	wasmop.Register(wasmop.Plugin{
		Name: "pair", Version: "0.1.0", Scheme: scheme,
		Setup: func(mgr ctrl.Manager) error {
			flags := flag.NewFlagSet("pair", flag.ContinueOnError)
			mark := flags.String("mark", "seen", "the value of the controllers' annotations")
			if err := flags.Parse(os.Args[1:]); err != nil {
				return err
			}
			for _, name := range []string{"first", "second"} {
				err := ctrl.NewControllerManagedBy(mgr).Named(name).For(&corev1.ConfigMap{}).
					Complete(&marker{client: mgr.GetClient(), name: name, mark: *mark})
				if err != nil {
					return err
				}
			}
			return nil
		},
	})
}

func main() {}
