package guest

import (
	"errors"
	"testing"
	"time"

	"wasmop.dev/guest/internal/wit"
)

func TestRegistrationLowersToTheHostsRecord(t *testing.T) {
	reg := Registration{
		Name: "p", Version: "1.0.0", Primary: ConfigMap,
		Owns:             []Kind{Service},
		Watches:          []Watch{{Kind: Secret, Mapping: MapByLabel("owner"), Predicates: []Predicate{LabelsChanged}}},
		Permissions:      []Permission{{Kind: Service, Verbs: Writes}},
		Indexes:          []Index{{Name: "node", Kind: Pod, Field: "spec.nodeName"}},
		ReconcileTimeout: 1500 * time.Millisecond,
	}.wit()
	if reg.MaxConcurrentReconciles != 1 || *reg.ReconcileTimeout != 1500 {
		t.Fatalf("limits %d %v", reg.MaxConcurrentReconciles, *reg.ReconcileTimeout)
	}
	if reg.Watches[0].Mapping.Case != wit.MappingLabel || reg.Watches[0].Mapping.Label != "owner" || reg.Watches[0].Predicates[0] != wit.PredicateLabelsChanged {
		t.Fatalf("watch %+v", reg.Watches[0])
	}
	if got := reg.Permissions[0].Verbs; len(got) != 4 || got[0] != wit.VerbCreate || got[3] != wit.VerbDelete {
		t.Fatalf("verbs %v", got)
	}
	if reg.Primary.Kind != "ConfigMap" || reg.Owns[0].Kind != "Service" || reg.Indexes[0].Field != "spec.nodeName" {
		t.Fatalf("kinds %+v", reg)
	}
}

func TestOutcomesMapToTheHostsVariants(t *testing.T) {
	if r := outcome(Result{}, nil); r.IsErr || r.Ok.Case != wit.OutcomeDone {
		t.Errorf("done: %+v", r)
	}
	if r := outcome(Result{RequeueAfter: 2 * time.Second}, nil); r.Ok.Case != wit.OutcomeRequeueAfter || r.Ok.RequeueAfter.After != 2000 {
		t.Errorf("requeue: %+v", r)
	}
	if r := outcome(Result{}, errors.New("boom")); !r.IsErr || r.Err.Case != wit.ReconcileErrorRetryable {
		t.Errorf("retryable: %+v", r)
	}
	if r := outcome(Result{}, Terminal(errors.New("bad spec"))); !r.IsErr || r.Err.Case != wit.ReconcileErrorTerminal || r.Err.Terminal != "bad spec" {
		t.Errorf("terminal: %+v", r)
	}
}

func TestConditionsKeepTheirTransitionTimeWhileStatusHolds(t *testing.T) {
	old := Condition{Type: "Ready", Status: "False", LastTransitionTime: "2020-01-01T00:00:00Z"}
	held := SetCondition([]Condition{old}, NewCondition("Ready", false, "Progressing", "1/2"))
	if held[0].LastTransitionTime != old.LastTransitionTime || held[0].Message != "1/2" {
		t.Fatalf("held: %+v", held[0])
	}
	flipped := SetCondition([]Condition{old}, NewCondition("Ready", true, "Available", "2/2"))
	if flipped[0].LastTransitionTime == old.LastTransitionTime {
		t.Fatal("a transition kept the old time")
	}
}
