package controllerutil

import (
	"encoding/json"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// withoutStatus is a merge patch with its status part removed.
type withoutStatus struct{ client.Patch }

func (p withoutStatus) Data(obj client.Object) ([]byte, error) {
	return reshape(p.Patch, obj, func(body map[string]any) map[string]any {
		delete(body, "status")
		return body
	})
}

// onlyStatus is a merge patch of the status part alone.
type onlyStatus struct{ client.Patch }

func (p onlyStatus) Data(obj client.Object) ([]byte, error) {
	return reshape(p.Patch, obj, func(body map[string]any) map[string]any {
		return map[string]any{"status": body["status"]}
	})
}

func reshape(p client.Patch, obj client.Object, keep func(map[string]any) map[string]any) ([]byte, error) {
	data, err := p.Data(obj)
	if err != nil {
		return nil, err
	}
	var body map[string]any
	if err := json.Unmarshal(data, &body); err != nil {
		return nil, err
	}
	return json.Marshal(keep(body))
}
