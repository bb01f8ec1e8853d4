package webapp

import (
	"context"
	"strings"
	"testing"
)

func TestTheValidatorRefusesWhatThePluginRefuses(t *testing.T) {
	v := WebAppValidator{}
	ok := &WebApp{Spec: WebAppSpec{Image: "registry.example.com:5000/team/app:v1", Replicas: 50}}
	if _, err := v.ValidateCreate(context.Background(), ok); err != nil {
		t.Fatalf("refused a valid WebApp: %v", err)
	}
	crowded := &WebApp{Spec: WebAppSpec{Image: "nginx", Replicas: 51}}
	if _, err := v.ValidateCreate(context.Background(), crowded); err == nil || !strings.Contains(err.Error(), "between 0 and 50") {
		t.Fatalf("51 replicas: %v", err)
	}
	for _, bad := range []string{"", "Nginx", "nginx:", "a//b", "Library/nginx"} {
		if wellFormedImage(bad) {
			t.Errorf("%q passed as an image", bad)
		}
	}
}
