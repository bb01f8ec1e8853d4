package conversion

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
	"wasmop.dev/guest"
)

// Size is a kind whose v1 (the hub) says meters, v2 centimeters and v3 millimeters.
type Size struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Meters            int `json:"meters"`
}

func (in *Size) DeepCopyObject() runtime.Object { out := *in; return &out }
func (*Size) Hub()                              {}

type SizeV2 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Centimeters       int `json:"centimeters"`
}

func (in *SizeV2) DeepCopyObject() runtime.Object { out := *in; return &out }
func (in *SizeV2) ConvertTo(hub conversion.Hub) error {
	hub.(*Size).ObjectMeta, hub.(*Size).Meters = in.ObjectMeta, in.Centimeters/100
	return nil
}
func (in *SizeV2) ConvertFrom(hub conversion.Hub) error {
	in.ObjectMeta, in.Centimeters = hub.(*Size).ObjectMeta, hub.(*Size).Meters*100
	return nil
}

type SizeV3 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Millimeters       int `json:"millimeters"`
}

func (in *SizeV3) DeepCopyObject() runtime.Object { out := *in; return &out }
func (in *SizeV3) ConvertTo(hub conversion.Hub) error {
	hub.(*Size).ObjectMeta, hub.(*Size).Meters = in.ObjectMeta, in.Millimeters/1000
	return nil
}
func (in *SizeV3) ConvertFrom(hub conversion.Hub) error {
	in.ObjectMeta, in.Millimeters = hub.(*Size).ObjectMeta, hub.(*Size).Meters*1000
	return nil
}

func sizes(withHub bool) *runtime.Scheme {
	s := runtime.NewScheme()
	gv := func(v string) schema.GroupVersionKind {
		return schema.GroupVersionKind{Group: "x.io", Version: v, Kind: "Size"}
	}
	if withHub {
		s.AddKnownTypeWithName(gv("v1"), &Size{})
	}
	s.AddKnownTypeWithName(gv("v2"), &SizeV2{})
	s.AddKnownTypeWithName(gv("v3"), &SizeV3{})
	return s
}

func TestSpokesConvertThroughTheHubEitherWay(t *testing.T) {
	scheme := sizes(true)
	if ok, err := IsConvertible(scheme, &Size{}); !ok || err != nil {
		t.Fatalf("convertible: %v %v", ok, err)
	}
	convert := Convert(scheme)
	v2 := guest.Object{"apiVersion": "x.io/v2", "kind": "Size", "metadata": map[string]any{"name": "a"}, "centimeters": 300.0}
	v3, err := convert(context.Background(), v2, "x.io/v3")
	if err != nil || v3.Int("millimeters") != 3000 || v3.String("apiVersion") != "x.io/v3" || v3.Name() != "a" {
		t.Fatalf("v2 to v3: %v %v", v3, err)
	}
	v1, err := convert(context.Background(), v3, "x.io/v1")
	if err != nil || v1.Int("meters") != 3 || v1.String("kind") != "Size" {
		t.Fatalf("v3 to v1: %v %v", v1, err)
	}
	if _, err := convert(context.Background(), v1, "x.io/v9"); err == nil {
		t.Error("converted to a version the scheme does not know")
	}
	if _, err := convert(context.Background(), v1, "y.io/v2"); err == nil || !strings.Contains(err.Error(), "another group") {
		t.Errorf("converted to another group: %v", err)
	}
}

func TestSpokesWithoutAHubAreAnError(t *testing.T) {
	if _, err := IsConvertible(sizes(false), &SizeV2{}); err == nil || !strings.Contains(err.Error(), "no hub") {
		t.Errorf("got %v", err)
	}
}
