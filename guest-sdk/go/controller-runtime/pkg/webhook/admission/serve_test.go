package admission

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"wasmop.dev/guest"
)

type labelDefaulter struct{}

func (labelDefaulter) Default(ctx context.Context, cm *corev1.ConfigMap) error {
	req, err := RequestFromContext(ctx)
	if err != nil {
		return err
	}
	if cm.Labels == nil {
		cm.Labels = map[string]string{}
	}
	cm.Labels["defaulted-for"] = req.UserInfo.Username
	return nil
}

type nameValidator struct{}

func (nameValidator) ValidateCreate(_ context.Context, cm *corev1.ConfigMap) (Warnings, error) {
	if cm.Name == "bad" {
		return Warnings{"renamed?"}, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, cm.Name, errors.New("no bad names"))
	}
	return Warnings{"created"}, nil
}

func (nameValidator) ValidateUpdate(_ context.Context, old, cm *corev1.ConfigMap) (Warnings, error) {
	if old.Data["k"] != cm.Data["k"] {
		return nil, errors.New("k is immutable")
	}
	return nil, nil
}

func (nameValidator) ValidateDelete(context.Context, *corev1.ConfigMap) (Warnings, error) {
	return nil, errors.New("never deleted")
}

func newConfigMap() *corev1.ConfigMap { return &corev1.ConfigMap{} }

func configMap(name, value string) guest.Object {
	return guest.Object{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name},
		"data": map[string]any{"k": value}, "unknownToTheType": map[string]any{"kept": true}}
}

func TestTheDefaulterKeepsWhatTheTypeDoesNotKnowUnlessAskedToRemoveIt(t *testing.T) {
	req := guest.AdmissionRequest{Operation: guest.OperationCreate, Object: configMap("a", "v"), User: guest.UserInfo{Username: "alice"}}
	out, err := ServeDefaulter[*corev1.ConfigMap](labelDefaulter{}, newConfigMap)(context.Background(), req)
	if err != nil || out.String("metadata", "labels", "defaulted-for") != "alice" || out.Get("unknownToTheType", "kept") != true {
		t.Fatalf("defaulted %v, %v", out, err)
	}
	req.Object = configMap("a", "v")
	out, err = ServeDefaulter[*corev1.ConfigMap](labelDefaulter{}, newConfigMap, DefaulterRemoveUnknownOrOmitableFields)(context.Background(), req)
	if err != nil || out.Get("unknownToTheType") != nil || out.String("metadata", "labels", "defaulted-for") != "alice" {
		t.Fatalf("with removal %v, %v", out, err)
	}
}

func TestValidatorsGetTheOperationsObjectsAndRefuseWithTheStatusMessage(t *testing.T) {
	validate := ServeValidator[*corev1.ConfigMap](nameValidator{}, newConfigMap)
	ctx := context.Background()
	warnings, err := validate(ctx, guest.AdmissionRequest{Operation: guest.OperationCreate, Object: configMap("good", "v")})
	if err != nil || len(warnings) != 1 || warnings[0] != "created" {
		t.Errorf("create: %v %v", warnings, err)
	}
	warnings, err = validate(ctx, guest.AdmissionRequest{Operation: guest.OperationCreate, Object: configMap("bad", "v")})
	var denial *guest.Denial
	if !errors.As(err, &denial) || denial.Message != `configmaps "bad" is forbidden: no bad names` || warnings[0] != "renamed?" {
		t.Errorf("bad name: %v %v", warnings, err)
	}
	_, err = validate(ctx, guest.AdmissionRequest{Operation: guest.OperationUpdate, Object: configMap("a", "w"), OldObject: configMap("a", "v")})
	if err == nil || err.Error() != "k is immutable" {
		t.Errorf("update: %v", err)
	}
	_, err = validate(ctx, guest.AdmissionRequest{Operation: guest.OperationDelete, OldObject: configMap("a", "v")})
	if err == nil || err.Error() != "never deleted" {
		t.Errorf("delete: %v", err)
	}
	_, err = validate(ctx, guest.AdmissionRequest{Operation: guest.OperationUpdate, Object: configMap("a", "w")})
	if !errors.As(err, &denial) {
		t.Errorf("an update without its old object: %v", err)
	}
}
