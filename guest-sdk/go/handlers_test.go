package guest

import (
	"fmt"
	"testing"

	"wasmop.dev/guest/internal/wit"
)

func TestHandleIsToldEachChangeWithTheObjectsOnEachSide(t *testing.T) {
	var seen []string
	e := exports{Reconciler{
		Registration: Registration{Handled: []Kind{ConfigMap}},
		Handle: func(kind Kind, c Change) []Request {
			side := func(o Object) string {
				if o == nil {
					return "-"
				}
				return o.Name()
			}
			seen = append(seen, kind.Kind+":"+side(c.Old)+">"+side(c.New))
			return []Request{{Namespace: "shop", Name: "web"}}
		},
	}}
	if kinds := e.HandlersDescribeHandlers(); len(kinds) != 1 || kinds[0].Kind != "ConfigMap" {
		t.Fatalf("declared %v", kinds)
	}
	object := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"shop","name":"%s"}}`
	named := func(name string) string { return fmt.Sprintf(object, name) }
	kind := ConfigMap.WIT()
	for _, change := range []wit.Change{
		{Case: wit.ChangeAdded, Added: named("a")},
		{Case: wit.ChangeUpdated, Updated: wit.Update{Old: named("a"), New: named("b")}},
		{Case: wit.ChangeDeleted, Deleted: named("b")},
	} {
		if keys := e.HandlersHandle(kind, change); len(keys) != 1 || keys[0].Name != "web" {
			t.Fatalf("keys %v", keys)
		}
	}
	if got := e.HandlersHandle(kind, wit.Change{Case: wit.ChangeAdded, Added: "not json"}); len(got) != 0 {
		t.Errorf("an object that does not decode maps to %v", got)
	}
	want := []string{"ConfigMap:->a", "ConfigMap:a>b", "ConfigMap:b>-"}
	if len(seen) != len(want) || seen[0] != want[0] || seen[1] != want[1] || seen[2] != want[2] {
		t.Fatalf("changes %v, want %v", seen, want)
	}
}
